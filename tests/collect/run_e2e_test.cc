// End-to-end tests of `teller run` with the NVTX injection: a real traced program
// (nvtx_workload) under the real launcher, read back with the raw reader.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "teller/format/raw_reader.h"
#include "tests/collect/nvtx_workload.h"
#include "tests/command_test_util.h"

namespace teller {
namespace {

using raw::EventKind;
using raw::EventRecord;
using raw::RawProcessTrace;

using testing::Outcome;
using testing::ReadFile;

class RunE2eTest : public testing::CommandTest {
 protected:
  RunE2eTest() : CommandTest("teller-e2e-") {}

  // Runs `teller <args>` through the shell with `env` prefixed; captures both streams.
  Outcome Teller(const std::string& args, const std::string& env = "") {
    return Shell(env, TELLER_EXE, args);
  }

  std::vector<RawProcessTrace> ReadAll(const std::string& dir) {
    std::vector<RawProcessTrace> traces;
    auto files = raw::ListRawFiles(dir);
    EXPECT_TRUE(files.ok()) << files.status().message();
    if (!files.ok()) return traces;
    for (const auto& f : files.value()) {
      auto t = raw::ReadRawFile(f);
      EXPECT_TRUE(t.ok()) << t.status().message();
      if (t.ok()) traces.push_back(std::move(t).value());
    }
    return traces;
  }
};

// Rebuilds each thread's ranges with a stack, as reconstruction will, and returns
// "outer>inner>leaf" paths with their counts; fails on a pop without a push or a range
// left open.
std::map<std::string, int> NestedPaths(const RawProcessTrace& t) {
  std::map<uint32_t, std::vector<std::string>> stacks;
  std::map<std::string, int> paths;
  for (const EventRecord& e : t.events) {
    auto& stack = stacks[e.tid];
    if (e.kind == static_cast<uint8_t>(EventKind::kNvtxPush)) {
      std::string path = stack.empty() ? "" : stack.back() + ">";
      path += t.String(e.name);
      stack.push_back(path);
      ++paths[path];
    } else if (e.kind == static_cast<uint8_t>(EventKind::kNvtxPop)) {
      EXPECT_FALSE(stack.empty()) << "pop without push in " << t.path;
      if (!stack.empty()) stack.pop_back();
    }
  }
  for (const auto& [tid, stack] : stacks)
    EXPECT_TRUE(stack.empty()) << "open range in thread " << tid;
  return paths;
}

TEST_F(RunE2eTest, EveryRangeArrivesNestedInItsOwnProcessFile) {
  const std::string dir = tmp_ + "/trace";
  const Outcome o = Teller("run --out '" + dir + "' -- '" + std::string(WORKLOAD_EXE) + "'");
  // Output and exit status pass through.
  EXPECT_EQ(o.exit_code, kExitCode) << o.err;
  EXPECT_NE(o.out.find("workload done fork_ok=1 exec_ok=1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("exec child done"), std::string::npos);
  EXPECT_NE(o.out.find("fork child done"), std::string::npos);
  EXPECT_NE(o.err.find("workload stderr line"), std::string::npos);

  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 3u) << "parent, forked child and exec'd child each write a file";
  const RawProcessTrace* parent = nullptr;
  const RawProcessTrace* fork_child = nullptr;
  const RawProcessTrace* exec_child = nullptr;
  for (const auto& t : traces) {
    EXPECT_TRUE(t.stats.clean_end) << t.path;
    EXPECT_EQ(raw::DescribeDamage(t), "") << t.path;
    EXPECT_EQ(t.Counter("events_dropped"), 0u);
    if (t.Info("cmdline").find("exec-child") != std::string_view::npos) {
      exec_child = &t;
    } else {
      for (const auto& e : t.events) {
        if (t.String(e.name) == "fork-child/range") fork_child = &t;
      }
      if (fork_child != &t) parent = &t;
    }
  }
  ASSERT_TRUE(parent && fork_child && exec_child);
  EXPECT_EQ(fork_child->Info("ppid"), std::to_string(parent->pid()));
  EXPECT_EQ(exec_child->Info("ppid"), std::to_string(parent->pid()));
  EXPECT_FALSE(parent->anchors.empty());
  EXPECT_FALSE(parent->Info("host").empty());

  const auto paths = NestedPaths(*parent);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kIterations; i += 37) {
      const std::string outer = "t" + std::to_string(t) + "/outer/" + std::to_string(i);
      EXPECT_EQ(paths.count(outer), 1u) << outer;
      EXPECT_EQ(paths.count(outer + ">registered-step>leaf"), 1u) << outer;
    }
  }
  int leaves = 0;
  for (const auto& [path, n] : paths) {
    if (path.size() > 5 && path.substr(path.size() - 5) == ">leaf") leaves += n;
  }
  EXPECT_EQ(leaves, kThreads * kIterations);
  EXPECT_EQ(paths.count("main/setup"), 1u);
  EXPECT_EQ(paths.count("fork-child/range"), 0u) << "the child's ranges stay in its file";

