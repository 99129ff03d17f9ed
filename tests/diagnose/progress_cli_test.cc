// `teller diagnose` and `teller inspect` show their long work on stderr only when it is a
// terminal (core/progress.h): run here with stderr on a real pseudo-terminal (forkpty),
// on a file, and with TELLER_PROGRESS=0. The report on stdout is the same in every case,
// and the same on one worker thread and on several (TELLER_THREADS).
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "command_test_util.h"

namespace teller {
namespace {

class ProgressCliTest : public testing::CommandTest {
 protected:
  ProgressCliTest() : CommandTest("teller-progress-cli-") {}

  // `sh -c script` with stdin, stdout and stderr on a new pseudo-terminal; the script
  // redirects stdout itself. Returns what reached the terminal; *status the exit status.
  std::string OnTerminal(const std::string& script, int* status) {
    int master = -1;
    winsize ws{};
    ws.ws_col = 200;  // wide enough that no line is shortened
    ws.ws_row = 24;
    const pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    std::string seen;
    if (pid < 0) return seen;
    char buf[4096];
    while (true) {
      pollfd p{master, POLLIN, 0};
      if (poll(&p, 1, 120'000) <= 0) break;
      const ssize_t n = read(master, buf, sizeof buf);
      if (n > 0) {
        seen.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;  // EIO: the child side closed
      }
    }
    close(master);
    int st = 0;
    waitpid(pid, &st, 0);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return seen;
  }

  std::string Run() {
    // A small simulated run: a folder of raw files, one per process.
    const testing::Outcome sim = Shell(
        "", TELLER_BIN,
        "simulate --profile vllm-v1-online --requests 4 --layers 4 --output-median 8 --seed 3 "
        "--out '" +
            tmp_ + "/run'");
    EXPECT_EQ(sim.exit_code, 0) << sim.err;
    return tmp_ + "/run";
  }
};

// The numbers on every drawn line: "N of M" never past M.
void ExpectCountsWithinTotals(const std::string& screen) {
  const std::regex of(R"(([0-9,]+) of ([0-9,]+))");
  auto number = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), ','), s.end());
    return std::stoull(s);
  };
  for (auto it = std::sregex_iterator(screen.begin(), screen.end(), of);
       it != std::sregex_iterator(); ++it) {
    EXPECT_LE(number((*it)[1]), number((*it)[2])) << (*it)[0];
  }
}

TEST_F(ProgressCliTest, ATerminalSeesTheStagesAndTheLineIsErasedAtTheEnd) {
  const std::string run = Run();
  // The files the import counts: the run's raw files.
  const testing::Outcome ls = Shell("", "/bin/sh", "-c \"ls '" + run + "'/*.tlr | wc -l\"");
  const int files = std::atoi(ls.out.c_str());
  ASSERT_GT(files, 0);
  int status = -1;
  const std::string screen =
      OnTerminal("TELLER_PROGRESS_DELAY_MS=0 exec '" + std::string(TELLER_BIN) + "' diagnose '" +
                     run + "' > '" + tmp_ + "/terminal.txt'",
                 &status);
  ASSERT_EQ(status, 0) << screen;
  // Each stage is drawn once it starts (no delay asked for), from the top of the line.
  EXPECT_NE(screen.find("\rimporting " + run + " 0 of " + std::to_string(files) + " files"),
            std::string::npos)
      << screen;
  EXPECT_NE(screen.find("\rreconstructing 0 of 8 stages"), std::string::npos) << screen;
  EXPECT_NE(screen.find(" operator instances, "), std::string::npos) << screen;
  EXPECT_NE(screen.find("\rdeciding steps and causes"), std::string::npos) << screen;
  ExpectCountsWithinTotals(screen);
  // The work is over before the report is printed: the last thing on the terminal is the
  // erased line (the report went to the file).
  ASSERT_GE(screen.size(), 4u);
  EXPECT_EQ(screen.substr(screen.size() - 4), "\r\033[K");
  // The report itself is unchanged by the progress.
  const testing::Outcome plain = Shell("", TELLER_BIN, "diagnose '" + run + "'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(testing::ReadFile(tmp_ + "/terminal.txt"), plain.out);
  // stderr was a file there: nothing of the progress in it.
  EXPECT_EQ(plain.err.find('\r'), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.find("reconstructing"), std::string::npos) << plain.err;
}

TEST_F(ProgressCliTest, TellerProgressZeroSilencesATerminalAndOneForcesAFile) {
  const std::string run = Run();
  int status = -1;
  const std::string screen =
      OnTerminal("TELLER_PROGRESS=0 TELLER_PROGRESS_DELAY_MS=0 exec '" + std::string(TELLER_BIN) +
                     "' inspect '" + run + "' > /dev/null",
                 &status);
  ASSERT_EQ(status, 0) << screen;
  EXPECT_EQ(screen, "");
  const testing::Outcome forced =
      Shell("TELLER_PROGRESS=1 TELLER_PROGRESS_DELAY_MS=0", TELLER_BIN, "inspect '" + run + "'");
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("\rreconstructing 0 of 8 stages"), std::string::npos) << forced.err;
}

TEST_F(ProgressCliTest, AnErrorIsPrintedOnAClearedLine) {
  // A Kineto file cut in the middle of its events: the parse fails after it was drawn.
  const std::string bad = tmp_ + "/cut.json";
  const testing::Outcome w = Shell(
      "", "/bin/sh",
      "-c \"printf '{\\\"traceEvents\\\":[{\\\"ph\\\":\\\"X\\\",\\\"name\\\":\\\"a\\\",' > '" +
          bad + "'\"");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  int status = -1;
  const std::string screen = OnTerminal(
      "TELLER_PROGRESS_DELAY_MS=0 exec '" + std::string(TELLER_BIN) + "' diagnose '" + bad + "'",
      &status);
  EXPECT_EQ(status, 1) << screen;
  const size_t error = screen.find("teller diagnose: ");
  ASSERT_NE(error, std::string::npos) << screen;
  // The parse was drawn, and what precedes the message ends with the erase of its line.
  const size_t parsing = screen.find("\rparsing " + bad + " 0% (0.0 of 0.0 MB)");
  ASSERT_NE(parsing, std::string::npos) << screen;
  EXPECT_LT(parsing, error);
  ASSERT_GE(error, 4u) << screen;
  EXPECT_EQ(screen.substr(error - 4, 4), "\r\033[K") << screen;
}

TEST_F(ProgressCliTest, TheReportIsTheSameOnOneWorkerAndOnSeveral) {
  // Families are judged on the cores available (core/parallel.h), each into its own
  // slot: the report must not depend on how many there are.
  const std::string run = Run();
  std::vector<std::string> traces = {run};
  const std::string real =
      std::string(TELLER_REAL_DATA_DIR) + "/hta/trace_diff__test__test.json.gz";
  if (access(real.c_str(), R_OK) == 0) traces.push_back(real);
  for (const std::string& t : traces) {
    std::string reports[2];
    for (int k = 0; k < 2; ++k) {
      const std::string json = tmp_ + "/w" + std::to_string(k) + ".json";
      const testing::Outcome o = Shell(k == 0 ? "TELLER_THREADS=1" : "TELLER_THREADS=3", TELLER_BIN,
                                       "diagnose '" + t + "' --json '" + json + "'");
      ASSERT_EQ(o.exit_code, 0) << o.err;
      reports[k] = testing::ReadFile(json);
    }
    ASSERT_GT(reports[0].size(), 100u) << t;
    EXPECT_EQ(reports[0], reports[1]) << t;
  }
}

}  // namespace
}  // namespace teller
