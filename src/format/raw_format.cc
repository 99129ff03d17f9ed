#include "teller/format/raw_format.h"

#include "teller/core/crc32c.h"

namespace teller::raw {

std::string_view KindName(EventKind kind) {
  switch (kind) {
    case EventKind::kNvtxPush:
      return "nvtx_push";
    case EventKind::kNvtxPop:
      return "nvtx_pop";
    case EventKind::kNvtxStart:
      return "nvtx_start";
    case EventKind::kNvtxEnd:
      return "nvtx_end";
    case EventKind::kNvtxMark:
      return "nvtx_mark";
    case EventKind::kNvtxNameCategory:
      return "nvtx_name_category";
    case EventKind::kNvtxNameThread:
      return "nvtx_name_thread";
    case EventKind::kNvtxDomainCreate:
      return "nvtx_domain_create";
    case EventKind::kNvtxDomainDestroy:
      return "nvtx_domain_destroy";
    case EventKind::kCudaRuntime:
      return "cuda_runtime";
    case EventKind::kCudaDriver:
      return "cuda_driver";
    case EventKind::kKernel:
      return "kernel";
    case EventKind::kMemcpy:
      return "memcpy";
    case EventKind::kMemset:
      return "memset";
    case EventKind::kSync:
      return "sync";
    case EventKind::kOverhead:
      return "overhead";
    case EventKind::kCollectorGap:
      return "collector_gap";
    case EventKind::kInvalid:
      break;
  }
  return "unknown";
}

uint32_t BlockHeaderCrc(const BlockHeader& h) {
  const uint32_t crc = Crc32c(&h, 12);
  return Crc32c(&h.sequence, sizeof(h.sequence), crc);
}

uint32_t TscAnchorCrc(const TscAnchor& a) { return Crc32c(&a, offsetof(TscAnchor, crc)); }

}  // namespace teller::raw
