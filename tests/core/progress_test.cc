// The progress line (core/progress.h), driven by a hand clock: what is drawn, when, and
// that it is erased when the work ends. The figures in the lines are worked out by hand.
#include "teller/core/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace teller {
namespace {

constexpr int64_t kMs = 1'000'000;

struct Screen {
  int64_t now = 0;
  std::vector<std::string> writes;
  ProgressDisplay display;
  explicit Screen(ProgressDisplay::Options o = {})
      : display([this](std::string_view s) { writes.emplace_back(s); }, [this] { return now; }, o) {
  }
};

class InstalledDisplay {
 public:
  explicit InstalledDisplay(ProgressDisplay* d) { SetProgressDisplay(d); }
  ~InstalledDisplay() { SetProgressDisplay(nullptr); }
};

TEST(ProgressTest, ShortWorkIsNeverShown) {
  Screen screen;
  InstalledDisplay installed(&screen.display);
  {
    ProgressTask task("importing a.json", 1000, ProgressUnit::kBytes);
    screen.now = 499 * kMs;  // just under the default delay of 500 ms
    task.Set(900);
  }
  // Nothing drawn, so nothing to erase either: a quick command's stderr is unchanged.
  EXPECT_TRUE(screen.writes.empty());
}

TEST(ProgressTest, LongWorkIsDrawnAtMostEveryIntervalAndErasedAtTheEnd) {
  Screen screen;
  InstalledDisplay installed(&screen.display);
  {
    ProgressTask task("importing a.json", 270'000'000, ProgressUnit::kBytes);
    screen.now = 600 * kMs;
    task.Set(120'000'000);  // 120/270 = 44.4%: "44%"; 120 MB and 270 MB
    ASSERT_EQ(screen.writes.size(), 1u);
    EXPECT_EQ(screen.writes[0], "\rimporting a.json 44% (120 of 270 MB), 0.6 s\033[K");
    screen.now = 650 * kMs;  // 50 ms after the last draw: under the 100 ms interval
    task.Set(130'000'000);
    EXPECT_EQ(screen.writes.size(), 1u);
    screen.now = 700 * kMs;
    task.Set(5'000'000'000);  // past the total: shown as done, never above 100%
    ASSERT_EQ(screen.writes.size(), 2u);
    EXPECT_EQ(screen.writes[1], "\rimporting a.json 100% (270 of 270 MB), 0.7 s\033[K");
  }
  ASSERT_EQ(screen.writes.size(), 3u);
  EXPECT_EQ(screen.writes[2], "\r\033[K");
}

TEST(ProgressTest, NestedWorkShowsTheWholeChainTimedFromTheOutermost) {
  Screen screen;
  InstalledDisplay installed(&screen.display);
  ProgressTask outer("importing ranks/", 64, ProgressUnit::kItems, "files");
  outer.Set(3);
  screen.now = 300 * kMs;
  {
    // Each file alone is short; the folder's import as a whole is long, so it is shown
    // once the outermost task passes the delay.
    ProgressTask inner("rank3.json", 8'500'000, ProgressUnit::kBytes);
    screen.now = 520 * kMs;
    inner.Set(1'000'000);
    ASSERT_EQ(screen.writes.size(), 1u);
    EXPECT_EQ(screen.writes[0],
              "\rimporting ranks/ 3 of 64 files > rank3.json 11% (1.0 of 8.5 MB), 0.5 s\033[K");
  }
  // Closing the inner task redraws the outer one at once (not erased: work goes on).
  ASSERT_EQ(screen.writes.size(), 2u);
  EXPECT_EQ(screen.writes[1], "\rimporting ranks/ 3 of 64 files, 0.5 s\033[K");
  screen.now = 2'000 * kMs;
  outer.Set(1234);  // above the total: capped; thousands grouped
  EXPECT_EQ(screen.display.Line(), "importing ranks/ 64 of 64 files, 2.0 s");
}

TEST(ProgressTest, UnknownTotalsAndLongLinesStayReadable) {
  ProgressDisplay::Options o;
  o.delay_ns = 0;
  o.width = 30;
  Screen screen(o);
  InstalledDisplay installed(&screen.display);
  ProgressTask task("reconstructing", 0, ProgressUnit::kItems, "threads");
  screen.now = 100 * kMs;
  task.Set(12345);
  // The 38 characters of "reconstructing (12,345 threads), 0.1 s" are over the width of
  // 30: the middle is cut, both ends kept (13 + "..." + 14 = 30 columns).
  ASSERT_EQ(screen.writes.size(), 2u);  // drawn at once (no delay), then after 100 ms
  EXPECT_EQ(screen.writes[0], "\rreconstructing, 0.0 s\033[K");
  EXPECT_EQ(screen.writes[1], "\rreconstructin...hreads), 0.1 s\033[K");
  EXPECT_EQ(screen.display.Line(), "reconstructin...hreads), 0.1 s");
}

TEST(ProgressTest, WithoutADisplayTasksDoNothing) {
  Screen screen;
  {
    ProgressTask task("importing", 10);  // no display installed
    screen.now = 10'000 * kMs;
    task.Advance(5);
  }
  EXPECT_TRUE(screen.writes.empty());
}

}  // namespace
}  // namespace teller