  // Thread identity, domains, payloads, start/end ranges, marks, thread names.
  std::map<uint32_t, int> leaves_per_tid;
  uint64_t start_id = 0, end_id = 0;
  bool named_main = false, marked_done = false;
  for (const auto& e : parent->events) {
    const auto kind = static_cast<EventKind>(e.kind);
    if (kind == EventKind::kNvtxPush && parent->String(e.name) == "leaf") {
      ++leaves_per_tid[e.tid];
      EXPECT_EQ(e.aux, 1) << "uint64 payload type";
      EXPECT_LT(e.value % 1000, static_cast<uint64_t>(kIterations));
    }
    if (kind == EventKind::kNvtxPush && parent->String(e.name) == "registered-step") {
      EXPECT_EQ(parent->String(e.domain), "workload");
      EXPECT_TRUE(e.flags & raw::kFlagMessageRegistered);
    }
    if (kind == EventKind::kNvtxStart) start_id = e.correlation;
    if (kind == EventKind::kNvtxEnd) end_id = e.correlation;
    if (kind == EventKind::kNvtxNameThread && parent->String(e.name) == "main-thread")
      named_main = true;
    if (kind == EventKind::kNvtxMark && parent->String(e.name) == "main/done") marked_done = true;
  }
  EXPECT_EQ(leaves_per_tid.size(), static_cast<size_t>(kThreads));
  for (const auto& [tid, n] : leaves_per_tid) EXPECT_EQ(n, kIterations) << "thread " << tid;
  EXPECT_NE(start_id, 0u);
  EXPECT_EQ(start_id, end_id);
  EXPECT_TRUE(named_main);
  EXPECT_TRUE(marked_done);

  const auto child_paths = NestedPaths(*fork_child);
  EXPECT_EQ(child_paths.at("fork-child/range"), kChildRanges);
  EXPECT_EQ(child_paths.size(), 1u) << "nothing of the parent leaks into the child's file";
  const auto exec_paths = NestedPaths(*exec_child);
  EXPECT_EQ(exec_paths.at("exec-child/outer>exec-child/inner"), kChildRanges);

