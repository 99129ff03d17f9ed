// NVTX v3 injection: the NVTX headers compiled into the traced program dlopen the
// library named by NVTX_INJECTION64_PATH at the first NVTX call and call
// InitializeInjectionNvtx2 once per NVTX instance (every binary or .so that compiled
// nvtx3 in). We fill that instance's CORE and CORE2 callback slots with functions that
// record into the calling thread's block of the trace file (recorder.h).
//
// Handles we return to the program are our string ids: a domain handle is the id of
// the domain's name, a registered-string handle the id of the string. Neither is ever
// dereferenced by NVTX.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cwchar>

#include "src/collect/recorder.h"

namespace teller::collect {
namespace {

using raw::EventKind;
using raw::EventRecord;

inline uint32_t DomainId(nvtxDomainHandle_t domain) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(domain));
}

// UTF-32 (Linux wchar_t) to UTF-8 into `out`; returns the length. Slow path only.
size_t WideToUtf8(const wchar_t* text, char* out, size_t cap) {
  size_t n = 0;
  for (; text != nullptr && *text != 0; ++text) {
    const auto c = static_cast<uint32_t>(*text);
    char buf[4];
    size_t len;
    if (c < 0x80) {
      buf[0] = static_cast<char>(c);
      len = 1;
    } else if (c < 0x800) {
      buf[0] = static_cast<char>(0xC0 | (c >> 6));
      buf[1] = static_cast<char>(0x80 | (c & 0x3F));
      len = 2;
    } else if (c < 0x10000) {
      buf[0] = static_cast<char>(0xE0 | (c >> 12));
      buf[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      buf[2] = static_cast<char>(0x80 | (c & 0x3F));
      len = 3;
    } else {
      buf[0] = static_cast<char>(0xF0 | ((c >> 18) & 0x07));
      buf[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      buf[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      buf[3] = static_cast<char>(0x80 | (c & 0x3F));
      len = 4;
    }
    if (n + len > cap) break;
    for (size_t i = 0; i < len; ++i) out[n++] = buf[i];
  }
  return n;
}

inline uint32_t InternAscii(ThreadBuffer* b, const char* text) {
  return text == nullptr ? 0 : InternHeld(b, text, std::strlen(text));
}

uint32_t InternWide(ThreadBuffer* b, const wchar_t* text) {
  char buf[kMaxStringBytes];
  return InternHeld(b, buf, WideToUtf8(text, buf, sizeof(buf)));
}

uint32_t InternWideGlobal(const wchar_t* text) {
  char buf[kMaxStringBytes];
  return InternGlobal(std::string_view(buf, WideToUtf8(text, buf, sizeof(buf))));
}

// Fills name, payload and category of `e` from event attributes.
inline void ApplyAttributes(ThreadBuffer* b, const nvtxEventAttributes_t* a, EventRecord& e) {
  if (a == nullptr) return;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      e.name = InternAscii(b, a->message.ascii);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      e.name = InternWide(b, a->message.unicode);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      e.name = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(a->message.registered));
      e.flags |= raw::kFlagMessageRegistered;
      break;
    default:
      break;
  }
  e.category = a->category;
  if (a->payloadType >= NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 &&
      a->payloadType <= NVTX_PAYLOAD_TYPE_FLOAT) {
    e.aux = static_cast<uint16_t>(a->payloadType);
    std::memcpy(&e.value, &a->payload, sizeof(e.value));
  }
}

inline EventRecord Make(ThreadBuffer* b, EventKind kind, uint32_t domain) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(kind);
  e.flags = g_timestamp_flags;
  e.tid = b->tid;
  e.domain = domain;
  e.start_ns = HotTimestamp();
  return e;
}

// The same for the hot pair (a push by message, a pop): the head of the record only.
inline SlotHead MakeHead(ThreadBuffer* b, EventKind kind, uint32_t domain) {
  SlotHead e;
  e.kind = static_cast<uint8_t>(kind);
  e.flags = g_timestamp_flags;
  e.aux = 0;
  e.name = 0;
  e.tid = b->tid;
  e.domain = domain;
  e.start_ns = HotTimestamp();
  return e;
}

// Range ids for start/end ranges are process-wide: a range may end on another thread.
std::atomic<uint64_t> g_next_range_id{1};

