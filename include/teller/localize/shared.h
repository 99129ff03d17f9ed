// Deviations shared with the operators around them (docs/localization.md, "Shared
// deviations"). A cause that slows whatever runs at a time (another stream or process
// contending for the GPU, clocks lowered, the host thread paused) makes consecutive
// instances of different operators deviate together; a fault of one operator leaves the
// operators between its instances at their usual time.
#ifndef TELLER_LOCALIZE_SHARED_H_
#define TELLER_LOCALIZE_SHARED_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
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

// Contention with concurrent GPU work (docs/localization.md, "Shared deviations"). A kernel
// that runs beside other work on its device (a copy, a collective, another stream's kernel)
// shares the device's memory bandwidth and SMs with it and takes longer, whatever the
// kernel: its time was contended, not slow. Concurrent work comes in classes (compute
// kernels, communication kernels, copies, memsets). Given one family's scored GPU
// instances, each with the share of its window that each class of work on other streams of
// its device covered, and whether it deviates: a deviation is contended when some class
// covered at least kContendedShare of its window while that class covered that much of at
// most kUsualContention of the family's instances that did not deviate (at least
// kMinUsualInstances of them): it ran beside work that its usual instances ran without.
// Returns per instance 0 (not contended) or 1 + the class that contended it (of the
// classes that qualify, the one that covered most of its window).
enum class ConcurrentClass : uint8_t { kCompute = 0, kCommunication, kCopy, kMemset };
inline constexpr size_t kConcurrentClasses = 4;
// Names of the classes, as reports print them ("compute kernels", ...).
std::string_view ConcurrentClassName(size_t cls);
inline std::string_view ConcurrentClassName(ConcurrentClass cls) {
  return ConcurrentClassName(static_cast<size_t>(cls));
}
inline constexpr double kContendedShare = 0.5;
inline constexpr double kUsualContention = 0.25;
inline constexpr size_t kMinUsualInstances = 4;
using ConcurrentCover = std::array<float, kConcurrentClasses>;
std::vector<uint8_t> ContendedDeviations(const std::vector<ConcurrentCover>& cover,
                                         const std::vector<uint8_t>& deviating);

}  // namespace teller::localize

#endif  // TELLER_LOCALIZE_SHARED_H_
