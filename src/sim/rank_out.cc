// Event emission for one simulated process, in the raw format `teller run` writes
// (raw_format.h): NVTX pushes and pops, runtime/driver calls, GPU records, all on the
// host's monotonic clock. Each emission also yields the ground-truth locator of the node.
#include "src/sim/world.h"

namespace teller::sim {

NodeLocator RankOut::Push(const std::string& name, int64_t t) {
  raw::EventRecord e{};
  e.kind = static_cast<uint8_t>(raw::EventKind::kNvtxPush);
  e.flags = raw::kFlagMessageRegistered;
  e.name = Str(name);
  e.tid = tid;
  e.start_ns = clock->Mono(t);
  events.push_back(e);
  open_ranges.push_back(t);
  const uint64_t key = (static_cast<uint64_t>(tid) << 32) | e.name;
  NodeLocator loc;
  loc.kind = NodeLocator::Kind::kRange;
  loc.host = clock->name;
  loc.pid = pid;
  loc.tid = tid;
  loc.name = name;
  loc.occurrence = range_occurrence[key]++;
  return loc;
}

void RankOut::Pop(int64_t t) {
  raw::EventRecord e{};
  e.kind = static_cast<uint8_t>(raw::EventKind::kNvtxPop);
  e.tid = tid;
  // A pop never precedes its push, whatever rounding the clock conversion does.
  if (!open_ranges.empty()) {
    if (t < open_ranges.back()) t = open_ranges.back();
    open_ranges.pop_back();
  }
  e.start_ns = clock->Mono(t);
  events.push_back(e);
}

void RankOut::Mark(const std::string& name, int64_t t) {
  raw::EventRecord e{};
  e.kind = static_cast<uint8_t>(raw::EventKind::kNvtxMark);
  e.name = Str(name);
  e.tid = tid;
  e.start_ns = clock->Mono(t);
  events.push_back(e);
}

uint64_t RankOut::Call(const std::string& name, int64_t start, int64_t end, bool driver) {
  raw::EventRecord e{};
  e.kind =
      static_cast<uint8_t>(driver ? raw::EventKind::kCudaDriver : raw::EventKind::kCudaRuntime);
  e.name = Str(name);
  e.tid = tid;
  e.start_ns = clock->Mono(start);
  e.end_ns = clock->Mono(end);
  e.correlation = next_correlation++;
  events.push_back(e);
  return e.correlation;
}

NodeLocator RankOut::CallLocator(uint64_t correlation) const {
  NodeLocator loc;
  loc.kind = NodeLocator::Kind::kCall;
  loc.host = clock->name;
  loc.pid = pid;
  loc.correlation = correlation;
  return loc;
}

NodeLocator RankOut::Gpu(raw::EventKind kind, const std::string& name, int64_t start, int64_t end,
                         uint64_t correlation, uint32_t stream, bool in_graph, uint64_t bytes) {
  raw::EventRecord e{};
  e.kind = static_cast<uint8_t>(kind);
  e.flags = in_graph ? raw::kFlagInGraph : raw::kFlagNone;
  e.name = Str(name);
  e.tid = tid;
  e.start_ns = clock->Mono(start);
  e.end_ns = clock->Mono(end);
  e.correlation = correlation;
  e.value = bytes;
  e.stream = stream;
  e.device = static_cast<uint32_t>(local);
  e.context = 1;
  if (kind == raw::EventKind::kMemcpy) e.aux = 2;  // CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
  events.push_back(e);
  NodeLocator loc;
  loc.kind = NodeLocator::Kind::kGpu;
  loc.host = clock->name;
  loc.pid = pid;
  loc.correlation = correlation;
  if (correlation != last_gpu_correlation) {
    last_gpu_correlation = correlation;
    last_gpu_count = 0;
  }
  loc.occurrence = last_gpu_count++;
  return loc;
}

}  // namespace teller::sim
