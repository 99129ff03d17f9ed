// Deviations shared with the operators around them (include/teller/localize/shared.h).
#include "teller/localize/shared.h"

namespace teller::localize {

std::vector<uint8_t> SharedDeviations(const std::vector<uint32_t>& op,
                                      const std::vector<uint8_t>& deviating) {
  const size_t n = op.size();
  std::vector<uint8_t> shared(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (deviating[i] == 0) continue;
    size_t found = 0, deviate = 0;
    // Before it, then after it: the nearest instances of other operators on each side.
    for (int side = -1; side <= 1; side += 2) {
      size_t taken = 0;
      for (size_t step = 1; step <= kSharedLookAside && taken < kSharedNeighbours; ++step) {
        if (side < 0 ? step > i : i + step >= n) break;
        const size_t j = side < 0 ? i - step : i + step;
        if (op[j] == op[i]) continue;
        ++taken;
        deviate += deviating[j] != 0;
      }
      found += taken;
    }
    shared[i] = found >= kSharedNeighbours && 2 * deviate >= found;
  }
  return shared;
}

std::vector<uint8_t> ContendedDeviations(const std::vector<ConcurrentCover>& cover,
                                         const std::vector<uint8_t>& deviating) {
  const size_t n = cover.size();
  std::vector<uint8_t> contended(n, 0);
  size_t usual = 0;
  std::array<size_t, kConcurrentClasses> usually_covered{};
  for (size_t i = 0; i < n; ++i) {
    if (deviating[i] != 0) continue;
    ++usual;
    for (size_t c = 0; c < kConcurrentClasses; ++c)
      usually_covered[c] += cover[i][c] >= kContendedShare;
  }
  if (usual < kMinUsualInstances) return contended;
  for (size_t i = 0; i < n; ++i) {
    if (deviating[i] == 0) continue;
    for (size_t c = 0; c < kConcurrentClasses; ++c) {
      const bool qualifies =
          cover[i][c] >= kContendedShare &&
          static_cast<double>(usually_covered[c]) <= kUsualContention * static_cast<double>(usual);
      if (qualifies && (contended[i] == 0 || cover[i][c] > cover[i][contended[i] - 1])) {
        contended[i] = static_cast<uint8_t>(c + 1);
      }
    }
  }
  return contended;
}

std::string_view ConcurrentClassName(size_t cls) {
  static constexpr std::string_view kNames[kConcurrentClasses] = {
      "compute kernels", "communication kernels", "copies", "memsets"};
  return cls < kConcurrentClasses ? kNames[cls] : std::string_view("?");
}

}  // namespace teller::localize
