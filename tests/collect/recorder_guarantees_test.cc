// The recorder's guarantees (docs/collector.md), each against a real traced program
// (recorder_workload) with the real injection library, read back with the raw reader:
// nothing recorded is lost on _exit, exec, abort or SIGKILL; trees stay whole when room
// runs out; signal handlers never corrupt; thousands of threads are cheap; the program's
// descriptors stay its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "teller/format/raw_reader.h"
#include "tests/command_test_util.h"

namespace teller {
namespace {

using raw::EventKind;
using raw::EventRecord;
using raw::RawProcessTrace;

struct Launched {
  int status = 0;
  long max_rss_kb = 0;
  double wall_s = 0;
  std::string out;
};

class RecorderTest : public testing::CommandTest {
 protected:
  RecorderTest() : CommandTest("teller-recorder-") {}

  // Runs the workload with the injection (unless `traced` is false), directly: the test
  // needs the pid to kill it and the child's own resource usage.
  Launched Launch(const std::vector<std::string>& args, const std::string& dir,
                  const std::vector<std::string>& env = {}, int kill_after_us = -1,
                  bool traced = true) {
    mkdir(dir.c_str(), 0755);
    const std::string out_path = tmp_ + "/workload.out";
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    if (traced) {
      env_strings.push_back("TELLER_TRACE_DIR=" + dir);
      env_strings.push_back(std::string("NVTX_INJECTION64_PATH=") + INJECT_LIB);
    }
    for (const auto& e : env) env_strings.push_back(e);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings = {WORKLOAD_EXE};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      close(fd);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (kill_after_us >= 0) {
      usleep(static_cast<useconds_t>(kill_after_us));
      kill(pid, SIGKILL);
    }
    Launched r;
    rusage usage{};
    wait4(pid, &r.status, 0, &usage);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.max_rss_kb = usage.ru_maxrss;
    r.out = testing::ReadFile(out_path);
    return r;
  }

