// Cost of recording NVTX events in the traced process.
//
// Run twice, in one go (bench/run_benchmarks.sh does): with the injection library (the
// default) and with --no-tool, where NVTX has no tool attached and a call is a null
// check. Both runs execute the same loops, so the difference is Teller's cost.
// BM_ClockGettime is the floor: one CLOCK_MONOTONIC read per event.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <nvtx3/nvtx3.hpp>
#include <string>
#include <vector>

namespace {

using FlushFn = void (*)();
FlushFn g_flush = nullptr;
// Flush outside the timed region often enough that the ring never fills: the figures
// are the steady-state cost of recording, not of dropping.
constexpr int kPairsPerFlush = 4096;

void MaybeFlush(benchmark::State& state, int64_t i) {
  if (g_flush != nullptr && i % kPairsPerFlush == kPairsPerFlush - 1) {
    state.PauseTiming();
    g_flush();
    state.ResumeTiming();
  }
}

void BM_ClockGettime(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_ClockGettime);

// The common case: a fixed module or op name (torch module forwards, engine steps).
void BM_PushPopSameName(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    nvtxRangePushA("model.layers.0.self_attn");
    nvtxRangePop();
    MaybeFlush(state, i++);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PushPopSameName);

// A realistic vocabulary: 256 distinct names in rotation (layers x modules).
void BM_PushPopRotatingNames(benchmark::State& state) {
  std::vector<std::string> names;
  for (int i = 0; i < 256; ++i)
    names.push_back("model.layers." + std::to_string(i / 8) + ".op" + std::to_string(i % 8));
  int64_t i = 0;
  for (auto _ : state) {
    nvtxRangePushA(names[i & 255].c_str());
    nvtxRangePop();
    MaybeFlush(state, i++);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PushPopRotatingNames);

struct BenchDomain {
  static constexpr const char* name{"bench"};
};

// The C++ API: a domain range with a registered string and a payload.
void BM_ScopedRangeInDomain(benchmark::State& state) {
  static nvtx3::registered_string_in<BenchDomain> kName{"decode_step"};
  int64_t i = 0;
  for (auto _ : state) {
    { nvtx3::scoped_range_in<BenchDomain> r{nvtx3::event_attributes{kName, nvtx3::payload{i}}}; }
    MaybeFlush(state, i++);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScopedRangeInDomain);

// Every step message is new (request ids change every step): the slow path.
void BM_PushPopUniqueNames(benchmark::State& state) {
  char name[64];
  int64_t i = 0;
  for (auto _ : state) {
    std::snprintf(name, sizeof(name), "teller.step kind=decode n=1 reqs=cmpl-%lld",
                  static_cast<long long>(i));
    nvtxRangePushA(name);
    nvtxRangePop();
    MaybeFlush(state, i++);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PushPopUniqueNames);

}  // namespace

int main(int argc, char** argv) {
  bool no_tool = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-tool") == 0) {
      no_tool = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  std::string dir;
  if (!no_tool) {
    char tmpl[] = "/tmp/teller-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    setenv("TELLER_TRACE_DIR", dir.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", TELLER_INJECT_LIB, 1);
    nvtxMarkA("bench start");  // loads the injection now, not inside a timed loop
    void* lib = dlopen(TELLER_INJECT_LIB, RTLD_NOW | RTLD_NOLOAD);
    if (lib != nullptr)
      g_flush = reinterpret_cast<FlushFn>(dlsym(lib, "_ZN6teller7collect8FlushNowEv"));
    if (g_flush == nullptr) {
      std::fprintf(stderr, "injection library not loaded from %s\n", TELLER_INJECT_LIB);
      return 1;
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!dir.empty()) std::system(("rm -rf '" + dir + "'").c_str());
  return 0;
}
