#include "teller/collect/launcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>

#include "teller/collect/process_info.h"
#include "teller/core/clock.h"
#include "teller/core/counter_registry.h"
#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/format/raw_format.h"
#include "teller/format/raw_reader.h"

extern char** environ;

#ifndef TELLER_VERSION
#define TELLER_VERSION "0.0.0"
#endif

namespace teller::collect {
namespace {

std::string Errno() { return std::strerror(errno); }

std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

// Creates the directory and proves it is writable and has room, before the command
// starts: a trace that silently fails to be written is worse than no run.
Status CheckTraceDir(const std::string& dir, uint64_t min_free_bytes) {
  TELLER_RETURN_IF_ERROR(MakeDirs(dir));
  // Two runs in one directory would mix their processes and overwrite the logs.
  if (IsRegularFile(dir + "/" + kManifestName)) {
    return Status::Error(dir + " already holds a trace (" + kManifestName +
                         "); choose another --out or remove it");
  }
  TELLER_RETURN_IF_ERROR(MakeDirs(dir + "/logs"));
  const std::string probe = dir + "/.teller-write-probe";
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error("cannot write in " + dir + ": " + Errno());
  char block[4096] = {};
  const ssize_t w = write(fd, block, sizeof(block));
  const int write_errno = errno;
  close(fd);
  unlink(probe.c_str());
  if (w != static_cast<ssize_t>(sizeof(block))) {
    errno = write_errno;
    return Status::Error("cannot write in " + dir + ": " + (w < 0 ? Errno() : "short write"));
  }
  struct statvfs vfs;
  if (statvfs(dir.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (free_bytes < min_free_bytes) {
      return Status::Error(dir + " has only " + std::to_string(free_bytes >> 20) +
                           " MiB free (at least " + std::to_string(min_free_bytes >> 20) +
                           " MiB needed; TELLER_MIN_FREE_MB changes the limit)");
    }
  }
  return Status::Ok();
}

// One captured stream: tee to the terminal, and split into timestamped lines.
struct Stream {
  int pipe_fd = -1;
  int terminal_fd = -1;
  int log_fd = -1;
  std::string partial;        // bytes of the current, unfinished line
  int64_t line_start_ns = 0;  // capture time of the first byte of `partial`
  std::string out;            // formatted lines waiting to be written to the log
  uint64_t lines = 0;
  bool open = true;
};

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0 && fd >= 0) {
    const ssize_t w = write(fd, data, size);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // a closed terminal must not stop the logging
    }
    data += w;
    size -= static_cast<size_t>(w);
  }
}

void EmitLine(Stream& s, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  s.out += std::to_string(s.line_start_ns);
  s.out += ' ';
  s.out.append(line);
  s.out += '\n';
  ++s.lines;
}

void Capture(Stream& s, const char* data, size_t size, int64_t now) {
  WriteAll(s.terminal_fd, data, size);
  size_t begin = 0;
  for (size_t i = 0; i < size; ++i) {
    if (s.partial.empty() && i == begin) s.line_start_ns = now;
    if (data[i] != '\n') continue;
    if (s.partial.empty()) {
      EmitLine(s, std::string_view(data + begin, i - begin));
    } else {
      s.partial.append(data + begin, i - begin);
      EmitLine(s, s.partial);
      s.partial.clear();
    }
    begin = i + 1;
  }
  if (begin < size) {
    if (s.partial.empty()) s.line_start_ns = now;
    s.partial.append(data + begin, size - begin);
  }
  WriteAll(s.log_fd, s.out.data(), s.out.size());
  s.out.clear();
}

void FinishStream(Stream& s) {
  if (!s.partial.empty()) {  // a last line without a newline is still a line
    EmitLine(s, s.partial);
    s.partial.clear();
    WriteAll(s.log_fd, s.out.data(), s.out.size());
    s.out.clear();
  }
  if (s.log_fd >= 0) close(s.log_fd);
  s.log_fd = -1;
}

volatile sig_atomic_t g_child_pid = 0;

