// Deviations shared with the operators around them (docs/localization.md, "Shared
// deviations"). A cause that slows whatever runs at a time (another stream or process
// contending for the GPU, clocks lowered, the host thread paused) makes consecutive
// instances of different operators deviate together; a fault of one operator leaves the
// operators between its instances at their usual time.
#ifndef TELLER_LOCALIZE_SHARED_H_
#define TELLER_LOCALIZE_SHARED_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace teller::localize {

// Given one process's instances of one measure in time order, each as its operator and
// whether it deviates: a deviation is shared when at least half of its nearest instances of
// other operators (up to kSharedNeighbours before it and as many after it, looking at most
// kSharedLookAside instances each way) deviate too, and at least kSharedNeighbours of them
// were found. Returns a flag per instance.
inline constexpr size_t kSharedNeighbours = 4;
inline constexpr size_t kSharedLookAside = 256;
std::vector<uint8_t> SharedDeviations(const std::vector<uint32_t>& op,
                                      const std::vector<uint8_t>& deviating);

}  // namespace teller::localize

#endif  // TELLER_LOCALIZE_SHARED_H_