  // skip_empty: a process killed after creating its file and before writing the header
  // leaves an empty file, which the reader refuses (it holds nothing).
  std::vector<RawProcessTrace> ReadAll(const std::string& dir, bool skip_empty = false) {
    std::vector<RawProcessTrace> traces;
    auto files = raw::ListRawFiles(dir);
    if (!files.ok()) return traces;
    for (const auto& f : files.value()) {
      struct stat st {};
      if (skip_empty && stat(f.c_str(), &st) == 0 && st.st_size == 0) continue;
      auto t = raw::ReadRawFile(f);
      EXPECT_TRUE(t.ok()) << t.status().message();
      if (t.ok()) traces.push_back(std::move(t).value());
    }
    return traces;
  }
};

// What a stack replay of the NVTX pushes and pops finds, per file.
struct Tree {
  uint64_t pushes = 0, pops = 0, orphan_pops = 0, open_at_end = 0;
  size_t max_depth = 0;
  std::map<std::string, uint64_t> complete;   // name -> ranges closed
  std::map<std::string, uint64_t> misplaced;  // child -> times under the wrong parent
  uint64_t empty_names = 0;
};

// A child named "<parent>/<x>" must be directly inside "<parent>" (the workloads name
// their ranges so).
Tree Replay(const RawProcessTrace& t) {
  Tree tree;
  std::map<uint32_t, std::vector<std::string>> stacks;
  for (const EventRecord& e : t.events) {
    auto& stack = stacks[e.tid];
    if (e.kind == static_cast<uint8_t>(EventKind::kNvtxPush)) {
      ++tree.pushes;
      const std::string name(t.String(e.name));
      if (name.empty()) ++tree.empty_names;
      const size_t slash = name.rfind('/');
      if (slash != std::string::npos && name.compare(0, 5, "count") != 0 &&
          name.compare(0, 4, "main") != 0 && name.compare(0, 7, "handler") != 0) {
        const std::string parent = name.substr(0, slash);
        if (stack.empty() || stack.back() != parent) ++tree.misplaced[name];
      }
      stack.push_back(name);
      tree.max_depth = std::max(tree.max_depth, stack.size());
    } else if (e.kind == static_cast<uint8_t>(EventKind::kNvtxPop)) {
      ++tree.pops;
      if (stack.empty()) {
        ++tree.orphan_pops;
        continue;
      }
      ++tree.complete[stack.back()];
      stack.pop_back();
    }
  }
  for (const auto& [tid, stack] : stacks) tree.open_at_end += stack.size();
  return tree;
}

uint64_t CompleteWithPrefix(const Tree& tree, const std::string& prefix) {
  uint64_t n = 0;
  for (const auto& [name, count] : tree.complete) {
    if (name.compare(0, prefix.size(), prefix) == 0) n += count;
  }
  return n;
}

TEST_F(RecorderTest, ForkedChildThatEndsWithUnderscoreExitKeepsEveryRange) {
  const std::string dir = tmp_ + "/fork";
  const Launched r = Launch({"fork-exit", "100"}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status;
  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 2u);
  int children = 0;
  for (const auto& t : traces) {
    EXPECT_EQ(raw::DescribeDamage(t), "") << t.path;
    EXPECT_EQ(t.format_version, 2);
    const Tree tree = Replay(t);
    EXPECT_EQ(tree.orphan_pops, 0u);
    EXPECT_EQ(tree.open_at_end, 0u);
    if (CompleteWithPrefix(tree, "child/") > 0) {
      ++children;
      // _exit runs no exit handler: the file is not closed, and still holds everything.
      EXPECT_FALSE(t.stats.clean_end);
      EXPECT_EQ(tree.complete.at("child/main"), 100u);
      EXPECT_EQ(tree.complete.at("child/thread"), 100u);
      EXPECT_EQ(CompleteWithPrefix(tree, "parent/"), 0u) << "the parent's ranges stay its own";
    } else {
      EXPECT_TRUE(t.stats.clean_end);
      EXPECT_EQ(tree.complete.at("parent/before-fork"), 100u);
      EXPECT_EQ(tree.complete.at("parent/after-fork"), 100u);
    }
  }
  EXPECT_EQ(children, 1);
}

TEST_F(RecorderTest, ExecAndAbortLoseNothingRecordedBefore) {
  const std::string dir = tmp_ + "/exec";
  Launched r = Launch({"exec-after", "500", "/bin/true"}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status;
  auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(Replay(traces[0]).complete.at("before-exec"), 500u);

  const std::string dir2 = tmp_ + "/abort";
  r = Launch({"abort-after", "500"}, dir2);
  EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT) << r.status;
  traces = ReadAll(dir2);
  ASSERT_EQ(traces.size(), 1u);
  const Tree tree = Replay(traces[0]);
  EXPECT_EQ(tree.complete.at("before-abort"), 500u);
  EXPECT_EQ(tree.open_at_end, 1u) << "the range open at the abort is visible";
  EXPECT_FALSE(traces[0].stats.clean_end);
}

// SIGKILL at random moments: every range the program had completed before the kill (it
// counts them in shared memory after each pop returns) is in the file.
TEST_F(RecorderTest, SigkillAtRandomMomentsLosesNoCompletedRange) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> delay_us(0, 40000);
  int runs_with_ranges = 0;
  // 50 kills, more while fewer than 20 came after recording started: on a loaded machine
  // the program can take longer than the delays to reach its first range.
  for (int run = 0; run < 50 || (runs_with_ranges < 20 && run < 200); ++run) {
    const std::string dir = tmp_ + "/kill" + std::to_string(run);
    const std::string counter_file = tmp_ + "/counters" + std::to_string(run);
    {
      const int fd = open(counter_file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
      ASSERT_EQ(ftruncate(fd, 4096), 0);
      close(fd);
    }
    const int delay = delay_us(rng);
    const Launched r = Launch({"count", counter_file, "3"}, dir, {}, delay);
    ASSERT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL);
    uint64_t reported = 0;
    {
      const int fd = open(counter_file.c_str(), O_RDONLY);
      uint64_t counts[3] = {};
      ASSERT_EQ(pread(fd, counts, sizeof(counts), 0), static_cast<ssize_t>(sizeof(counts)));
      close(fd);
      reported = counts[0] + counts[1] + counts[2];
    }
    // Killed before its first range: possibly before its file had a header.
    const auto traces = ReadAll(dir, reported == 0);
    if (reported == 0 && traces.empty()) continue;
    ASSERT_EQ(traces.size(), 1u) << "run " << run;
    const RawProcessTrace& t = traces[0];
    EXPECT_EQ(t.stats.damaged_regions, 0u) << raw::DescribeDamage(t);
    const Tree tree = Replay(t);
    EXPECT_EQ(tree.orphan_pops, 0u);
    EXPECT_EQ(tree.empty_names, 0u);
    EXPECT_LE(tree.open_at_end, 6u) << "at most two open ranges per thread";
    const uint64_t recorded =
        tree.complete.count("count/outer") ? tree.complete.at("count/outer") : 0;
    // Threads may have completed one more range than they reported when the kill came.
    EXPECT_GE(recorded, reported) << "run " << run << " killed after " << delay << " us";
    EXPECT_LE(recorded, reported + 3) << "run " << run;
    EXPECT_EQ(t.Counter("events_dropped"), 0u);
    if (reported > 0) ++runs_with_ranges;
  }
  EXPECT_GE(runs_with_ranges, 20) << "most kills should come after recording started";
}

TEST_F(RecorderTest, ThousandsOfThreadsAreCheap) {
  const std::string dir = tmp_ + "/threads";
  const Launched base = Launch({"threads", "1000", "10"}, dir, {}, -1, /*traced=*/false);
  ASSERT_TRUE(WIFEXITED(base.status) && WEXITSTATUS(base.status) == 0) << base.out;
  const Launched r = Launch({"threads", "1000", "10"}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  Tree tree = Replay(traces[0]);
  EXPECT_EQ(tree.complete.at("thread/range"), 10000u);
  EXPECT_EQ(traces[0].Counter("threads"), 1000u) << "every recording thread registered";
  // Memory per thread is a few lazily touched pages, not megabytes.
  EXPECT_LE(r.max_rss_kb, base.max_rss_kb + 64 * 1024)
      << "traced " << r.max_rss_kb << " KiB, untraced " << base.max_rss_kb << " KiB";
  // Time is measured in bench/collect; here only a bound that no shared machine misses
  // unless registration is slow (it took seconds with a global lock and pre-faulting).
  EXPECT_LE(r.wall_s, 4 * base.wall_s + 1.0) << r.wall_s << " s against " << base.wall_s;

  const std::string dir2 = tmp_ + "/threads10k";
  const Launched big = Launch({"threads", "10000", "10"}, dir2);
  ASSERT_TRUE(WIFEXITED(big.status) && WEXITSTATUS(big.status) == 0) << big.out;
  traces = ReadAll(dir2);
  ASSERT_EQ(traces.size(), 1u);
  tree = Replay(traces[0]);
  EXPECT_EQ(tree.complete.at("thread/range"), 100000u);
  EXPECT_EQ(traces[0].Counter("events_dropped"), 0u);
}

// Room runs out (a 2 MiB trace file): whole ranges are dropped, never a push without its
// pop or a child without its parent; the drops are counted per thread, and a gap record
// marks where recording resumed (in a block an exited thread left).
TEST_F(RecorderTest, ExhaustionDropsWholeRangesAndMarksTheGap) {
  const std::string dir = tmp_ + "/exhaust";
  const Launched r = Launch({"exhaust", "20000"}, dir, {"TELLER_BUFFER_MB=2"});
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  const RawProcessTrace& t = traces[0];
  const Tree tree = Replay(t);
  EXPECT_EQ(tree.orphan_pops, 0u);
  EXPECT_EQ(tree.open_at_end, 0u);
  EXPECT_TRUE(tree.misplaced.empty()) << tree.misplaced.begin()->first;
  EXPECT_EQ(tree.pushes, tree.pops);
  uint64_t kept_b = 0;  // outer ranges "b<i>" kept
  for (const auto& [name, count] : tree.complete) {
    if (name[0] == 'b' && name.find('/') == std::string::npos) kept_b += count;
  }
  // 20,000 outer ranges of 3 ranges each need 11 MiB: most are dropped, some are kept.
  EXPECT_GT(kept_b, 1000u);
  EXPECT_LT(kept_b, 20000u);
  const uint64_t ranges_dropped = t.Counter("ranges_dropped");
  EXPECT_EQ(CompleteWithPrefix(tree, "b") + CompleteWithPrefix(tree, "after") + ranges_dropped,
            60000u + 20u)
      << "every range is either whole in the file or counted";
  EXPECT_EQ(t.Counter("events_dropped"), 2 * ranges_dropped);
  // The drops are the main thread's, counted in the file per thread.
  ASSERT_EQ(t.thread_drops.size(), 1u);
  EXPECT_EQ(t.thread_drops[0].ranges, ranges_dropped);
  EXPECT_EQ(t.thread_drops[0].events, 2 * ranges_dropped);
  // Recording resumed after the helper thread left its block: a gap record, then the
  // "after" ranges, whole.
  int gaps = 0;
  uint64_t gap_events = 0;
  for (const auto& e : t.events) {
    if (e.kind == static_cast<uint8_t>(EventKind::kCollectorGap)) {
      ++gaps;
      gap_events += e.value;
      EXPECT_EQ(e.tid, t.thread_drops[0].tid);
    }
  }
  EXPECT_GE(gaps, 1);
  EXPECT_EQ(gap_events, 2 * ranges_dropped) << "the gaps account for every dropped event";
  EXPECT_GE(CompleteWithPrefix(tree, "after"), 2u);
  EXPECT_GT(t.Counter("buffer_limit_reached"), 0u);

  // `teller inspect` and `teller diagnose` report the gap.
  const int rc = std::system(("'" + std::string(TELLER_EXE) + "' inspect --json '" + dir + "' >'" +
                              tmp_ + "/inspect.txt' 2>&1")
                                 .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  const std::string json = testing::ReadFile(tmp_ + "/inspect.txt");
  EXPECT_NE(json.find("\"raw.collector_gaps\":" + std::to_string(gaps)), std::string::npos)
      << json.substr(0, 2000);
  EXPECT_NE(json.find("\"raw.ranges_dropped_by_collector\":" + std::to_string(ranges_dropped)),
            std::string::npos);
  const int rc2 = std::system(
      ("'" + std::string(TELLER_EXE) + "' diagnose '" + dir + "' >'" + tmp_ + "/diagnose.txt' 2>&1")
          .c_str());
  (void)rc2;
  const std::string diag = testing::ReadFile(tmp_ + "/diagnose.txt");
  EXPECT_NE(diag.find("raw.collector_gaps"), std::string::npos) << diag.substr(0, 2000);

  // Under `teller run` the losses are reported (the injected library writes nothing to
  // the program's stderr).
  const testing::Outcome o =
      Shell("TELLER_BUFFER_MB=2", TELLER_EXE,
            "run --out '" + tmp_ + "/run' -- '" + std::string(WORKLOAD_EXE) + "' exhaust 20000");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.err.find("the collector lost data (events_dropped="), std::string::npos) << o.err;
}

// The trace directory on a small tmpfs that fills up: the program finishes with its own
// status and output, the manifest stays intact, the trace is readable and the condition
// is reported. Needs a private mount namespace (root); skipped elsewhere.
TEST_F(RecorderTest, FullDiskLeavesTheProgramAndTheManifestIntact) {
  const std::string mnt = tmp_ + "/mnt";
  const std::string copy = tmp_ + "/copy";
  mkdir(mnt.c_str(), 0755);
  if (std::system(("unshare -m sh -c 'mount -t tmpfs -o size=3m none \"" + mnt + "\" && umount \"" +
                   mnt + "\"' 2>/dev/null")
                      .c_str()) != 0) {
    GTEST_SKIP() << "no private mount namespace here";
  }
  const std::string script =
      "mount -t tmpfs -o size=3m none '" + mnt + "' && TELLER_MIN_FREE_MB=0 '" + TELLER_EXE +
      "' run --out '" + mnt + "/trace' -- '" + WORKLOAD_EXE + "' threads 4 50000 >'" + tmp_ +
      "/full.out' 2>'" + tmp_ + "/full.err'; echo $? >'" + tmp_ + "/full.rc'; cp -r '" + mnt +
      "/trace' '" + copy + "'; umount '" + mnt + "'";
  ASSERT_EQ(std::system(("unshare -m sh -c \"" + script + "\"").c_str()), 0);
  EXPECT_EQ(testing::ReadFile(tmp_ + "/full.rc"), "0\n");
  EXPECT_EQ(testing::ReadFile(tmp_ + "/full.out"), "threads done 4\n");
  const std::string err = testing::ReadFile(tmp_ + "/full.err");
  EXPECT_NE(err.find("space_errors="), std::string::npos) << err;
  EXPECT_NE(err.find("the trace directory may be full"), std::string::npos) << err;
  const std::string manifest = testing::ReadFile(copy + "/manifest.json");
  ASSERT_FALSE(manifest.empty());
  EXPECT_EQ(manifest.back(), '\n') << "a whole manifest, not a truncated one";
  EXPECT_NE(manifest.find("\"format\":\"teller-run-manifest\""), std::string::npos);
  const auto traces = ReadAll(copy);
  ASSERT_EQ(traces.size(), 1u);
  const Tree tree = Replay(traces[0]);
  EXPECT_EQ(tree.orphan_pops, 0u);
  EXPECT_EQ(tree.open_at_end, 0u);
  EXPECT_GT(tree.complete.at("thread/range"), 1000u);
  EXPECT_EQ(tree.complete.at("thread/range") + traces[0].Counter("ranges_dropped"), 200000u);
  EXPECT_GT(traces[0].Counter("space_errors"), 0u);
}

// A SIGALRM every 10 us whose handler records ranges: handler events that arrive while
// the thread is inside the recorder are dropped whole and counted; nothing is corrupt.
TEST_F(RecorderTest, SignalStormNeverCorruptsTheTrace) {
  const std::string dir = tmp_ + "/alarm";
  const Launched r = Launch({"sigalrm", "10", "300"}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
  long loops = 0, calls = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "loops %ld handler_calls %ld", &loops, &calls), 2) << r.out;
  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  const RawProcessTrace& t = traces[0];
  const Tree tree = Replay(t);
  EXPECT_EQ(tree.orphan_pops, 0u);
  EXPECT_EQ(tree.open_at_end, 0u);
  EXPECT_EQ(tree.empty_names, 0u);
  EXPECT_LE(tree.max_depth, 5u) << "three main levels, and the handler's two";
  // Every main-loop range is there, and every handler call is either recorded whole or
  // counted as dropped (two pushes and two pops each).
  EXPECT_EQ(tree.complete.at("main/c"), static_cast<uint64_t>(loops));
  EXPECT_EQ(tree.complete.at("main/a"), static_cast<uint64_t>(loops));
  const uint64_t handler_recorded =
      tree.complete.count("handler") ? tree.complete.at("handler") : 0;
  const uint64_t reentrant = t.Counter("events_dropped_reentrant");
  EXPECT_EQ(reentrant % 4, 0u);
  EXPECT_EQ(handler_recorded + reentrant / 4, static_cast<uint64_t>(calls));
  EXPECT_EQ(tree.complete.count("handler/inner") ? tree.complete.at("handler/inner") : 0,
            handler_recorded);
  EXPECT_GT(calls, 100);
}

// A trace much larger than the memory the collector may hold: the pages of the file
// behind the threads' claims are unmapped as the trace grows (their data stays in the
// file), so the program's peak RSS does not grow with the trace, and nothing is lost.
TEST_F(RecorderTest, LongTraceKeepsResidentMemoryBounded) {
  constexpr long kRanges = 600000;
  const std::string dir = tmp_ + "/long";
  const Launched base =
      Launch({"threads", "1", std::to_string(kRanges)}, dir, {}, -1, /*traced=*/false);
  ASSERT_TRUE(WIFEXITED(base.status) && WEXITSTATUS(base.status) == 0) << base.out;
  const Launched r = Launch({"threads", "1", std::to_string(kRanges)}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  auto files = raw::ListRawFiles(dir);
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files.value().size(), 1u);
  struct stat st {};
  ASSERT_EQ(stat(files.value()[0].c_str(), &st), 0);
  // Two 96-byte records per range: the file holds at least 110 MiB.
  const int64_t trace_bytes = 2 * kRanges * 96;
  EXPECT_GE(st.st_size, trace_bytes);
  // Were the written pages kept mapped, RSS would grow by the trace's size.
  EXPECT_LE(r.max_rss_kb, base.max_rss_kb + trace_bytes / 1024 / 3)
      << "traced " << r.max_rss_kb << " KiB, untraced " << base.max_rss_kb << " KiB";
  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  const Tree tree = Replay(traces[0]);
  EXPECT_EQ(tree.complete.at("thread/range"), static_cast<uint64_t>(kRanges));
  EXPECT_EQ(tree.orphan_pops, 0u);
  EXPECT_EQ(traces[0].Counter("events_dropped"), 0u);
  // A pop carries its kind, thread and time, nothing else: every other field reads zero.
  uint64_t pops = 0;
  for (const EventRecord& e : traces[0].events) {
    if (e.kind != static_cast<uint8_t>(EventKind::kNvtxPop)) continue;
    ++pops;
    if (e.name != 0 || e.end_ns != 0 || e.correlation != 0 || e.value != 0 || e.category != 0 ||
        e.aux != 0 || e.stream != 0 || e.shared_bytes != 0) {
      ADD_FAILURE() << "pop " << pops << " has fields set beyond its head";
      break;
    }
  }
  EXPECT_EQ(pops, static_cast<uint64_t>(kRanges));
}

TEST_F(RecorderTest, TenThousandDeepNestingIsKept) {
  const std::string dir = tmp_ + "/deep";
  const Launched r = Launch({"deep", "10000"}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  const Tree tree = Replay(traces[0]);
  EXPECT_EQ(tree.max_depth, 10000u);
  EXPECT_EQ(tree.complete.at("deep"), 10000u);
  EXPECT_EQ(traces[0].Counter("events_dropped"), 0u);
}

// The program closes every descriptor after its first range and opens a file of its own,
// which gets descriptor 3: its file keeps exactly its bytes, and the trace every range.
// A thread defines each name once in its file, however the names it alternates between
// hash: 64 layer names and three op names that differ only in their last byte, used in
// turn 100 times. A string cache whose entry ignored a name's last bytes evicted them at
// every call and wrote thousands of definitions.
TEST_F(RecorderTest, EachNameIsDefinedOncePerThread) {
  const std::string dir = tmp_ + "/names";
  const Launched r = Launch({"names", "64", "100"}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  const RawProcessTrace& t = traces[0];
  const Tree tree = Replay(t);
  EXPECT_EQ(tree.orphan_pops, 0u);
  EXPECT_EQ(CompleteWithPrefix(tree, "model.layers."), 64u * 100u);
  EXPECT_EQ(tree.complete.at("main/a"), 6400u);
  std::map<std::string, int> ids_per_text;
  for (const std::string& s : t.strings) {
    if (!s.empty()) ++ids_per_text[s];
  }
  for (const char* name : {"model.layers.0", "model.layers.63", "main/a", "main/b", "main/c"}) {
    EXPECT_EQ(ids_per_text[name], 1) << name;
  }
  for (const auto& [text, ids] : ids_per_text) EXPECT_EQ(ids, 1) << text;
}

TEST_F(RecorderTest, ProgramThatClosesItsDescriptorsKeepsItsFilesAndItsTrace) {
  const std::string dir = tmp_ + "/fds";
  const std::string own = tmp_ + "/own-file";
  Launched r = Launch({"close-fds", own, "3000"}, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  EXPECT_EQ(r.out, "own file intact\n");
  EXPECT_EQ(testing::ReadFile(own).size(), 35u);
  auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  Tree tree = Replay(traces[0]);
  EXPECT_EQ(tree.complete.at("before-close"), 1u);
  EXPECT_EQ(tree.complete.at("after-close"), 3000u);
  EXPECT_TRUE(traces[0].stats.clean_end);

  // At most 16 descriptors, 15 of them in use: the file still grows (it is opened only
  // for the moment it is extended).
  const std::string dir2 = tmp_ + "/limit";
  r = Launch({"fd-limit", "20000"}, dir2);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  traces = ReadAll(dir2);
  ASSERT_EQ(traces.size(), 1u);
  tree = Replay(traces[0]);
  EXPECT_EQ(tree.complete.at("limited"), 20000u);
  EXPECT_EQ(traces[0].Counter("events_dropped"), 0u);
  EXPECT_EQ(traces[0].Counter("space_errors"), 0u);
}

}  // namespace
}  // namespace teller
