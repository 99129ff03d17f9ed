// Counters for damaged or surprising input ("kineto.negative_duration",
// "reconstruct.unmatched_pop", ...). Every stage adds to the trace's counters instead of
// failing on survivable damage; every report prints them. The counters themselves are the
// rows of counter_registry.h; values live in an array indexed by CounterId, so adding in a
// per-event loop is an index, not a string lookup.
#ifndef TELLER_CORE_COUNTERS_H_
#define TELLER_CORE_COUNTERS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "teller/core/counter_registry.h"

namespace teller {

// One counter as a report prints it.
struct CounterEntry {
  std::string_view name;
  uint64_t value = 0;
  CounterSeverity severity = CounterSeverity::kWarning;
  std::string_view description;  // empty for an extra
};

class Counters {
 public:
  void Add(CounterId id, uint64_t delta = 1) {
    const size_t i = static_cast<size_t>(id);
    if (!touched_[i]) Touch(static_cast<uint32_t>(i));
    values_[i] += delta;
  }
  // By name, for names that are data: a row of the registry goes to its id; any other name
  // (a per-detail extra such as "kineto.unknown_category:overhead", a counter of another
  // collector version) is kept under that name.
  void AddNamed(std::string_view name, uint64_t delta = 1);

  uint64_t Get(CounterId id) const { return values_[static_cast<size_t>(id)]; }
  uint64_t Get(std::string_view name) const;

  // Every counter added to (zero or not) in the order of its first Add, for stable
  // reports. Names point into the registry or into this object (valid until it changes).
  std::vector<std::pair<std::string_view, uint64_t>> items() const;
  // The same with each counter's severity and description.
  std::vector<CounterEntry> entries() const;

  void Merge(const Counters& other);

 private:
  void Touch(uint32_t slot);

  std::array<uint64_t, kCounterCount> values_{};
  std::array<bool, kCounterCount> touched_{};
  // First-Add order: a slot below kCounterCount is a CounterId, one above is
  // extras_[slot - kCounterCount].
  std::vector<uint32_t> order_;
  std::vector<std::pair<std::string, uint64_t>> extras_;
};

}  // namespace teller

#endif  // TELLER_CORE_COUNTERS_H_
