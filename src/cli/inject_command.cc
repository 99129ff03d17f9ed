// `teller inject TRACE --fault MECHANISM ... --out OUT` (docs/inject.md).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/inject/inject.h"
#include "teller/sim/faults.h"

namespace teller::cli {
namespace {

constexpr const char* kInjectUsage =
    "usage: teller inject TRACE --fault MECHANISM --out OUT [--target REGEX]\n"
    "                     [--magnitude X] [--onset T] [--duration D] [--rank R] [--seed S]\n"
    "       teller inject --list\n"
    "\n"
    "Applies one fault mechanism to a recorded trace and writes the modified trace as a\n"
    "Teller raw directory (readable by every Teller command) with its ground truth\n"
    "(OUT/ground_truth.json): which steps, requests and operators the fault acted on.\n"
    "Delays propagate causally: later work on the same GPU stream, host threads that\n"
    "wait for it, the ranges around them, and the same collective on the other ranks.\n"
    "TRACE: a `teller run`/`teller simulate` directory or .tlr file, a Kineto .json/.json.gz\n"
    "(or a folder of per-rank files), or an Nsight Systems .sqlite export.\n"
    "\n"
    "options:\n"
    "  --fault M       the mechanism (--list shows them with their default magnitude)\n"
    "  --target REGEX  what it acts on (POSIX extended regex): kernel names for the kernel\n"
    "                  mechanisms and launch_latency, host-call names for sync_stall,\n"
    "                  operator range names for allocator_stall; default: the mechanism's\n"
    "                  own (kernel_throttle: the compute class with the most GPU time)\n"
    "  --magnitude X   slowdown factor (kernel_*, gpu_throttle, launch_latency, slow_link);\n"
    "                  x 0.9 ms more per synchronization (sync_stall), x 180 us per\n"
    "                  allocator miss (allocator_stall), x 55 us late per collective\n"
    "                  (straggler_rank), the simulator's scales; default per mechanism\n"
    "  --onset T       start of the fault, from the first event of the trace (1.5s, 200ms,\n"
    "                  30us; default 0)\n"
    "  --duration D    length of the fault (default: to the end of the trace)\n"
    "  --rank R        the rank a one-rank mechanism acts on (all but kernel_throttle and\n"
    "                  slow_link; default: chosen by --seed)\n"
    "  --seed S        seed for the choices above (default 1)\n"
    "  --out OUT       output directory; must not exist or be empty\n"
    "  --list          the mechanisms teller inject supports\n";

void PrintList() {
  std::printf("%-20s %-20s %9s  %s\n", "mechanism", "category", "default", "what it does");
  for (const sim::MechanismInfo& info : sim::Mechanisms()) {
    if (!info.injectable) continue;
    std::printf("%-20s %-20s %9g  %s\n", info.name,
                std::string(FaultCategoryName(info.category)).c_str(), info.default_magnitude,
                info.summary);
  }
  std::printf("\nNot injectable into a recorded trace (simulator only):");
  for (const sim::MechanismInfo& info : sim::Mechanisms()) {
    if (!info.injectable) std::printf(" %s", info.name);
  }
  std::printf("\n");
}

std::string Human(int64_t ns) {
  char buf[32];
  if (ns >= 1000000000) {
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  } else if (ns >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  }
  return buf;
}

}  // namespace

int InjectCommand(const std::vector<std::string>& args) {
  inject::InjectOptions options;
  std::string input, out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* flag) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller inject: %s needs a value\n%s", flag, kInjectUsage);
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kInjectUsage, stdout);
      return 0;
    }
    if (a == "--list") {
      PrintList();
      return 0;
    }
    if (a == "--fault" || a == "--target" || a == "--magnitude" || a == "--onset" ||
        a == "--duration" || a == "--rank" || a == "--seed" || a == "--out") {
      const std::string* v = value(a.c_str());
      if (v == nullptr) return 2;
      if (a == "--fault") {
        options.mechanism = *v;
      } else if (a == "--target") {
        options.target = *v;
      } else if (a == "--out") {
        out = *v;
      } else if (a == "--onset" || a == "--duration") {
        auto ns = inject::ParseDurationNs(*v);
        if (!ns.ok()) {
          std::fprintf(stderr, "teller inject: %s: %s\n", a.c_str(), ns.status().message().c_str());
          return 2;
        }
        (a == "--onset" ? options.onset_ns : options.duration_ns) = ns.value();
      } else {
        char* end = nullptr;
        const char* text = v->c_str();
        if (a == "--magnitude") {
          options.magnitude = std::strtod(text, &end);
        } else if (a == "--rank") {
          options.rank = static_cast<int>(std::strtol(text, &end, 10));
        } else {
          options.seed = std::strtoull(text, &end, 10);
        }
        if (end == text || *end != '\0' || (a == "--rank" && options.rank < 0)) {
          std::fprintf(stderr, "teller inject: %s: bad value '%s'\n", a.c_str(), text);
          return 2;
        }
      }
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller inject: unknown option %s\n%s", a.c_str(), kInjectUsage);
      return 2;
    }
    if (!input.empty()) {
      std::fprintf(stderr, "teller inject: one TRACE only (got %s and %s)\n", input.c_str(),
                   a.c_str());
      return 2;
    }
    input = a;
  }
  if (input.empty() || options.mechanism.empty() || out.empty()) {
    std::fprintf(stderr, "teller inject: TRACE, --fault and --out are required\n%s", kInjectUsage);
    return 2;
  }

  raw::ExportOptions eo;
  eo.command = {"teller", "inject"};
  eo.command.insert(eo.command.end(), args.begin(), args.end());
  eo.teller_version = TELLER_VERSION;
  eo.source = input;
  auto run = inject::InjectIntoTrace(input, out, options, eo);
  if (!run.ok()) {
    std::fprintf(stderr, "teller inject: %s\n", run.status().message().c_str());
    return 1;
  }
  const inject::InjectEffect& fx = run->result.effect;
  const format::GroundTruth& gt = run->result.truth;
  size_t faulty = 0;
  for (const auto& st : gt.steps) faulty += st.fault >= 0;
  size_t faulty_requests = 0;
  for (const auto& r : gt.requests) faulty_requests += r.is_fault;
  std::printf("teller inject: %s (%s) into %s\n", fx.mechanism.c_str(), fx.category.c_str(),
              input.c_str());
  std::printf("  target     %s\n", fx.target.c_str());
  std::printf(
      "  magnitude  %g; window %s .. %s\n", fx.magnitude, Human(options.onset_ns).c_str(),
      options.duration_ns > 0 ? Human(options.onset_ns + options.duration_ns).c_str() : "end");
  std::printf("  acted on   %llu event(s)%s; %llu event(s) moved (replay: %d sweep(s))\n",
              static_cast<unsigned long long>(fx.modified),
              fx.inserted ? (" (" + std::to_string(fx.inserted) + " added)").c_str() : "",
              static_cast<unsigned long long>(fx.shifted), fx.sweeps);
  std::printf("  median     %s -> %s; trace span %s -> %s\n", Human(fx.median_before_ns).c_str(),
              Human(fx.median_after_ns).c_str(), Human(fx.span_before_ns).c_str(),
              Human(fx.span_after_ns).c_str());
  std::printf("  truth      %zu of %zu step(s) faulty, %zu of %zu request(s)\n", faulty,
              gt.steps.size(), faulty_requests, gt.requests.size());
  if (!gt.faults.empty()) std::printf("  %s\n", gt.faults.front().description.c_str());
  std::printf("wrote %s: %llu raw file(s), %llu events, %llu log line(s), ground_truth.json\n",
              out.c_str(), static_cast<unsigned long long>(run->exported.files),
              static_cast<unsigned long long>(run->exported.events),
              static_cast<unsigned long long>(run->exported.log_lines));
  if (run->exported.dropped_gpu_annotations > 0) {
    std::printf(
        "  note: %llu GPU annotation(s) have no place in the raw format and were left out\n",
        static_cast<unsigned long long>(run->exported.dropped_gpu_annotations));
  }
  std::printf(
      "check: re-imported %llu events, %llu difference(s); %llu of %llu locator(s) resolve\n",
      static_cast<unsigned long long>(run->verified_events),
      static_cast<unsigned long long>(run->verify_mismatches),
      static_cast<unsigned long long>(run->locators - run->locators_unresolved),
      static_cast<unsigned long long>(run->locators));
  for (const std::string& note : fx.notes)
    std::fprintf(stderr, "teller inject: note: %s\n", note.c_str());
  return 0;
}

}  // namespace teller::cli
