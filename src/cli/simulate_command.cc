// `teller simulate`: simulated LLM serving with faults (docs/simulator.md).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/format/ground_truth.h"
#include "teller/sim/faults.h"
#include "teller/sim/sim.h"

namespace teller::cli {
namespace {

constexpr const char* kHelp =
    "usage: teller simulate [options] --out DIR\n"
    "       teller simulate --preset paper [--seed S] [--jobs N] [--realistic] --out DIR\n"
    "       teller simulate --profile P --compare REAL_TRACE [--json]\n"
    "       teller simulate --list\n"
    "\n"
    "Simulates LLM serving and writes what `teller run` would have collected (one raw\n"
    "trace per GPU process, logs/stdout.log, manifest.json) plus ground_truth.json: which\n"
    "fault acted on which requests, steps and trace nodes.\n"
    "\n"
    "  --profile P           sglang, torch-fsdp, vllm-moe, vllm-v0, vllm-v1-offline,\n"
    "                        vllm-v1-online\n"
    "                        (default vllm-v1-online)\n"
    "  --seed S              random seed (default 1); the same seed gives the same bytes\n"
    "  --requests N          requests to serve (default 40)\n"
    "  --nodes N             nodes (default 2);  --gpus-per-node N (default 3)\n"
    "  --tp N / --pp N       tensor / pipeline parallel sizes (default 3 / 2)\n"
    "  --arrival A           poisson (default), bursty, or replay:FILE with lines\n"
    "                        '<arrival s> <prompt tokens> <output tokens>'\n"
    "  --rate R              mean arrivals per second (default 8)\n"
    "  --prompt-median N     median prompt length (default 512); --output-median N (64)\n"
    "  --max-batched-tokens N  token budget per step (default 2048)\n"
    "  --layers N            decoder layers (default: the profile's model)\n"
    "  --gpu G               h100 (default), b200 or mi300: kernel names, tile and split\n"
    "                        choices, and the cost model of that device\n"
    "  --shape-kernels       kernel choice by shape: GEMM tiles and split-K, attention KV\n"
    "                        splits and their reduce kernels, one graph per batch bucket\n"
    "  --realistic           --shape-kernels, --realistic-timing and --host-stack\n"
    "  --realistic-timing    noise by kernel class shared across ranks, drift, and\n"
    "                        heavy-tailed inter-kernel gaps fitted to real traces\n"
    "  --host-stack          the framework op stack in eager steps: nn.Module ranges,\n"
    "                        Python frames, aten ops with CPU costs fitted to real traces\n"
    "  --expert-parallel     vllm-moe: experts sharded over the TP group, all-to-all\n"
    "                        dispatch and combine instead of the MoE all-reduce\n"
    "  --fault SPEC          add a fault: MECHANISM[:target=..,magnitude=..,onset=2s,\n"
    "                        duration=5s,rank=N]; repeatable (see --list)\n"
    "  --random-faults N     add N faults with mechanisms, times and targets from the seed\n"
    "  --fault-windows W     where --preset and --random-faults place fault windows:\n"
    "                        arrivals (default: anchored to the requests they serve) or\n"
    "                        uniform (anywhere in the serving period)\n"
    "  --confounders         healthy confounders: long prompts, prefix-cache hits, arrival\n"
    "                        bursts, GC pauses, preemption bursts (never labelled; on for\n"
    "                        --preset and --realistic); --no-confounders turns them off\n"
    "  --preset paper        the paper-shaped dataset: 5 settings, 300 requests, ~42% faulty\n"
    "  --jobs N              settings simulated in parallel for --preset (default: CPUs)\n"
    "  --compare REAL        realism report: kernel sequences and duration distributions of\n"
    "                        the profile against a real trace (Kineto JSON, nsys, Teller)\n"
    "  --json                --compare: JSON output\n"
    "  --list                list profiles and fault mechanisms\n";

bool ParseInt(const std::string& s, long lo, long hi, long* out) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

void PrintList() {
  std::printf("profiles:\n");
  for (const char* p : sim::kProfiles) std::printf("  %s\n", p);
  std::printf("fault mechanisms (category: name - what it does):\n");
  for (const sim::MechanismInfo& m : sim::Mechanisms()) {
    std::printf("  %-20s %-16s %s%s\n", std::string(FaultCategoryName(m.category)).c_str(), m.name,
                m.summary, m.injectable ? " [inject]" : "");
  }
}

}  // namespace

int SimulateCommand(const std::vector<std::string>& args) {
  sim::SimConfig config;
  std::string out, preset, compare;
  bool json = false;
  long random_faults = 0;
  int confounders = -1;  // -1: the default (on for --preset and --realistic), 0 off, 1 on
  int jobs = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller simulate: %s needs a value\n", a.c_str());
        return false;
      }
      *v = args[++i];
      return true;
    };
    auto number = [&](long lo, long hi, long* v) {
      std::string s;
      if (!value(&s)) return false;
      if (!ParseInt(s, lo, hi, v)) {
        std::fprintf(stderr, "teller simulate: %s expects a whole number in [%ld, %ld], got '%s'\n",
                     a.c_str(), lo, hi, s.c_str());
        return false;
      }
      return true;
    };
    long n = 0;
    std::string s;
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--list") {
      PrintList();
      return 0;
    } else if (a == "--out") {
      if (!value(&out)) return 2;
    } else if (a == "--profile") {
      if (!value(&config.profile)) return 2;
      if (!sim::IsProfile(config.profile)) {
        std::fprintf(stderr, "teller simulate: unknown profile '%s' (see --list)\n",
                     config.profile.c_str());
        return 2;
      }
    } else if (a == "--seed") {
      if (!number(0, 1L << 62, &n)) return 2;
      config.seed = static_cast<uint64_t>(n);
    } else if (a == "--requests") {
      if (!number(1, 1000000, &n)) return 2;
      config.requests = static_cast<int>(n);
    } else if (a == "--nodes") {
      if (!number(1, 64, &n)) return 2;
      config.nodes = static_cast<int>(n);
    } else if (a == "--gpus-per-node") {
      if (!number(1, 16, &n)) return 2;
      config.gpus_per_node = static_cast<int>(n);
    } else if (a == "--tp") {
      if (!number(1, 64, &n)) return 2;
      config.tp = static_cast<int>(n);
    } else if (a == "--pp") {
      if (!number(1, 64, &n)) return 2;
      config.pp = static_cast<int>(n);
    } else if (a == "--shape-kernels") {
      config.shape_kernels = true;
    } else if (a == "--realistic") {
      config.shape_kernels = config.realistic_timing = config.host_stack = true;
      if (confounders < 0) confounders = 1;
    } else if (a == "--confounders") {
      confounders = 1;
    } else if (a == "--no-confounders") {
      confounders = 0;
    } else if (a == "--fault-windows") {
      if (!value(&s)) return 2;
      if (s != "arrivals" && s != "uniform") {
        std::fprintf(stderr, "teller simulate: --fault-windows is arrivals or uniform, got '%s'\n",
                     s.c_str());
        return 2;
      }
      config.uniform_fault_windows = s == "uniform";
    } else if (a == "--host-stack") {
      config.host_stack = true;
    } else if (a == "--expert-parallel") {
      config.expert_parallel = true;
    } else if (a == "--realistic-timing") {
      config.realistic_timing = true;
    } else if (a == "--gpu") {
      if (!value(&config.gpu)) return 2;
      if (config.gpu != "h100" && config.gpu != "b200" && config.gpu != "mi300") {
        std::fprintf(stderr, "teller simulate: unknown --gpu '%s' (h100, b200 or mi300)\n",
                     config.gpu.c_str());
        return 2;
      }
    } else if (a == "--layers") {
      if (!number(1, 512, &n)) return 2;
      config.layers = static_cast<int>(n);
    } else if (a == "--prompt-median") {
      if (!number(1, 1 << 20, &n)) return 2;
      config.prompt_median = static_cast<int>(n);
      config.prompt_max = std::max(config.prompt_max, config.prompt_median * 8);
    } else if (a == "--output-median") {
      if (!number(1, 1 << 20, &n)) return 2;
      config.output_median = static_cast<int>(n);
      config.output_max = std::max(config.output_max, config.output_median * 16);
    } else if (a == "--max-batched-tokens") {
      if (!number(16, 1 << 22, &n)) return 2;
      config.max_batched_tokens = static_cast<int>(n);
    } else if (a == "--rate") {
      if (!value(&s)) return 2;
      char* end = nullptr;
      config.rate = std::strtod(s.c_str(), &end);
      if (end == s.c_str() || *end != '\0' || config.rate <= 0) {
        std::fprintf(stderr, "teller simulate: --rate expects a positive number, got '%s'\n",
                     s.c_str());
        return 2;
      }
    } else if (a == "--arrival") {
      if (!value(&s)) return 2;
      if (s == "poisson") {
        config.arrival = sim::Arrival::kPoisson;
      } else if (s == "bursty") {
        config.arrival = sim::Arrival::kBursty;
      } else if (s.rfind("replay:", 0) == 0 && s.size() > 7) {
        config.arrival = sim::Arrival::kReplay;
        config.replay_file = s.substr(7);
      } else {
        std::fprintf(stderr,
                     "teller simulate: --arrival is poisson, bursty or replay:FILE, got '%s'\n",
                     s.c_str());
        return 2;
      }
    } else if (a == "--fault") {
      if (!value(&s)) return 2;
      sim::FaultSpec spec;
      std::string error;
      if (!sim::ParseFaultSpec(s, &spec, &error)) {
        std::fprintf(stderr, "teller simulate: --fault %s: %s\n", s.c_str(), error.c_str());
        return 2;
      }
      config.faults.push_back(spec);
    } else if (a == "--random-faults") {
      if (!number(0, 100, &random_faults)) return 2;
    } else if (a == "--preset") {
      if (!value(&preset)) return 2;
      if (preset != "paper") {
        std::fprintf(stderr, "teller simulate: unknown preset '%s' (known: paper)\n",
                     preset.c_str());
        return 2;
      }
    } else if (a == "--jobs") {
      if (!number(1, 256, &n)) return 2;
      jobs = static_cast<int>(n);
    } else if (a == "--compare") {
      if (!value(&compare)) return 2;
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "teller simulate: unknown option '%s'\n\n%s", a.c_str(), kHelp);
      return 2;
    }
  }
  auto progress = [](std::string_view line) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  };
  if (confounders >= 0) config.confounders = confounders == 1;
  if (!compare.empty()) {
    return RunRealismCompare(config, compare, json);
  }
  if (out.empty()) {
    std::fprintf(stderr, "teller simulate: --out DIR is required\n\n%s", kHelp);
    return 2;
  }
  if (!preset.empty()) {
    auto configs = sim::PaperPreset(config.seed);
    for (sim::SimConfig& c : configs) {  // the realism options apply to every setting
      c.gpu = config.gpu;
      c.shape_kernels = config.shape_kernels;
      c.realistic_timing = config.realistic_timing;
      c.host_stack = config.host_stack;
      c.uniform_fault_windows = config.uniform_fault_windows;
      if (confounders >= 0) c.confounders = confounders == 1;
    }
    auto result = sim::SimulatePreset(configs, out, jobs, progress);
    if (!result.ok()) {
      std::fprintf(stderr, "teller simulate: %s\n", result.status().message().c_str());
      return 1;
    }
    uint64_t requests = 0, faulty = 0, steps = 0, events = 0;
    for (const auto& s : result.value()) {
      requests += s.requests, faulty += s.faulty_requests, steps += s.steps, events += s.events;
    }
    std::printf(
        "wrote %s: 5 settings, %llu requests (%llu faulty, %.1f%%), %llu engine steps, %llu "
        "events\n",
        out.c_str(), static_cast<unsigned long long>(requests),
        static_cast<unsigned long long>(faulty), requests ? 100.0 * faulty / requests : 0.0,
        static_cast<unsigned long long>(steps), static_cast<unsigned long long>(events));
    return 0;
  }
  if (random_faults > 0) {
    // Faults drawn from the seed: spread over the expected run, one mechanism each.
    uint64_t x = config.seed * 0x9E3779B97F4A7C15ull + 7;
    auto next = [&x] {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      return x;
    };
    const auto& all = sim::Mechanisms();
    for (long k = 0; k < random_faults; ++k) {
      sim::FaultSpec f;
      f.mechanism = all[next() % all.size()].mechanism;
      f.onset_request = static_cast<int>((k * config.requests) / (random_faults + 1) + next() % 3);
      f.span_requests = std::max(2, config.requests / static_cast<int>(3 * (random_faults + 1)));
      config.faults.push_back(f);
    }
  }
  auto result = sim::Simulate(config, out, progress);
  if (!result.ok()) {
    std::fprintf(stderr, "teller simulate: %s\n", result.status().message().c_str());
    return 1;
  }
  const sim::SimSummary& s = result.value();
  std::printf(
      "wrote %s: %s, %llu requests (%llu faulty), %llu steps, %llu processes, %llu events, %.1f s "
      "of serving\n",
      out.c_str(), config.profile.c_str(), static_cast<unsigned long long>(s.requests),
      static_cast<unsigned long long>(s.faulty_requests), static_cast<unsigned long long>(s.steps),
      static_cast<unsigned long long>(s.processes), static_cast<unsigned long long>(s.events),
      static_cast<double>(s.simulated_ns) / 1e9);
  if (!s.silent_faults.empty())
    std::fprintf(stderr, "teller simulate: WARNING: %s\n", s.silent_faults.c_str());
  return 0;
}

}  // namespace teller::cli