// ---- push / pop (the hot pair) ----
// Every entry point enters the recorder (EnterRecorder) for its whole body: a signal
// handler that records while the thread is inside has its events dropped and counted.
// A push dropped that way has its pop dropped too, wherever that pop comes.
inline int ReentrantPush(ThreadBuffer* b) {
  b->reentrant_open.fetch_add(1, std::memory_order_relaxed);
  return b->depth;
}

inline int ReentrantPop(ThreadBuffer* b) {
  uint32_t open = b->reentrant_open.load(std::memory_order_relaxed);
  while (open != 0 && !b->reentrant_open.compare_exchange_weak(open, open - 1)) {
  }
  return b->depth - 1;
}

template <typename R>
inline int FinishPush(ThreadBuffer* b, const R& e) {
  RecordPushHeld(b, e);
  const int depth = b->depth++;
  LeaveRecorder(b);
  return depth;
}

int PushWith(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr) return 0;
  if (!EnterRecorder(b)) return ReentrantPush(b);
  EventRecord e = Make(b, EventKind::kNvtxPush, DomainId(domain));
  ApplyAttributes(b, a, e);
  return FinishPush(b, e);
}

int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { return PushWith(nullptr, a); }

int NVTX_API RangePushA(const char* message) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr) return 0;
  if (!EnterRecorder(b)) return ReentrantPush(b);
  SlotHead e = MakeHead(b, EventKind::kNvtxPush, 0);
  e.name = InternAscii(b, message);
  return FinishPush(b, e);
}

int NVTX_API RangePushW(const wchar_t* message) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr) return 0;
  if (!EnterRecorder(b)) return ReentrantPush(b);
  EventRecord e = Make(b, EventKind::kNvtxPush, 0);
  e.name = InternWide(b, message);
  return FinishPush(b, e);
}

int PopWith(nvtxDomainHandle_t domain) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr) return -1;
  if (!EnterRecorder(b)) return ReentrantPop(b);
  RecordPopHeld(b, MakeHead(b, EventKind::kNvtxPop, DomainId(domain)));
  const int depth = b->depth == 0 ? -1 : --b->depth;  // -1: NVTX's unmatched pop
  LeaveRecorder(b);
  return depth;
}

int NVTX_API RangePop() { return PopWith(nullptr); }

// A single event (mark, start, end, naming) of the calling thread.
inline void Single(ThreadBuffer* b, const EventRecord& e) {
  RecordSingleHeld(b, e);
  LeaveRecorder(b);
}

// ---- marks ----
void NVTX_API MarkEx(const nvtxEventAttributes_t* a) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr || !EnterRecorder(b)) return;
  EventRecord e = Make(b, EventKind::kNvtxMark, 0);
  ApplyAttributes(b, a, e);
  Single(b, e);
}

void NVTX_API MarkA(const char* message) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr || !EnterRecorder(b)) return;
  EventRecord e = Make(b, EventKind::kNvtxMark, 0);
  e.name = InternAscii(b, message);
  Single(b, e);
}

void NVTX_API MarkW(const wchar_t* message) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr || !EnterRecorder(b)) return;
  EventRecord e = Make(b, EventKind::kNvtxMark, 0);
  e.name = InternWide(b, message);
  Single(b, e);
}

// ---- start / end ----
nvtxRangeId_t StartWith(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a,
                        const char* ascii, const wchar_t* wide) {
  ThreadBuffer* b = CurrentBuffer();
  const uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (b == nullptr || !EnterRecorder(b)) return id;
  EventRecord e = Make(b, EventKind::kNvtxStart, DomainId(domain));
  if (a != nullptr) ApplyAttributes(b, a, e);
  if (ascii != nullptr) e.name = InternAscii(b, ascii);
  if (wide != nullptr) e.name = InternWide(b, wide);
  e.correlation = id;
  Single(b, e);
  return id;
}

nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  return StartWith(nullptr, a, nullptr, nullptr);
}
nvtxRangeId_t NVTX_API RangeStartA(const char* m) {
  return StartWith(nullptr, nullptr, m, nullptr);
}
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) {
  return StartWith(nullptr, nullptr, nullptr, m);
}

void EndWith(nvtxDomainHandle_t domain, nvtxRangeId_t id) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr || !EnterRecorder(b)) return;
  EventRecord e = Make(b, EventKind::kNvtxEnd, DomainId(domain));
  e.correlation = id;
  Single(b, e);
}

void NVTX_API RangeEnd(nvtxRangeId_t id) { EndWith(nullptr, id); }

