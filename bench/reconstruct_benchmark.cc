// Reconstruction at scale: builds an LLM-serving-shaped trace in memory (processes x
// steps x layers x ops, each op a range with a launch call and its kernel, decode steps
// as one graph launch of many kernels, a collective per layer, log lines with request
// ids) of the requested size, then times Reconstruct() alone. Prints medians over runs.
// Usage: reconstruct_benchmark [events=5600000] [runs=3]
//        reconstruct_benchmark --trace PATH [runs=7]   import + reconstruct a real trace
//        in one process, as HTA is measured (in-process, after the first run).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"

namespace {

using teller::EventRow;
using teller::EventType;
using teller::Trace;

// Appends one process's worth of steps until `budget` events were added.
void BuildProcess(Trace& t, uint32_t proc, size_t budget, uint64_t& correlation) {
  auto& s = t.strings;
  const auto nvtx = s.Intern("nvtx"), rt = s.Intern("cuda_runtime"), kern = s.Intern("kernel");
  const char* ops[] = {"rms_norm", "qkv_proj",   "rotary_emb",   "attention",
                       "o_proj",   "all_reduce", "gate_up_proj", "down_proj"};
  const char* kernels[] = {"rms_norm_kernel",         "sm90_xmma_gemm_bf16",
                           "rotary_embedding_kernel", "flash_fwd_kernel",
                           "sm90_xmma_gemm_bf16",     "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                           "sm90_xmma_gemm_bf16",     "sm90_xmma_gemm_bf16"};
  const auto launch = s.Intern("cudaLaunchKernel"), graph = s.Intern("cudaGraphLaunch");
  int64_t now = 1'700'000'000'000'000'000 + proc * 1000;
  const size_t start = t.events.size();
  for (int step = 0; t.events.size() - start < budget; ++step) {
    const bool decode = step % 8 != 0;
    const std::string name = std::string("teller.step kind=") + (decode ? "decode" : "prefill") +
                             " n=2 reqs=cmpl-" + std::to_string(step) + ",cmpl-" +
                             std::to_string(step + 1);
    EventRow row;
    row.process = proc;
    row.thread = 1;
    row.category = nvtx;
    row.type = EventType::kPush;
    row.name = s.Intern(name);
    row.start_ns = row.end_ns = now;
    t.events.Append(row);
    const uint64_t graph_corr = ++correlation;
    for (int layer = 0; layer < 32; ++layer) {
      row = EventRow{};
      row.process = proc, row.thread = 1, row.category = nvtx, row.type = EventType::kPush;
      row.name = s.Intern("model.layers." + std::to_string(layer));
      row.start_ns = row.end_ns = ++now;
      t.events.Append(row);
      for (int op = 0; op < 8; ++op) {
        row.type = EventType::kPush;
        row.name = s.Intern(ops[op]);
        row.start_ns = row.end_ns = now += 100;
        t.events.Append(row);
        EventRow k;
        k.process = proc;
        k.category = kern;
        k.type = EventType::kKernel;
        k.name = s.Intern(kernels[op]);
        k.thread = k.stream = 7;
        k.start_ns = now + 5000;
        k.end_ns = now + 9000;
        if (!decode) {
          EventRow call;
          call.process = proc, call.thread = 1, call.category = rt, call.type = EventType::kRuntime;
          call.name = launch;
          call.start_ns = now + 10;
          call.end_ns = now + 60;
          call.correlation = ++correlation;
          t.events.Append(call);
          k.correlation = correlation;
        } else {
          k.correlation = graph_corr;  // decode: one graph launch owns every kernel
        }
        t.events.Append(k);
        row.type = EventType::kPop;
        row.name = 0;
        row.start_ns = row.end_ns = now += 100;
        t.events.Append(row);
      }
      row.type = EventType::kPop;
      row.name = 0;
      row.start_ns = row.end_ns = ++now;
      t.events.Append(row);
    }
    if (decode) {
      EventRow call;
      call.process = proc, call.thread = 1, call.category = rt, call.type = EventType::kRuntime;
      call.name = graph;
      call.start_ns = now + 10;
      call.end_ns = now + 500;
      call.correlation = graph_corr;
      t.events.Append(call);
    }
    row = EventRow{};
    row.process = proc, row.thread = 1, row.category = nvtx, row.type = EventType::kPop;
    row.start_ns = row.end_ns = now += 1000;
    t.events.Append(row);
    auto& l = t.logs;
    l.ts_ns.push_back(now);
    l.request.push_back(s.Intern("cmpl-" + std::to_string(step)));
    l.level.push_back(teller::LogLevel::kInfo);
    l.process.push_back(proc);
    l.file.push_back(0);
    l.line.push_back(static_cast<uint32_t>(l.ts_ns.size()));
    l.message.push_back(s.Intern("Finished request cmpl-" + std::to_string(step) + "."));
    now += 10000;
  }
}

}  // namespace

// Import plus reconstruction of a real trace, repeated in one process.
int RunOnTrace(const char* path, int runs) {
  std::vector<double> total, import;
  size_t events = 0;
  for (int r = 0; r < runs; ++r) {
    Trace trace;
    const auto t0 = std::chrono::steady_clock::now();
    if (teller::Status s = teller::ingest::ImportPath(path, trace); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
    const auto t1 = std::chrono::steady_clock::now();
    const auto rec = teller::reconstruct::Reconstruct(trace);
    const auto t2 = std::chrono::steady_clock::now();
    import.push_back(std::chrono::duration<double>(t1 - t0).count());
    total.push_back(std::chrono::duration<double>(t2 - t0).count());
    events = trace.events.size();
  }
  std::sort(total.begin(), total.end());
  std::sort(import.begin(), import.end());
  std::printf(
      "%s: %zu events; import %.3f s, import + reconstruct median %.3f s (min %.3f, max %.3f, "
      "first run included) over %d runs\n",
      path, events, import[import.size() / 2], total[total.size() / 2], total.front(), total.back(),
      runs);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "--trace")
    return RunOnTrace(argv[2], argc > 3 ? std::atoi(argv[3]) : 7);
  const size_t target = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 5'600'000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  constexpr uint32_t kProcesses = 6;  // 2 nodes x 3 GPUs, the paper's testbed
  Trace trace;
  trace.events.Reserve(target + 100000);
  uint64_t correlation = 0;
  for (uint32_t p = 0; p < kProcesses; ++p) {
    trace.ProcessIndex("node-" + std::to_string(p / 3), 1000 + p);
    BuildProcess(trace, p, target / kProcesses, correlation);
  }
  std::vector<double> seconds;
  teller::reconstruct::Stats stats;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto rec = teller::reconstruct::Reconstruct(trace);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    stats = rec.stats;
  }
  std::sort(seconds.begin(), seconds.end());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf(
      "events %zu, kernels %llu (linked %llu), steps %llu, requests %llu, graph launches %llu\n",
      trace.events.size(), static_cast<unsigned long long>(stats.kernels),
      static_cast<unsigned long long>(stats.kernels_linked),
      static_cast<unsigned long long>(stats.steps), static_cast<unsigned long long>(stats.requests),
      static_cast<unsigned long long>(stats.graph_launches));
  std::printf(
      "Reconstruct: median %.3f s (min %.3f, max %.3f) over %d runs = %.2f M events/s; peak RSS "
      "%.0f MB\n",
      seconds[seconds.size() / 2], seconds.front(), seconds.back(), runs,
      trace.events.size() / seconds[seconds.size() / 2] / 1e6, ru.ru_maxrss / 1024.0);
  return 0;
}