// Signals sent to `teller run` with kill(2) go on to the command. Signals from the
// terminal (Ctrl-C) already reach the command, which shares our process group, so they
// are not sent twice.
void ForwardSignal(int sig, siginfo_t* info, void*) {
  if (g_child_pid > 0 &&
      (info == nullptr || info->si_code == SI_USER || info->si_code == SI_QUEUE)) {
    kill(g_child_pid, sig);
  }
}

std::string TimestampName() {
  const time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "teller-trace-%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string JsonStringArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(out, items[i]);
  }
  return out + "]";
}

struct RunRecord {
  std::vector<std::string> command;
  std::string host, cwd, python_hooks, inject_lib, cupti_lib;
  int flush_ms = 0;
  ClockPair start, end;
  bool finished = false;
  int exit_code = 0;
  int signal = 0;
  int64_t child_pid = 0;
  uint64_t stdout_lines = 0, stderr_lines = 0;
};

// Lists the files of the trace directory for the manifest (raw traces and logs).
std::string ListFilesJson(const std::string& dir) {
  std::string out = "[";
  bool first = true;
  for (const std::string& sub : {std::string(), std::string("logs")}) {
    const std::string path = sub.empty() ? dir : dir + "/" + sub;
    DIR* d = opendir(path.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || name == kManifestName || name[0] == '.') continue;
      if (IsRegularFile(path + "/" + name)) names.push_back(name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string rel = sub.empty() ? name : sub + "/" + name;
      struct stat st;
      stat((dir + "/" + rel).c_str(), &st);
      const bool raw = rel.size() > 4 && rel.substr(rel.size() - 4) == raw::kFileExtension;
      if (!first) out += ',';
      first = false;
      JsonObjectWriter(out)
          .Field("path", rel)
          .Field("kind", raw ? "raw_trace" : (sub == "logs" ? "log" : "other"))
          .Field("bytes", static_cast<uint64_t>(st.st_size))
          .Close();
    }
  }
  return out + "]";
}

Status WriteManifest(const std::string& dir, const RunRecord& r) {
  std::string json;
  JsonObjectWriter w(json);
  w.Field("format", "teller-run-manifest")
      .Field("format_version", 1)
      .Field("teller_version", TELLER_VERSION)
      .FieldRaw("command", JsonStringArray(r.command))
      .Field("cwd", r.cwd)
      .Field("host", r.host)
      .Field("clock", "CLOCK_MONOTONIC")
      .Field("start_realtime_ns", r.start.realtime_ns)
      .Field("start_monotonic_ns", r.start.monotonic_ns)
      .Field("flush_ms", r.flush_ms)
      .Field("python_hooks", r.python_hooks)
      .Field("nvtx_injection", r.inject_lib)
      .Field("cuda_injection", r.cupti_lib)
      .FieldBool("finished", r.finished);
  if (r.child_pid > 0) w.Field("pid", r.child_pid);
  if (r.finished) {
    w.Field("end_realtime_ns", r.end.realtime_ns)
        .Field("end_monotonic_ns", r.end.monotonic_ns)
        .Field("exit_code", r.exit_code)
        .Field("signal", r.signal)
        .Field("stdout_lines", r.stdout_lines)
        .Field("stderr_lines", r.stderr_lines);
  }
  w.FieldRaw("files", ListFilesJson(dir));
  w.Close();
  json += '\n';
  // Write-then-rename: a reader never sees a half-written manifest.
  return WriteFileAtomic(dir + "/" + kManifestName, json);
}

// The injected collector writes nothing to the program's descriptors (stderr included):
// losses it counted in the trace files are reported here, once per file.
void ReportCollectorLosses(const std::string& dir) {
  auto files = raw::ListRawFiles(dir);
  if (!files.ok()) return;
  for (const std::string& file : files.value()) {
    auto counters = raw::ReadRawCounters(file);
    if (!counters.ok()) continue;
    std::string losses;
    for (const auto& [name, value] : counters.value()) {
      const auto id = FindCounter(name);
      if (!id || CounterInfoOf(*id).severity != CounterSeverity::kDataLoss) continue;
      losses += (losses.empty() ? "" : ", ") + name + "=" + std::to_string(value);
    }
    if (!losses.empty()) {
      const size_t slash = file.rfind('/');
      std::fprintf(stderr, "teller run: %s: the collector lost data (%s)%s\n",
                   file.substr(slash + 1).c_str(), losses.c_str(),
                   losses.find("space_errors") != std::string::npos
                       ? "; the trace directory may be full"
                       : "");
    }
  }
}

