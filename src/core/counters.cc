#include "teller/core/counters.h"

namespace teller {

void Counters::Touch(uint32_t slot) {
  touched_[slot] = true;
  order_.push_back(slot);
}

void Counters::AddNamed(std::string_view name, uint64_t delta) {
  if (const auto id = FindCounter(name)) {
    Add(*id, delta);
    return;
  }
  // Extras are few (one per unknown category or foreign counter): a linear search is fine.
  for (auto& [k, v] : extras_) {
    if (k == name) {
      v += delta;
      return;
    }
  }
  order_.push_back(static_cast<uint32_t>(kCounterCount + extras_.size()));
  extras_.emplace_back(std::string(name), delta);
}

uint64_t Counters::Get(std::string_view name) const {
  if (const auto id = FindCounter(name)) return Get(*id);
  for (const auto& [k, v] : extras_) {
    if (k == name) return v;
  }
  return 0;
}

std::vector<std::pair<std::string_view, uint64_t>> Counters::items() const {
  std::vector<std::pair<std::string_view, uint64_t>> out;
  out.reserve(order_.size());
  for (uint32_t slot : order_) {
    if (slot < kCounterCount) {
      out.emplace_back(kCounterTable[slot].name, values_[slot]);
    } else {
      const auto& [name, value] = extras_[slot - kCounterCount];
      out.emplace_back(name, value);
    }
  }
  return out;
}

std::vector<CounterEntry> Counters::entries() const {
  std::vector<CounterEntry> out;
  out.reserve(order_.size());
  for (uint32_t slot : order_) {
    if (slot < kCounterCount) {
      const CounterInfo& info = kCounterTable[slot];
      out.push_back({info.name, values_[slot], info.severity, info.description});
    } else {
      const auto& [name, value] = extras_[slot - kCounterCount];
      out.push_back({name, value, CounterSeverityOf(name), {}});
    }
  }
  return out;
}

void Counters::Merge(const Counters& other) {
  for (uint32_t slot : other.order_) {
    if (slot < kCounterCount) {
      Add(static_cast<CounterId>(slot), other.values_[slot]);
    } else {
      const auto& [name, value] = other.extras_[slot - kCounterCount];
      AddNamed(name, value);
    }
  }
}

}  // namespace teller
