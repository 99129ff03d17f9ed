// An NVTX-heavy program for measuring the wall-time overhead of `teller run`: steps of
// decoder layers of ops, each op a range around a few microseconds of arithmetic, as a
// framework with per-op ranges would emit.
// Usage: nvtx_heavy [steps] [op_us] [iters_per_us|0] [chain|independent]
// The arithmetic is calibrated at start (iterations per microsecond) unless
// iters_per_us is given: paired runs on a busy machine pass the same value to every run,
// so that each does the same work however fast the machine was while calibrating.
// chain (the default): each op's arithmetic continues from the previous op's result, as a
// layer consumes its predecessor's output, so an op takes the time it was calibrated for.
// independent: every op starts afresh. The processor then runs the end of one op and the
// start of the next at once (two dependency chains in flight), so untraced ops take about
// half their nominal time, and anything between them that waits for earlier instructions
// (reading the TSC does) takes that overlap away: the worst case for a tracer, measured
// against bench/nvtx_clock_floor.cc (bench/README.md, "Collector overhead").
// Prints the ranges per second it emitted, so the load is stated, not assumed, and the
// processor time of the recording thread and of the whole process (helper threads of a
// tool included) over the recording loop.
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double CpuSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Spin(double us, double per_us_iterations, double x0) {
  double x = x0;
  const long n = static_cast<long>(us * per_us_iterations);
  for (long i = 0; i < n; ++i) x += std::sqrt(static_cast<double>(i) + x * 1e-9);
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 150;
  const double op_us = argc > 2 ? std::atof(argv[2]) : 5.0;
  const std::string mode = argc > 4 ? argv[4] : "chain";
  if (mode != "chain" && mode != "independent") {
    std::fprintf(stderr, "nvtx_heavy: mode must be chain or independent, not %s\n", mode.c_str());
    return 2;
  }
  const bool chain = mode == "chain";
  constexpr int kLayers = 32;
  const char* kOps[] = {"rms_norm", "qkv_proj", "rotary_emb",   "attention",
                        "o_proj",   "rms_norm", "gate_up_proj", "down_proj"};
  // Calibrate iterations per microsecond without NVTX, unless given.
  double sink = 0;
  double per_us = argc > 3 ? std::atof(argv[3]) : 0;
  if (per_us <= 0) {
    const auto c0 = std::chrono::steady_clock::now();
    sink = Spin(20000, 100, 0);
    const double cal_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - c0).count();
    per_us = 20000 * 100 / cal_us;
  }

  std::vector<std::string> layer_names;
  for (int l = 0; l < kLayers; ++l) layer_names.push_back("model.layers." + std::to_string(l));
  long ranges = 0;
  const double thread0 = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  const double process0 = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    const std::string step = "teller.step kind=decode n=1 reqs=cmpl-" + std::to_string(s);
    nvtxRangePushA(step.c_str());
    for (int l = 0; l < kLayers; ++l) {
      nvtxRangePushA(layer_names[l].c_str());
      for (const char* op : kOps) {
        nvtxRangePushA(op);
        sink = chain ? Spin(op_us, per_us, sink) : sink + Spin(op_us, per_us, 0);
        nvtxRangePop();
        ++ranges;
      }
      nvtxRangePop();
      ++ranges;
    }
    nvtxRangePop();
    ++ranges;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double thread_cpu = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - thread0;
  const double process_cpu = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - process0;
  std::printf(
      "nvtx_heavy: %ld ranges in %.3f s = %.0f ranges/s (sink %g); cpu s: thread %.4f "
      "process %.4f; %s; iters/us %.2f\n",
      ranges, secs, ranges / secs, sink > 0 ? 1.0 : 0.0, thread_cpu, process_cpu, mode.c_str(),
      per_us);
  return 0;
}
