// Small helpers of fault injection: names, numbers and ranges in the words of its notes.
#include "src/inject/inject_internal.h"

namespace teller::inject::internal {

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

bool IsHostEvent(EventType t) {
  return t == EventType::kPush || t == EventType::kPop || t == EventType::kRange ||
         t == EventType::kMark || IsHostCall(t);
}

bool IsAllocatorCall(std::string_view name) { return teller::IsAllocatorCall(ClassifyCall(name)); }

std::string FormatNs(double ns) {
  char buf[48];
  const double a = std::fabs(ns);
  if (a >= kSec) {
    std::snprintf(buf, sizeof buf, "%.2f s", ns / kSec);
  } else if (a >= 10 * kMs) {
    std::snprintf(buf, sizeof buf, "%.1f ms", ns / kMs);
  } else if (a >= kMs) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / kMs);
  } else if (a >= 10 * kUs) {
    std::snprintf(buf, sizeof buf, "%.0f us", ns / kUs);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", ns / kUs);
  }
  return buf;
}

std::string FormatFactor(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", f);
  return buf;
}

int64_t MedianNs(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string ShortKernel(std::string_view name) {
  // "void vllm::fused_add_rms_norm_kernel<...>(...)" -> "vllm::fused_add_rms_norm_kernel..."
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  const size_t cut = name.find_first_of("<(");
  std::string s(name.substr(0, std::min(cut, size_t{48})));
  if (s.size() < name.size()) s += "...";
  return s;
}

// "3-9", "3", "3-5, 8, 11-12".
std::string SeqRanges(const std::vector<uint64_t>& seqs) {
  std::string out;
  for (size_t i = 0; i < seqs.size();) {
    size_t j = i;
    while (j + 1 < seqs.size() && seqs[j + 1] == seqs[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(seqs[i]);
    if (j > i) out += "-" + std::to_string(seqs[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace teller::inject::internal
