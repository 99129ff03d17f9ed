// An NVTX tool that records nothing but reads the clock: its push and pop read the TSC,
// as Teller's recorder does for every event (src/collect/recorder.h, HotTimestamp), and
// keep it in a thread-local. A program run under it (NVTX_INJECTION64_PATH=this library)
// pays NVTX's dispatch and one clock read per event and nothing else: the floor of any
// tracer that timestamps each push and pop. bench/collect/collector_overhead.py runs it
// beside `teller run`, so that what the recorder costs beyond reading the clock is
// stated apart from the clock itself (bench/README.md, "Collector overhead").
#include <nvtx3/nvToolsExt.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <cstdint>

namespace {

thread_local int64_t t_last = 0;
thread_local int t_depth = 0;

inline int64_t Now() {
#if defined(__x86_64__)
  return static_cast<int64_t>(__rdtsc());
#else
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
#endif
}

int NVTX_API PushA(const char*) {
  t_last = Now();
  return t_depth++;
}

int NVTX_API PushEx(const nvtxEventAttributes_t*) {
  t_last = Now();
  return t_depth++;
}

int NVTX_API Pop() {
  t_last = Now();
  return t_depth == 0 ? -1 : --t_depth;
}

template <typename F>
void SetSlot(NvtxFunctionTable table, unsigned int size, unsigned int cbid, F fn) {
  if (table != nullptr && cbid < size && table[cbid] != nullptr) {
    *table[cbid] = reinterpret_cast<NvtxFunctionPointer>(fn);
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) || !core) {
    return 0;
  }
  SetSlot(core, core_size, NVTX_CBID_CORE_RangePushA, PushA);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangePushEx, PushEx);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangePop, Pop);
  return 1;
}