std::string SignalName(int sig) {
  const char* desc = strsignal(sig);
  return std::to_string(sig) + (desc ? std::string(" (") + desc + ")" : std::string());
}

}  // namespace

std::string DefaultTraceDir() {
  if (const char* env = std::getenv("TELLER_TRACE_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string base = TimestampName();
  std::string candidate = base;
  for (int n = 2; IsDirectory(candidate) || IsRegularFile(candidate); ++n) {
    candidate = base + "-" + std::to_string(n);
  }
  return candidate;
}

Result<int> RunTraced(const RunOptions& options) {
  if (options.command.empty())
    return Status::Error("no command given (usage: teller run -- CMD ...)");
  const std::string requested = options.out_dir.empty() ? DefaultTraceDir() : options.out_dir;
  if (Status s = CheckTraceDir(requested, options.min_free_bytes); !s.ok()) {
    return Status::Error("trace directory unusable: " + s.message() +
                         "; the command was not started");
  }
  const std::string dir = Absolute(requested);

  RunRecord record;
  record.command = options.command;
  record.host = HostName();
  char cwd[PATH_MAX];
  record.cwd = getcwd(cwd, sizeof(cwd)) ? cwd : "";
  record.python_hooks = options.python_hooks;
  record.flush_ms = options.flush_ms;

  const std::string lib_dir = Absolute(options.exe_dir + "/../lib");
  const std::string inject = lib_dir + "/libteller_inject.so";
  const std::string cupti = lib_dir + "/libteller_cupti.so";
  const std::string shim = lib_dir + "/libteller_nvtx_shim.so";
  const std::string hooks = lib_dir + "/teller/python";
  if (IsRegularFile(inject)) {
    record.inject_lib = inject;
  } else {
    std::fprintf(stderr, "teller run: %s not found; collecting logs only\n", inject.c_str());
  }
  if (IsRegularFile(cupti)) record.cupti_lib = cupti;

  // Environment of the command: ours added to (or replacing) the inherited one.
  std::vector<std::pair<std::string, std::string>> env;
  env.emplace_back("TELLER_TRACE_DIR", dir);
  env.emplace_back("TELLER_FLUSH_MS", std::to_string(options.flush_ms));
  env.emplace_back("TELLER_RUN_ID", std::to_string(getpid()) + "-" + std::to_string(time(nullptr)));
  if (!record.inject_lib.empty()) env.emplace_back("NVTX_INJECTION64_PATH", record.inject_lib);
  if (!record.cupti_lib.empty()) env.emplace_back("CUDA_INJECTION64_PATH", record.cupti_lib);
  if (options.python_hooks != "none") {
    env.emplace_back("TELLER_PYTHON_HOOKS", options.python_hooks);
    if (IsRegularFile(shim)) env.emplace_back("TELLER_NVTX_SHIM", shim);
    const char* old = std::getenv("PYTHONPATH");
    env.emplace_back("PYTHONPATH", old && *old ? hooks + ":" + old : hooks);
    // Python block-buffers stdout into a pipe, which would stamp a burst of log lines
    // with one time; unbuffered output keeps capture times close to emission times.
    if (std::getenv("PYTHONUNBUFFERED") == nullptr) env.emplace_back("PYTHONUNBUFFERED", "1");
  }

  Stream out, err;
  out.terminal_fd = STDOUT_FILENO;
  err.terminal_fd = STDERR_FILENO;
  out.log_fd =
      open((dir + "/" + kStdoutLogName).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  err.log_fd =
      open((dir + "/" + kStderrLogName).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out.log_fd < 0 || err.log_fd < 0) {
    return Status::Error("cannot create log files in " + dir + ": " + Errno() +
                         "; the command was not started");
  }
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      pipe2(exec_pipe, O_CLOEXEC) != 0) {
    return Status::Error("cannot create pipes: " + Errno());
  }

  record.start = ReadClockPair();
  if (Status st = WriteManifest(dir, record); !st.ok()) {
    return Status::Error(st.message() + "; the command was not started");
  }

  // Argument vector and environment are built before fork: the child only execs.
  std::vector<char*> argv;
  for (const auto& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : env) replaced = replaced || key == k;
    if (!replaced) env_strings.emplace_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  struct sigaction forward {};
  forward.sa_sigaction = ForwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  struct sigaction saved[6];
  for (int i = 0; i < 6; ++i) sigaction(forwarded[i], &forward, &saved[i]);
  struct sigaction ignore_pipe {
  }, saved_pipe;
  ignore_pipe.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore_pipe, &saved_pipe);

  // vfork: the child borrows this process's memory until it execs (it only resets the
  // signal dispositions, moves the pipes into place and execs, touching nothing else), so
  // no page tables are copied and neither process takes copy-on-write faults afterwards:
  // about 45 of the 220 page faults of `teller run -- /bin/true` with fork
  // (bench/README.md, "Start-up of `teller run`").
  const pid_t pid = vfork();
  if (pid < 0) return Status::Error("cannot fork: " + Errno());
  if (pid == 0) {
    for (int i = 0; i < 6; ++i) sigaction(forwarded[i], &saved[i], nullptr);
    sigaction(SIGPIPE, &saved_pipe, nullptr);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    execvpe(argv[0], argv.data(), envp.data());
    const int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof(e));
    _exit(e == ENOENT ? kExitNotFound : kExitCannotExecute);
  }
  g_child_pid = pid;
  record.child_pid = pid;
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  int exec_errno = 0;
  const bool exec_failed =
      read(exec_pipe[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno);
  close(exec_pipe[0]);
  out.pipe_fd = out_pipe[0];
  err.pipe_fd = err_pipe[0];

  int status = 0;
  bool reaped = false;
  int64_t reaped_at = 0;
  char buf[65536];
  while (out.open || err.open) {
    pollfd fds[2];
    Stream* streams[2];
    int n = 0;
    for (Stream* s : {&out, &err}) {
      if (!s->open) continue;
      fds[n] = {s->pipe_fd, POLLIN, 0};
      streams[n++] = s;
    }
    const int ready = poll(fds, n, 100);
    const int64_t now = EventClockNs();
    for (int i = 0; i < n && ready > 0; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t r = read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) {
        Capture(*streams[i], buf, static_cast<size_t>(r), now);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        streams[i]->open = false;
      }
    }
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      reaped_at = now;
    }
    // A daemonised grandchild may hold the pipes open forever: after the command
    // exits, drain for at most two seconds of silence.
    if (reaped && ready == 0 && now - reaped_at > 2000000000) break;
  }
  if (!reaped) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  g_child_pid = 0;
  for (int i = 0; i < 6; ++i) sigaction(forwarded[i], &saved[i], nullptr);
  sigaction(SIGPIPE, &saved_pipe, nullptr);
  FinishStream(out);
  FinishStream(err);
  close(out_pipe[0]);
  close(err_pipe[0]);

  record.end = ReadClockPair();
  record.finished = true;
  record.stdout_lines = out.lines;
  record.stderr_lines = err.lines;
  int code = 0;
  if (exec_failed) {
    errno = exec_errno;
    std::fprintf(stderr, "teller run: cannot execute '%s': %s\n", options.command[0].c_str(),
                 Errno().c_str());
    code = exec_errno == ENOENT ? kExitNotFound : kExitCannotExecute;
    record.exit_code = code;
  } else if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
    record.exit_code = code;
  } else if (WIFSIGNALED(status)) {
    record.signal = WTERMSIG(status);
    code = 128 + record.signal;
    record.exit_code = code;
    std::fprintf(stderr, "teller run: command terminated by signal %s%s\n",
                 SignalName(record.signal).c_str(), WCOREDUMP(status) ? ", core dumped" : "");
  }
  ReportCollectorLosses(dir);
  // A failed write (a full disk) leaves the previous manifest in place: it is replaced
  // only by a complete new one.
  if (Status st = WriteManifest(dir, record); !st.ok()) {
    std::fprintf(stderr, "teller run: %s; the manifest written at the start is kept\n",
                 st.message().c_str());
  }
  std::fprintf(stderr, "teller run: trace written to %s\n", dir.c_str());
  return code;
}

}  // namespace teller::collect