// ---- naming ----
void RecordName(EventKind kind, uint32_t domain, uint32_t name, uint64_t value) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr || !EnterRecorder(b)) return;
  EventRecord e = Make(b, kind, domain);
  e.name = name;
  e.value = value;
  Single(b, e);
}

void NVTX_API NameCategoryA(uint32_t category, const char* name) {
  RecordName(EventKind::kNvtxNameCategory, 0, InternGlobal(name ? name : ""), category);
}
void NVTX_API NameCategoryW(uint32_t category, const wchar_t* name) {
  RecordName(EventKind::kNvtxNameCategory, 0, InternWideGlobal(name), category);
}
void NVTX_API NameOsThreadA(uint32_t thread_id, const char* name) {
  RecordName(EventKind::kNvtxNameThread, 0, InternGlobal(name ? name : ""), thread_id);
}
void NVTX_API NameOsThreadW(uint32_t thread_id, const wchar_t* name) {
  RecordName(EventKind::kNvtxNameThread, 0, InternWideGlobal(name), thread_id);
}

// ---- domains (CORE2) ----
void NVTX_API DomainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr || !EnterRecorder(b)) return;
  EventRecord e = Make(b, EventKind::kNvtxMark, DomainId(domain));
  ApplyAttributes(b, a, e);
  Single(b, e);
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* a) {
  return StartWith(domain, a, nullptr, nullptr);
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t domain, nvtxRangeId_t id) { EndWith(domain, id); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  return PushWith(domain, a);
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t domain) { return PopWith(domain); }

// Resources (naming of mutexes and the like) are not used by the analysis; hand out
// distinct non-null handles so that programs that check them keep working.
std::atomic<uintptr_t> g_next_resource{1};
nvtxResourceHandle_t NVTX_API DomainResourceCreate(nvtxDomainHandle_t, nvtxResourceAttributes_t*) {
  return reinterpret_cast<nvtxResourceHandle_t>(g_next_resource.fetch_add(1));
}
void NVTX_API DomainResourceDestroy(nvtxResourceHandle_t) {}

void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t domain, uint32_t category, const char* name) {
  RecordName(EventKind::kNvtxNameCategory, DomainId(domain), InternGlobal(name ? name : ""),
             category);
}
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t domain, uint32_t category,
                                  const wchar_t* name) {
  RecordName(EventKind::kNvtxNameCategory, DomainId(domain), InternWideGlobal(name), category);
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(
      static_cast<uintptr_t>(InternGlobal(text ? text : "")));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* text) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(InternWideGlobal(text)));
}
nvtxDomainHandle_t CreateDomain(uint32_t id) {
  RecordName(EventKind::kNvtxDomainCreate, id, id, 0);
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<uintptr_t>(id));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  return CreateDomain(InternGlobal(name ? name : ""));
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  return CreateDomain(InternWideGlobal(name));
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t domain) {
  RecordName(EventKind::kNvtxDomainDestroy, DomainId(domain), 0, 0);
}
void NVTX_API Initialize(const void*) {}

template <typename F>
void SetSlot(NvtxFunctionTable table, unsigned int size, unsigned int cbid, F fn) {
  if (table != nullptr && cbid < size && table[cbid] != nullptr) {
    *table[cbid] = reinterpret_cast<NvtxFunctionPointer>(fn);
  }
}

}  // namespace
}  // namespace teller::collect

using namespace teller::collect;  // NOLINT: the C entry point below fills many slots

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  // Runs once per NVTX instance; the recorder itself initializes once per process.
  if (!InitRecorder() || get_export_table == nullptr) return 0;  // 0: NVTX stays a no-op
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;

  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) && core) {
    SetSlot(core, core_size, NVTX_CBID_CORE_MarkEx, MarkEx);
    SetSlot(core, core_size, NVTX_CBID_CORE_MarkA, MarkA);
    SetSlot(core, core_size, NVTX_CBID_CORE_MarkW, MarkW);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangePushA, RangePushA);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangePushW, RangePushW);
    SetSlot(core, core_size, NVTX_CBID_CORE_RangePop, RangePop);
    SetSlot(core, core_size, NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
    SetSlot(core, core_size, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
    SetSlot(core, core_size, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
    SetSlot(core, core_size, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  }
  NvtxFunctionTable core2 = nullptr;
  unsigned int core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) && core2) {
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainResourceCreate, DomainResourceCreate);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainResourceDestroy, DomainResourceDestroy);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, DomainNameCategoryA);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, DomainNameCategoryW);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_Initialize, Initialize);
  }
  return 1;
}
