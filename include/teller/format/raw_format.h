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
  // Where a thread's recording resumed after the collector dropped events (or where the
  // thread ended while dropping): value = events dropped since the previous gap of the
  // thread, correlation = whole NVTX ranges among them, aux = GapReason. Readers of the
  // block layout (below) produce these from the gap records of the file.
  kCollectorGap = 40,
};

enum class GapReason : uint16_t {
  kResumed = 0,     // recording resumed here
  kThreadExit = 1,  // the thread ended (or the process exited) while events were dropped
};

// Flag bits of EventRecord::flags.
enum EventFlags : uint8_t {
  kFlagNone = 0,
  kFlagMessageRegistered = 1 << 0,  // the name came from a registered NVTX string
  kFlagInGraph = 1 << 1,            // GPU work launched as part of a CUDA graph
  kFlagNested = 1 << 2,             // API call made from inside another API call
  // start_ns holds raw TSC ticks, not event-clock ns. Only in files of the block layout
  // (version 2), whose readers convert them with the file's TSC anchors; a reader
  // returns event-clock times with the flag cleared.
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

// ---------------------------------------------------------------------------------
// Version 2: the block layout written by the collector (docs/raw-format.md).
//
// The collector maps its file into memory (MAP_SHARED) and every recording thread
// writes its events straight into a block of the file that it owns, so that what was
// recorded is in the file (the kernel's page cache) the moment it was recorded: a
// SIGKILL, _exit, exec or crash loses nothing. A file is a sequence of blocks at
// kBlockAlign-aligned offsets, each starting with a BlockHeader; space that no block
// claimed reads as zeros.
//
// An event block holds 96-byte slots after its header; `committed` (stored with
// release ordering after the slots it covers) says how many are valid. Slots carry
// EventRecords and three kinds that only this layout uses (kSlot*, below).
inline constexpr uint32_t kBlockMagic = 0x42524C54u;  // "TLRB" read as a little-endian u32
inline constexpr uint16_t kBlockFormatVersion = 2;
inline constexpr uint32_t kBlockAlign = 4096;
inline constexpr uint32_t kBlockHeaderBytes = 128;

enum class BlockType : uint16_t {
  kFileHeader = 1,   // always at offset 0: FileHeaderBlock
  kProcessInfo = 2,  // u32 count, then key/value pairs as in a kProcessInfo chunk
  kEvents = 3,       // slots
};

struct BlockHeader {
  uint32_t magic;           // kBlockMagic
  uint16_t type;            // BlockType
  uint16_t version;         // kBlockFormatVersion
  uint32_t block_bytes;     // whole block, this header included; a multiple of kBlockAlign
  uint32_t header_crc;      // CRC-32C of bytes 0..11 continued over `sequence`
  uint64_t sequence;        // claim order of the block in its process
  uint32_t committed;       // valid slots (events) or payload bytes (process info)
  uint32_t owner_tid;       // thread that owns the block now (events)
  uint64_t owner_serial;    // that thread's serial number in the process
  uint64_t dropped_events;  // the owner's events dropped so far (cumulative)
  uint64_t dropped_ranges;  // ... of which whole NVTX ranges (cumulative)
  int64_t claim_tsc;        // TSC and CLOCK_MONOTONIC read when the block was claimed
  int64_t claim_mono;
  uint8_t reserved[56];
};
static_assert(sizeof(BlockHeader) == kBlockHeaderBytes);

// Slot kinds of event blocks (EventRecord::kind), never returned by readers.
inline constexpr uint8_t kSlotString = 0xF0;   // name = id, value = byte length; the
                                               // text fills the next ceil(len/96) slots
inline constexpr uint8_t kSlotGap = 0xF1;      // tid, start_ns, aux = GapReason,
                                               // value/correlation = cumulative events/
                                               // ranges dropped, end_ns = thread serial
inline constexpr uint8_t kSlotSegment = 0xF2;  // the block changed owner here: tid,
                                               // value = sequence, end_ns = thread serial

// A (TSC, CLOCK_MONOTONIC, CLOCK_REALTIME) triple. `crc` covers the first 28 bytes so
// that an entry torn by a kill while being rewritten is recognised.
struct TscAnchor {
  int64_t tsc;  // 0 where the file's events carry event-clock times
  int64_t monotonic_ns;
  int64_t realtime_ns;
  uint32_t uncertainty_ns;
  uint32_t crc;
};
static_assert(sizeof(TscAnchor) == 32);

struct CounterSlot {
  char name[56];  // NUL-terminated; empty = unused
  uint64_t value;
};
static_assert(sizeof(CounterSlot) == 64);

inline constexpr uint32_t kFileHeaderBlockBytes = 65536;
inline constexpr uint32_t kMaxCounterSlots = 64;
inline constexpr uint32_t kMaxTscAnchors =
    (kFileHeaderBlockBytes - 4608) / static_cast<uint32_t>(sizeof(TscAnchor));

struct FileHeaderBlock {
  BlockHeader header;     // type kFileHeader
  char signature[16];     // kFileSignature
  uint16_t record_bytes;  // sizeof(EventRecord)
  uint16_t reserved0;
  uint32_t clean_end;     // 1 once the process closed the file at exit
  uint32_t anchor_count;  // valid entries of `anchors`
  uint32_t reserved1;
  double ns_per_tick;  // TSC rate measured at start (for files with one anchor)
  uint8_t reserved2[256 - 168];
  CounterSlot counters[kMaxCounterSlots];  // collector counters, in place
  uint8_t reserved3[4608 - 256 - 64 * kMaxCounterSlots];
  TscAnchor anchors[kMaxTscAnchors];
};
static_assert(sizeof(FileHeaderBlock) == kFileHeaderBlockBytes);
static_assert(offsetof(FileHeaderBlock, counters) == 256);
static_assert(offsetof(FileHeaderBlock, anchors) == 4608);

uint32_t BlockHeaderCrc(const BlockHeader& h);
uint32_t TscAnchorCrc(const TscAnchor& a);

// Human-readable name of a kind, as printed by `teller dump` ("nvtx_push", ...).
std::string_view KindName(EventKind kind);

}  // namespace teller::raw

#endif  // TELLER_FORMAT_RAW_FORMAT_H_
