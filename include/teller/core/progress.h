// Progress of long work (import, reconstruction, scoring) on one status line of a
// terminal. Library code opens a ProgressTask for each piece of long work and advances
// it; whether anything is shown is the command's choice: it installs a ProgressDisplay
// (TerminalProgress: on when stderr is a terminal) or none, and without one a task costs
// an atomic load. Work that ends before the display's delay is never shown, so quick
// commands print exactly what they did before; the line is erased when the work ends.
#ifndef TELLER_CORE_PROGRESS_H_
#define TELLER_CORE_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace teller {

// What a task counts, for how its numbers are printed.
enum class ProgressUnit : uint8_t {
  kItems,  // "1,234 of 5,678 families"
  kBytes,  // "120 of 270 MB"
};

// Draws the open tasks as one line. Thread-safe. Writes go to `write`; times come from
// `clock` (monotonic ns), both replaceable so that tests can drive it.
class ProgressDisplay {
 public:
  struct Options {
    int64_t delay_ns = 500'000'000;     // shown once the outermost open task is this old
    int64_t interval_ns = 100'000'000;  // redrawn at most this often
    size_t width = 79;                  // columns of the line (the terminal's, less one)
  };
  using Write = std::function<void(std::string_view)>;
  using Clock = std::function<int64_t()>;

  ProgressDisplay(Write write, Clock clock, Options options);

  // For ProgressTask. `label` names the work ("scoring"), `noun` what a kItems task counts
  // ("families", printed after the numbers: "scoring 12 of 40 families").
  int Open(std::string label, std::string noun, uint64_t total, ProgressUnit unit);
  void Update(int id, uint64_t done);
  void Close(int id);

  // The line as it would be drawn now (no escape codes), for tests.
  std::string Line() const;

 private:
  struct Task {
    int id;
    std::string label, noun;
    uint64_t total, done;
    ProgressUnit unit;
    int64_t opened_ns;
  };
  void MaybeDraw(bool force);
  std::string LineLocked(int64_t now) const;

  Write write_;
  Clock clock_;
  Options options_;
  mutable std::mutex mu_;
  std::vector<Task> open_;  // outermost first
  int next_id_ = 0;
  int64_t last_draw_ns_ = 0;
  bool drawn_ = false;  // a line is on the terminal
};

// The display tasks report to from now on (nullptr: none). It must outlive the tasks
// opened while it is installed; uninstall before destroying it.
void SetProgressDisplay(ProgressDisplay* display);

// The display for stderr: TELLER_PROGRESS=0 turns it off, =1 on even when stderr is not a
// terminal; otherwise it is on when stderr is a terminal. TELLER_PROGRESS_DELAY_MS sets
// how long work runs before it is shown (default 500). nullptr when off.
std::unique_ptr<ProgressDisplay> TerminalProgress();

// Installs TerminalProgress() for the lifetime of the object (a command's main).
class ScopedTerminalProgress {
 public:
  ScopedTerminalProgress();
  ~ScopedTerminalProgress();
  ScopedTerminalProgress(const ScopedTerminalProgress&) = delete;
  ScopedTerminalProgress& operator=(const ScopedTerminalProgress&) = delete;

 private:
  std::unique_ptr<ProgressDisplay> display_;
};

// One piece of long work, open from construction to destruction. `total` 0: unknown
// (only the elapsed time is shown).
class ProgressTask {
 public:
  ProgressTask(std::string label, uint64_t total, ProgressUnit unit = ProgressUnit::kItems,
               std::string noun = {});
  ~ProgressTask();
  ProgressTask(const ProgressTask&) = delete;
  ProgressTask& operator=(const ProgressTask&) = delete;

  void Set(uint64_t done);
  void Advance(uint64_t n = 1) { Set(done_ + n); }

 private:
  ProgressDisplay* display_;
  int id_ = -1;
  uint64_t done_ = 0;
};

}  // namespace teller

#endif  // TELLER_CORE_PROGRESS_H_