  // Logs: one line per captured line, prefixed with the capture time on the event clock.
  const std::string log = ReadFile(dir + "/logs/stdout.log");
  EXPECT_NE(log.find(" workload done fork_ok=1"), std::string::npos) << log;
  long long ts = 0;
  char text[256] = {};
  ASSERT_EQ(std::sscanf(log.c_str(), "%lld %255[^\n]", &ts, text), 2) << log;
  EXPECT_GE(ts, parent->anchors.front().monotonic_ns - 5'000'000'000LL);
  const std::string err_log = ReadFile(dir + "/logs/stderr.log");
  EXPECT_NE(err_log.find(" workload stderr line\n"), std::string::npos) << err_log;

  const std::string manifest = ReadFile(dir + "/manifest.json");
  EXPECT_NE(manifest.find("\"exit_code\":7"), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"kind\":\"raw_trace\""), std::string::npos);
  EXPECT_NE(manifest.find("\"finished\":true"), std::string::npos);
}

// Events are in the mapped trace file the moment they are recorded (docs/collector.md):
// a SIGKILL loses nothing, not even the mark made just before it (the earlier collector
// lost its last flush interval, so this test only asked for the ticks).
TEST_F(RunE2eTest, SigkillLosesNothingRecorded) {
  const std::string dir = tmp_ + "/killed";
  const Outcome o =
      Teller("run --flush-ms 50 --out '" + dir + "' -- '" + std::string(WORKLOAD_EXE) + "' killed");
  EXPECT_EQ(o.exit_code, 128 + 9);
  EXPECT_NE(o.err.find("terminated by signal 9"), std::string::npos) << o.err;
  const auto traces = ReadAll(dir);
  ASSERT_EQ(traces.size(), 1u);
  const RawProcessTrace& t = traces[0];
  EXPECT_FALSE(t.stats.clean_end);
  int ticks = 0;
  for (const auto& e : t.events) {
    if (t.String(e.name).rfind("tick ", 0) == 0) ++ticks;
  }
  EXPECT_EQ(ticks, kTicks);
  int after_sleep = 0;
  for (const auto& e : t.events) after_sleep += t.String(e.name) == "after-sleep";
  EXPECT_EQ(after_sleep, 1) << "the last mark before the kill";
  const std::string manifest = ReadFile(dir + "/manifest.json");
  EXPECT_NE(manifest.find("\"signal\":9"), std::string::npos) << manifest;
}

TEST_F(RunE2eTest, UnwritableOutputDirectoryIsAnErrorBeforeTheCommandStarts) {
  const std::string marker = tmp_ + "/started";
  const std::string blocker = tmp_ + "/a-file";
  std::ofstream(blocker) << "x";
  // A path below a regular file can never be created, even by root.
  Outcome o = Teller("run --out '" + blocker + "/trace' -- touch '" + marker + "'");
  EXPECT_EQ(o.exit_code, 125);
  EXPECT_NE(o.err.find(blocker), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("not started"), std::string::npos) << o.err;
  struct stat st;
  EXPECT_NE(stat(marker.c_str(), &st), 0) << "the command must not have run";

  // A directory that already holds a trace is not mixed with a new one.
  ASSERT_EQ(Teller("run --out '" + tmp_ + "/used' -- true").exit_code, 0);
  o = Teller("run --out '" + tmp_ + "/used' -- touch '" + marker + "'");
  EXPECT_EQ(o.exit_code, 125);
  EXPECT_NE(o.err.find("already holds a trace"), std::string::npos) << o.err;
  EXPECT_NE(stat(marker.c_str(), &st), 0);

  // A full disk, simulated by demanding more free space than any disk has.
  o = Teller("run --out '" + tmp_ + "/full' -- touch '" + marker + "'",
             "TELLER_MIN_FREE_MB=999999999");
  EXPECT_EQ(o.exit_code, 125);
  EXPECT_NE(o.err.find("MiB free"), std::string::npos) << o.err;
  EXPECT_NE(stat(marker.c_str(), &st), 0);
}

TEST_F(RunE2eTest, ExitStatusesFollowTheShell) {
  Outcome o = Teller("run --out '" + tmp_ + "/a' -- sh -c 'exit 42'");
  EXPECT_EQ(o.exit_code, 42);
  o = Teller("run --out '" + tmp_ + "/b' -- sh -c 'kill -TERM $$'");
  EXPECT_EQ(o.exit_code, 128 + 15);
  EXPECT_NE(o.err.find("terminated by signal 15"), std::string::npos) << o.err;
  o = Teller("run --out '" + tmp_ + "/c' -- /nonexistent/program");
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_NE(o.err.find("cannot execute '/nonexistent/program'"), std::string::npos) << o.err;
  // A run without any NVTX use leaves a valid, empty trace.
  o = Teller("dump '" + tmp_ + "/a'");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "");
  EXPECT_NE(o.err.find("no process recorded events"), std::string::npos) << o.err;
  o = Teller("dump '" + tmp_ + "'");  // not a trace directory at all
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("no raw trace files"), std::string::npos) << o.err;
  o = Teller("run --flush-ms abc -- true");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--flush-ms"), std::string::npos);
}

