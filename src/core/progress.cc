#include "teller/core/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "teller/core/clock.h"

namespace teller {
namespace {

std::atomic<ProgressDisplay*> g_display{nullptr};

// 1234567 -> "1,234,567": counts a user reads at a glance.
std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Bytes in the unit that suits the total: "12.5 of 270 MB".
std::string BytesPair(uint64_t done, uint64_t total) {
  const double scale = total >= 10'000'000'000ULL ? 1e9 : 1e6;
  const char* unit = scale == 1e9 ? "GB" : "MB";
  auto fmt = [scale](uint64_t v) {
    const double x = static_cast<double>(v) / scale;
    char buf[32];
    std::snprintf(buf, sizeof buf, x < 10 ? "%.1f" : "%.0f", x);
    return std::string(buf);
  };
  return fmt(done) + " of " + fmt(total) + " " + unit;
}

}  // namespace

ProgressDisplay::ProgressDisplay(Write write, Clock clock, Options options)
    : write_(std::move(write)), clock_(std::move(clock)), options_(options) {}

int ProgressDisplay::Open(std::string label, std::string noun, uint64_t total, ProgressUnit unit) {
  std::lock_guard<std::mutex> lock(mu_);
  const int id = next_id_++;
  open_.push_back({id, std::move(label), std::move(noun), total, 0, unit, clock_()});
  MaybeDraw(false);
  return id;
}

void ProgressDisplay::Update(int id, uint64_t done) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Task& t : open_) {
    if (t.id == id) t.done = done;
  }
  MaybeDraw(false);
}

void ProgressDisplay::Close(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(
      std::remove_if(open_.begin(), open_.end(), [id](const Task& t) { return t.id == id; }),
      open_.end());
  if (open_.empty()) {
    // The work is done: erase the line, so that what the command prints next starts on a
    // clean line and nothing of the progress stays in the terminal's scrollback.
    if (drawn_) write_("\r\033[K");
    drawn_ = false;
    return;
  }
  MaybeDraw(true);
}

std::string ProgressDisplay::Line() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LineLocked(clock_());
}

std::string ProgressDisplay::LineLocked(int64_t now) const {
  if (open_.empty()) return {};
  std::string line;
  for (const Task& t : open_) {
    if (!line.empty()) line += " > ";
    line += t.label;
    if (t.unit == ProgressUnit::kBytes && t.total > 0) {
      const uint64_t done = std::min(t.done, t.total);
      line += " " + std::to_string(done * 100 / t.total) + "% (" + BytesPair(done, t.total) + ")";
    } else if (t.total > 0) {
      line += " " + Grouped(std::min(t.done, t.total)) + " of " + Grouped(t.total);
      if (!t.noun.empty()) line += " " + t.noun;
    } else if (t.done > 0) {
      line += " (" + Grouped(t.done) + (t.noun.empty() ? "" : " " + t.noun) + ")";
    }
  }
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, ", %.1f s",
                static_cast<double>(now - open_.front().opened_ns) / 1e9);
  line += elapsed;
  if (options_.width > 8 && line.size() > options_.width) {
    // Keep both ends: the start says what runs, the end how far it is.
    const size_t keep = options_.width - 3;
    line = line.substr(0, keep / 2) + "..." + line.substr(line.size() - (keep - keep / 2));
  }
  return line;
}

void ProgressDisplay::MaybeDraw(bool force) {
  if (open_.empty()) return;
  const int64_t now = clock_();
  if (now - open_.front().opened_ns < options_.delay_ns) return;
  if (!force && drawn_ && now - last_draw_ns_ < options_.interval_ns) return;
  write_("\r" + LineLocked(now) + "\033[K");
  drawn_ = true;
  last_draw_ns_ = now;
}

void SetProgressDisplay(ProgressDisplay* display) {
  g_display.store(display, std::memory_order_release);
}

std::unique_ptr<ProgressDisplay> TerminalProgress() {
  const char* mode = std::getenv("TELLER_PROGRESS");
  const bool forced = mode != nullptr && std::strcmp(mode, "1") == 0;
  if (mode != nullptr && std::strcmp(mode, "0") == 0) return nullptr;
  const bool terminal = isatty(STDERR_FILENO) == 1;
  if (!terminal && !forced) return nullptr;
  ProgressDisplay::Options options;
  if (const char* delay = std::getenv("TELLER_PROGRESS_DELAY_MS")) {
    char* end = nullptr;
    const long ms = std::strtol(delay, &end, 10);
    if (end != delay && *end == '\0' && ms >= 0) options.delay_ns = ms * 1'000'000LL;
  }
  winsize ws{};
  if (terminal && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) {
    options.width = ws.ws_col - 1;
  }
  return std::make_unique<ProgressDisplay>(
      [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stderr);
        std::fflush(stderr);
      },
      [] { return EventClockNs(); }, options);
}

ScopedTerminalProgress::ScopedTerminalProgress() : display_(TerminalProgress()) {
  SetProgressDisplay(display_.get());
}

ScopedTerminalProgress::~ScopedTerminalProgress() { SetProgressDisplay(nullptr); }

ProgressTask::ProgressTask(std::string label, uint64_t total, ProgressUnit unit, std::string noun)
    : display_(g_display.load(std::memory_order_acquire)) {
  if (display_ != nullptr) id_ = display_->Open(std::move(label), std::move(noun), total, unit);
}

ProgressTask::~ProgressTask() {
  if (display_ != nullptr) display_->Close(id_);
}

void ProgressTask::Set(uint64_t done) {
  done_ = done;
  if (display_ != nullptr) display_->Update(id_, done);
}

}  // namespace teller
