// The raw per-process trace format: the on-disk contract between the collector
// (and the simulator) and every reader. See docs/raw-format.md for the full
// description; this header is the normative layout.
//
// A file is a sequence of chunks. Each chunk is a 32-byte ChunkHeader followed by
// `payload_bytes` bytes of payload. The header carries its own checksum and the
// payload's, so a reader can tell a torn write (the process was killed in the
// middle of a write) or flipped bytes from good data, stop there, and resynchronise
// on the next intact chunk. Nothing ever rewrites earlier bytes: any prefix of a file
// is a valid file.
//
// All integers are little-endian. Strings are UTF-8 and referenced by 32-bit ids that
// are unique within one file (id 0 is the empty string). The same text may appear
// under several ids (each recording thread interns on its own); readers intern by
// content.
#ifndef TELLER_FORMAT_RAW_FORMAT_H_
#define TELLER_FORMAT_RAW_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace teller::raw {

// "TLRC" read as a little-endian u32.
inline constexpr uint32_t kChunkMagic = 0x43524C54u;
inline constexpr uint16_t kFormatVersion = 1;
// The first chunk of every file is a kFileHeader chunk whose payload starts with this.
inline constexpr std::string_view kFileSignature = "TELLER-RAW-TRACE";
inline constexpr const char* kFileExtension = ".tlr";

enum class ChunkType : uint16_t {
  kFileHeader = 1,   // signature, format version, record size
  kProcessInfo = 2,  // key/value pairs: host, pid, ppid, cmdline, ranks, ...
  kClockAnchor = 3,  // ClockAnchor records
  kStrings = 4,      // (u32 id, u32 length, bytes) entries
  kEvents = 5,       // EventRecord records
  kCounters = 6,     // key/value pairs of collector counters (name -> decimal value)
  kEnd = 7,          // clean end of the process; payload is a kCounters-style map
};

struct ChunkHeader {
  uint32_t magic;          // kChunkMagic
  uint16_t type;           // ChunkType
  uint16_t record_bytes;   // size of one record for fixed-record chunks, else 0
  uint32_t payload_bytes;  // bytes following this header
  uint32_t record_count;   // number of records/entries in the payload
  uint64_t sequence;       // per-file chunk sequence number, starting at 0
  uint32_t payload_crc;    // CRC-32C of the payload
  uint32_t header_crc;     // CRC-32C of the 28 bytes before this field
};
static_assert(sizeof(ChunkHeader) == 32);

// Largest payload a writer produces; readers treat larger sizes as damage.
inline constexpr uint32_t kMaxPayloadBytes = 64u << 20;

// CLOCK_REALTIME and CLOCK_MONOTONIC read back to back, so that a reader can map
// the event clock (CLOCK_MONOTONIC, see below) to wall time across processes and
// nodes. Written at start and periodically.
struct ClockAnchor {
  int64_t realtime_ns;
  int64_t monotonic_ns;
  int64_t uncertainty_ns;  // time between the two reads
  int64_t reserved;
};
static_assert(sizeof(ClockAnchor) == 32);

// The event clock: all EventRecord timestamps are CLOCK_MONOTONIC nanoseconds of
// the host that wrote the file (CUPTI timestamps are converted to it).
enum class EventKind : uint8_t {
  kInvalid = 0,
  kNvtxPush = 1,           // name, domain, start_ns; value/aux = payload; category
  kNvtxPop = 2,            // domain, start_ns
  kNvtxStart = 3,          // name, domain, start_ns, correlation = range id
  kNvtxEnd = 4,            // start_ns, correlation = range id
  kNvtxMark = 5,           // name, domain, start_ns
  kNvtxNameCategory = 6,   // name, domain, value = category id
  kNvtxNameThread = 7,     // name, value = OS thread id named
  kNvtxDomainCreate = 8,   // name = domain name, domain = its id
  kNvtxDomainDestroy = 9,  // domain
  kCudaRuntime = 16,       // aux = callback id, name, start/end, correlation, result
  kCudaDriver = 17,        // same as kCudaRuntime for the driver API
  kKernel = 32,            // name, device, context, stream, correlation, graph, grid/block
  kMemcpy = 33,            // device, context, stream, correlation, value = bytes, aux = copy kind
  kMemset = 34,            // device, context, stream, correlation, value = bytes
  kSync = 35,              // device, context, stream, correlation, aux = sync type
  kOverhead = 36,          // collector overhead intervals (CUPTI buffer flushes, ...)
};

// Flag bits of EventRecord::flags.
enum EventFlags : uint8_t {
  kFlagNone = 0,
  kFlagMessageRegistered = 1 << 0,  // the name came from a registered NVTX string
  kFlagInGraph = 1 << 1,            // GPU work launched as part of a CUDA graph
  kFlagNested = 1 << 2,             // API call made from inside another API call
  // In-process only, never on disk: start_ns still holds raw TSC ticks that the
  // collector's flusher converts to the event clock before writing.
  kFlagRawTsc = 1 << 7,
};

// NVTX payload types as carried in EventRecord::aux for NVTX events
// (the values of nvtxPayloadType_t).
enum class NvtxPayload : uint16_t {
  kNone = 0,
  kUint64 = 1,
  kInt64 = 2,
  kDouble = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat = 6,
};

// One fixed-size event. Fields that do not apply to a kind are zero.
struct EventRecord {
  uint8_t kind;          // EventKind
  uint8_t flags;         // EventFlags
  uint16_t aux;          // NVTX payload type, CUDA callback id, memcpy kind, sync type
  uint32_t name;         // string id
  uint32_t tid;          // OS thread id of the recording (host) thread
  uint32_t domain;       // NVTX domain string id (0 = default domain)
  int64_t start_ns;      // event clock
  int64_t end_ns;        // event clock; 0 for instantaneous events
  uint64_t correlation;  // CUDA correlation id, or NVTX start/end range id
  uint64_t value;        // NVTX payload bits, bytes moved, or graph node id (kernels)
  uint32_t stream;
  uint32_t device;
  uint32_t context;
  uint32_t graph_id;
  int32_t result;     // return value of API calls
  uint32_t category;  // NVTX category
  uint32_t grid[3];   // kernels: grid dimensions
  uint16_t block[3];  // kernels: block dimensions
  uint16_t reserved0;
  uint32_t shared_bytes;  // kernels: static + dynamic shared memory
};
static_assert(sizeof(EventRecord) == 96);
static_assert(offsetof(EventRecord, start_ns) == 16);
static_assert(offsetof(EventRecord, grid) == 72);

// Human-readable name of a kind, as printed by `teller dump` ("nvtx_push", ...).
std::string_view KindName(EventKind kind);

}  // namespace teller::raw

#endif  // TELLER_FORMAT_RAW_FORMAT_H_