TEST_F(RunE2eTest, SignalSentToTellerReachesTheCommand) {
  const std::string dir = tmp_ + "/sig";
  // Start teller in the background, wait until the command runs, then signal teller.
  const std::string script = "'" + std::string(TELLER_EXE) + "' run --out '" + dir + "' -- '" +
                             std::string(WORKLOAD_EXE) + "' hold >'" + tmp_ + "/o' 2>'" + tmp_ +
                             "/e' & p=$!; for i in $(seq 100); do grep -q holding '" + tmp_ +
                             "/o' 2>/dev/null && break; sleep 0.05; done; kill -TERM $p; wait $p; "
                             "exit $?";
  const int status = std::system(script.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 128 + 15) << ReadFile(tmp_ + "/e");
}

// The manifest keeps its fields, in their order, and lists every file of the trace
// directory with its size: what `teller run` wrote before the launcher became a binary of
// its own (src/cli/main.cc).
TEST_F(RunE2eTest, ManifestHasEveryFieldAndListsEveryFileWithItsSize) {
  const std::string dir = tmp_ + "/manifest";
  const Outcome o = Teller("run --out '" + dir + "' -- '" + std::string(WORKLOAD_EXE) + "'");
  ASSERT_EQ(o.exit_code, kExitCode) << o.err;
  EXPECT_NE(o.err.find("trace written to " + dir), std::string::npos) << o.err;
  const std::string manifest = ReadFile(dir + "/manifest.json");
  size_t at = 0;
  for (const char* key : {"format",
                          "format_version",
                          "teller_version",
                          "command",
                          "cwd",
                          "host",
                          "clock",
                          "start_realtime_ns",
                          "start_monotonic_ns",
                          "flush_ms",
                          "python_hooks",
                          "nvtx_injection",
                          "cuda_injection",
                          "finished",
                          "pid",
                          "end_realtime_ns",
                          "end_monotonic_ns",
                          "exit_code",
                          "signal",
                          "stdout_lines",
                          "stderr_lines",
                          "files"}) {
    const size_t next = manifest.find("\"" + std::string(key) + "\":", at);
    EXPECT_NE(next, std::string::npos) << key << " missing or out of order in " << manifest;
    if (next != std::string::npos) at = next;
  }
  EXPECT_EQ(manifest.rfind("{\"format\":\"teller-run-manifest\",\"format_version\":1,", 0), 0u)
      << manifest;
  EXPECT_NE(manifest.find("\"command\":[\"" + std::string(WORKLOAD_EXE) + "\"]"), std::string::npos)
      << manifest;
  EXPECT_NE(manifest.find("libteller_inject.so\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"exit_code\":7,\"signal\":0"), std::string::npos) << manifest;
  // Every raw trace and both logs, with the sizes they have on disk, and nothing else.
  auto files = raw::ListRawFiles(dir);
  ASSERT_TRUE(files.ok()) << files.status().message();
  std::vector<std::string> listed = {"logs/stderr.log", "logs/stdout.log"};
  for (const std::string& f : files.value()) listed.push_back(f.substr(dir.size() + 1));
  for (const std::string& rel : listed) {
    struct stat st;
    ASSERT_EQ(stat((dir + "/" + rel).c_str(), &st), 0) << rel;
    EXPECT_NE(manifest.find("{\"path\":\"" + rel + "\",\"kind\":\"" +
                            (rel[0] == 'l' ? "log" : "raw_trace") +
                            "\",\"bytes\":" + std::to_string(st.st_size) + "}"),
              std::string::npos)
        << rel << " in " << manifest;
  }
  size_t entries = 0;
  for (size_t p = manifest.find("{\"path\":"); p != std::string::npos;
       p = manifest.find("{\"path\":", p + 1)) {
    ++entries;
  }
  EXPECT_EQ(entries, listed.size()) << manifest;
  EXPECT_EQ(files.value().size(), 3u);
}

