// The node type tags of steps.jsonl's `type` column (docs/dataset-format.md): the symbol
// classes of TPE (method.md §5). One numbering for the dataset writer and its readers.
#ifndef TELLER_DATASET_TYPE_TAGS_H_
#define TELLER_DATASET_TYPE_TAGS_H_

#include <cstdint>

namespace teller::dataset {

enum class TypeTag : uint8_t {
  kStep = 0,
  kFrontend = 1,
  kBackend = 2,
  kComm = 3,
  kRuntime = 4,
  kDriver = 5,
  kKernel = 6,
  kMemory = 7,  // memcpy, memset
  kSync = 8,
  kMark = 9,
  kGpuAnnotation = 10,
};
inline constexpr int kNumTypeTags = 11;

}  // namespace teller::dataset

#endif  // TELLER_DATASET_TYPE_TAGS_H_
