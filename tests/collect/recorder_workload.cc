// A traced program for the recorder's guarantee tests (recorder_guarantees_test.cc):
// each mode stresses one guarantee of docs/collector.md (fork + _exit, exec, abort,
// SIGKILL, many threads, exhaustion, signal storms, deep nesting, a program that closes
// or limits its descriptors). It uses plain NVTX and links nothing of Teller.
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

long Arg(int argc, char** argv, int i, long fallback) {
  return argc > i ? std::atol(argv[i]) : fallback;
}

void Ranges(const char* name, long n) {
  for (long i = 0; i < n; ++i) {
    nvtxRangePushA(name);
    nvtxRangePop();
  }
}

// fork-exit N: a forked child records N ranges on two threads and ends with _exit(0)
// (as Python's multiprocessing workers do); the parent records N too.
int ForkExit(long n) {
  Ranges("parent/before-fork", n);
  const pid_t pid = fork();
  if (pid == 0) {
    std::thread t([n] { Ranges("child/thread", n); });
    Ranges("child/main", n);
    t.join();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Ranges("parent/after-fork", n);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// exec-after N PROGRAM: records N ranges, then replaces itself (no exit handlers run).
int ExecAfter(long n, const char* program) {
  Ranges("before-exec", n);
  execl(program, program, static_cast<char*>(nullptr));
  return 99;
}

// abort-after N: records N ranges inside an open one, then aborts.
int AbortAfter(long n) {
  nvtxRangePushA("outer");
  Ranges("before-abort", n);
  std::abort();
}

// count COUNTER_FILE THREADS: threads record ranges forever; after each pop returns, the
// thread adds one to its slot of COUNTER_FILE (mapped shared), so whoever kills this
// process knows how many ranges were complete by then.
int Count(const char* counter_file, long threads) {
  const int fd = open(counter_file, O_RDWR);
  if (fd < 0) return 2;
  auto* counters = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  if (counters == MAP_FAILED) return 2;
  std::vector<std::thread> pool;
  for (long t = 0; t < threads; ++t) {
    pool.emplace_back([t, counters] {
      char name[32];
      for (uint64_t i = 0;; ++i) {
        std::snprintf(name, sizeof(name), "n%lu", static_cast<unsigned long>(i % 7));
        nvtxRangePushA("count/outer");
        nvtxRangePushA(name);
        nvtxRangePop();
        nvtxRangePop();
        counters[t].store(i + 1, std::memory_order_release);
      }
    });
  }
  for (auto& t : pool) t.join();
  return 0;
}

// threads N R: N threads alive at once, R ranges each.
int Threads(long n, long ranges) {
  std::vector<pthread_t> pool(static_cast<size_t>(n));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, nullptr, static_cast<unsigned>(n));
  struct Arg {
    pthread_barrier_t* barrier;
    long ranges;
  } arg{&barrier, ranges};
  long started = 0;
  for (auto& t : pool) {
    if (pthread_create(
            &t, &attr,
            [](void* p) -> void* {
              auto* a = static_cast<Arg*>(p);
              pthread_barrier_wait(a->barrier);  // all alive before any records
              Ranges("thread/range", a->ranges);
              return nullptr;
            },
            &arg) != 0) {
      std::fprintf(stderr, "pthread_create failed after %ld threads\n", started);
      return 3;
    }
    ++started;
  }
  for (auto& t : pool) pthread_join(t, nullptr);
  std::printf("threads done %ld\n", started);
  return 0;
}

// exhaust N: under a tiny TELLER_BUFFER_MB, a burst of N nested ranges runs out of room;
// a helper thread then exits (leaving its block free) and the main thread records more,
// resuming after a gap. Names say where each range belongs: "b<i>" holds "b<i>/c<j>".
int Exhaust(long n) {
  std::thread helper;
  std::atomic<bool> release{false};
  helper = std::thread([&release] {
    nvtxRangePushA("helper");
    nvtxRangePop();
    while (!release.load()) usleep(100);
  });
  char name[48];
  for (long i = 0; i < n; ++i) {
    std::snprintf(name, sizeof(name), "b%ld", i);
    nvtxRangePushA(name);
    for (int j = 0; j < 2; ++j) {
      std::snprintf(name, sizeof(name), "b%ld/c%d", i, j);
      nvtxRangePushA(name);
      nvtxRangePop();
    }
    nvtxRangePop();
  }
  release.store(true);
  helper.join();
  for (long i = 0; i < 10; ++i) {
    std::snprintf(name, sizeof(name), "after%ld", i);
    nvtxRangePushA(name);
    std::snprintf(name, sizeof(name), "after%ld/c0", i);
    nvtxRangePushA(name);
    nvtxRangePop();
    nvtxRangePop();
  }
  return 0;
}

// sigalrm US MS [WORK_US]: a SIGALRM every US microseconds whose handler records a range
// with a nested one, while the main loop records three-deep ranges for MS milliseconds,
// with WORK_US of the program's own work (a busy wait on the clock) in the innermost one;
// it prints how many loops it made (its speed) and how many handler calls it took.
volatile sig_atomic_t g_handler_calls = 0;

void OnAlarm(int) {
  nvtxRangePushA("handler");
  nvtxRangePushA("handler/inner");
  nvtxRangePop();
  nvtxRangePop();
  g_handler_calls = g_handler_calls + 1;
}

// Busy for `us` microseconds of wall time (0: nothing).
void BusyFor(long us) {
  if (us <= 0) return;
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

int SigAlrm(long us, long ms, long work_us) {
  // NVTX loads its injection library on the first call, spinning while that is in progress:
  // a handler's first call made while the interrupted thread is inside that load would
  // spin forever. A program that calls NVTX from a signal handler initializes it first.
  nvtxInitialize(nullptr);
  struct sigaction sa {};
  sa.sa_handler = OnAlarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, nullptr);
  itimerval timer{};
  timer.it_interval.tv_usec = us;
  timer.it_value.tv_usec = us;
  setitimer(ITIMER_REAL, &timer, nullptr);
  timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  long loops = 0;
  do {
    for (int k = 0; k < 100; ++k) {
      nvtxRangePushA("main/a");
      nvtxRangePushA("main/b");
      nvtxRangePushA("main/c");
      BusyFor(work_us);
      nvtxRangePop();
      nvtxRangePop();
      nvtxRangePop();
    }
    loops += 100;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
  timer = {};
  setitimer(ITIMER_REAL, &timer, nullptr);
  std::printf("loops %ld handler_calls %ld\n", loops, static_cast<long>(g_handler_calls));
  return 0;
}

// names N LOOPS: LOOPS rounds over N layer ranges named as a framework names them
// ("model.layers.0" ...), each around three op ranges ("main/a", "main/b", "main/c"):
// names that differ only in their last bytes, used in turn.
int Names(long n, long loops) {
  std::vector<std::string> layers;
  for (long i = 0; i < n; ++i) layers.push_back("model.layers." + std::to_string(i));
  for (long k = 0; k < loops; ++k) {
    for (const std::string& layer : layers) {
      nvtxRangePushA(layer.c_str());
      for (const char* op : {"main/a", "main/b", "main/c"}) {
        nvtxRangePushA(op);
        nvtxRangePop();
      }
      nvtxRangePop();
    }
  }
  return 0;
}

// deep N: N nested ranges, then all popped.
int Deep(long n) {
  for (long i = 0; i < n; ++i) nvtxRangePushA("deep");
  for (long i = 0; i < n; ++i) nvtxRangePop();
  return 0;
}

// close-fds PATH N: records a range, closes every descriptor above 2, opens PATH (it
// gets descriptor 3), writes 35 bytes into it, records N ranges, and checks its file.
int CloseFds(const char* path, long n) {
  Ranges("before-close", 1);
  for (int fd = 3; fd < 65536; ++fd) close(fd);
  const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  const char kText[] = "the program's own 35 bytes of data\n";
  if (fd != 3 || write(fd, kText, 35) != 35) return 4;
  Ranges("after-close", n);
  char buf[4096];
  const ssize_t got = pread(fd, buf, sizeof(buf), 0);
  close(fd);
  if (got != 35 || std::memcmp(buf, kText, 35) != 0) {
    std::fprintf(stderr, "the program's file changed: %zd bytes\n", got);
    return 5;
  }
  std::printf("own file intact\n");
  return 0;
}

// fd-limit N: RLIMIT_NOFILE of 16, every descriptor but one held open, N ranges (enough
// that the trace file must grow).
int FdLimit(long n) {
  rlimit limit{16, 16};
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return 6;
  Ranges("limited", 1);
  std::vector<int> held;
  for (int fd; (fd = open("/dev/null", O_RDONLY)) >= 0;) held.push_back(fd);
  if (held.empty()) return 7;
  close(held.back());
  held.pop_back();
  Ranges("limited", n - 1);
  for (int fd : held) close(fd);
  std::printf("fd-limit done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  if (mode == "fork-exit") return ForkExit(Arg(argc, argv, 2, 100));
  if (mode == "exec-after")
    return ExecAfter(Arg(argc, argv, 2, 100), argc > 3 ? argv[3] : "/bin/true");
  if (mode == "abort-after") return AbortAfter(Arg(argc, argv, 2, 100));
  if (mode == "count" && argc > 2) return Count(argv[2], Arg(argc, argv, 3, 2));
  if (mode == "threads") return Threads(Arg(argc, argv, 2, 1000), Arg(argc, argv, 3, 10));
  if (mode == "exhaust") return Exhaust(Arg(argc, argv, 2, 20000));
  if (mode == "sigalrm") {
    return SigAlrm(Arg(argc, argv, 2, 10), Arg(argc, argv, 3, 300), Arg(argc, argv, 4, 0));
  }
  if (mode == "deep") return Deep(Arg(argc, argv, 2, 10000));
  if (mode == "names") return Names(Arg(argc, argv, 2, 64), Arg(argc, argv, 3, 100));
  if (mode == "close-fds" && argc > 2) return CloseFds(argv[2], Arg(argc, argv, 3, 3000));
  if (mode == "fd-limit") return FdLimit(Arg(argc, argv, 2, 20000));
  if (mode == "untraced-sleep") return 0;
  return 2;
}
