#include "teller/core/counters.h"

namespace teller {

void Counters::Add(std::string_view name, uint64_t delta) {
  for (auto& [k, v] : items_) {
    if (k == name) {
      v += delta;
      return;
    }
  }
  items_.emplace_back(std::string(name), delta);
}

uint64_t Counters::Get(std::string_view name) const {
  for (const auto& [k, v] : items_) {
    if (k == name) return v;
  }
  return 0;
}

void Counters::Merge(const Counters& other) {
  for (const auto& [k, v] : other.items_) Add(k, v);
}

}  // namespace teller
