// Named counters for damaged or surprising input ("kineto.negative_duration",
// "reconstruct.unmatched_pop", ...). Every stage adds to the trace's counters instead of
// failing on survivable damage; every report prints them.
#ifndef TELLER_CORE_COUNTERS_H_
#define TELLER_CORE_COUNTERS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace teller {

class Counters {
 public:
  void Add(std::string_view name, uint64_t delta = 1);
  uint64_t Get(std::string_view name) const;
  // In insertion order, for stable reports.
  const std::vector<std::pair<std::string, uint64_t>>& items() const { return items_; }
  void Merge(const Counters& other);

 private:
  std::vector<std::pair<std::string, uint64_t>> items_;
};

}  // namespace teller

#endif  // TELLER_CORE_COUNTERS_H_