TEST_F(RunE2eTest, RunWithoutACommandIsAClearErrorAndCreatesNothing) {
  for (const std::string& args : {std::string("run"), std::string("run --out '") + tmp_ + "/x'",
                                  std::string("run --out '") + tmp_ + "/x' --"}) {
    const Outcome o = Teller(args);
    EXPECT_EQ(o.exit_code, 2) << args;
    EXPECT_NE(o.err.find("teller run: no command given"), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("usage: teller run"), std::string::npos) << o.err;
    struct stat st;
    EXPECT_NE(stat((tmp_ + "/x").c_str(), &st), 0) << "no trace directory for " << args;
  }
}

// `teller run` starts the program from a small binary: none of the analysis libraries
// (whose loading and static initialisers cost about 90 ms before every traced program)
// is mapped into the launcher while the program runs. The program reads the launcher's
// (its parent's) memory map.
TEST_F(RunE2eTest, TheLauncherLoadsNoAnalysisLibrary) {
  const Outcome o = Teller("run --out '" + tmp_ + "/maps' -- sh -c 'cat /proc/$PPID/maps'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  ASSERT_NE(o.out.find("libc"), std::string::npos) << o.out;
  for (const char* heavy : {"xgboost", "blas", "torch", "libc10", "gomp", "simdjson", "libz.",
                            "deflate", "teller-analyze"}) {
    EXPECT_EQ(o.out.find(heavy), std::string::npos) << heavy << " is mapped:\n" << o.out;
  }
}

// The analysis commands are exec'd in teller-analyze beside `teller`; the user's commands
// and their outcomes are those of one executable. Without teller-analyze, run and dump
// still work and the others say what is missing.
TEST_F(RunE2eTest, TheFrontHandsAnalysisCommandsOnAndRunsAlone) {
  Outcome o = Teller("inspect --help");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("usage: teller inspect"), std::string::npos) << o.out;
  o = Teller("no-such-command");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("teller: unknown command 'no-such-command'"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("usage: teller <command>"), std::string::npos) << o.err;
  o = Teller("");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("usage: teller <command>"), std::string::npos) << o.err;
  o = Teller("help");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("run [--out DIR]"), std::string::npos) << o.out;
  o = Teller("version");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out.rfind("teller ", 0), 0u) << o.out;

  // A copy of the front alone in a folder.
  const std::string alone = tmp_ + "/alone";
  ASSERT_EQ(std::system(("mkdir -p '" + alone + "/bin' && cp '" + std::string(TELLER_EXE) + "' '" +
                         alone + "/bin/teller'")
                            .c_str()),
            0);
  o = Shell("", alone + "/bin/teller", "inspect '" + tmp_ + "'");
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_NE(o.err.find("cannot execute " + alone + "/bin/teller-analyze"), std::string::npos)
      << o.err;
  o = Shell("", alone + "/bin/teller", "run --out '" + tmp_ + "/alone-trace' -- sh -c 'exit 3'");
  EXPECT_EQ(o.exit_code, 3) << o.err;
  EXPECT_NE(o.err.find("libteller_inject.so not found; collecting logs only"), std::string::npos)
      << o.err;
  EXPECT_NE(ReadFile(tmp_ + "/alone-trace/manifest.json").find("\"exit_code\":3"),
            std::string::npos);
  o = Shell("", alone + "/bin/teller", "dump '" + tmp_ + "/alone-trace'");
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

TEST_F(RunE2eTest, PartialLastLineAndCarriageReturnsAreLogged) {
  const std::string dir = tmp_ + "/lines";
  const Outcome o = Teller("run --out '" + dir + "' -- printf 'one\\r\\ntwo\\nlast-no-newline'");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out, "one\r\ntwo\nlast-no-newline") << "the terminal gets the bytes unchanged";
  const std::string log = ReadFile(dir + "/logs/stdout.log");
  std::istringstream lines(log);
  std::vector<std::string> texts;
  for (std::string line; std::getline(lines, line);)
    texts.push_back(line.substr(line.find(' ') + 1));
  EXPECT_EQ(texts, (std::vector<std::string>{"one", "two", "last-no-newline"}));
}

}  // namespace
}  // namespace teller
