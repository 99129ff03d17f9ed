// `teller diagnose`: abnormal steps, evidence operators, fault category and explanation
// (docs/diagnose.md).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/file_util.h"
#include "teller/diagnose/diagnose.h"
#include "teller/ingest/ingest.h"

namespace teller::cli {
namespace {

constexpr const char* kHelp =
    "usage: teller diagnose TRACE... [--baseline TRACE...] [--json FILE] [--top K]\n"
    "                       [--steps N] [--threshold X] [--rules FILE]\n"
    "\n"
    "Rebuilds per-step call trees and finds the abnormal steps, the operators that are the\n"
    "evidence, a likely fault category and an explanation with the aligned log lines.\n"
    "TRACE: a `teller run` or `teller simulate` directory, a .tlr file, Kineto JSON\n"
    "(.json, .json.gz, or a folder of rank files) or an Nsight Systems SQLite export.\n"
    "Several TRACEs are one trace (e.g. one file per rank).\n"
    "\n"
    "  --baseline TRACE...  healthy traces of the same deployment: operator families are\n"
    "                       modelled on them and the incident is scored against them\n"
    "                       (default: each family is modelled on the trace itself)\n"
    "  --json FILE          write the full report (schema: docs/diagnose.md)\n"
    "  --top K              operators in the top-operators ranking (default 10)\n"
    "  --steps N            abnormal steps printed (default 10)\n"
    "  --threshold X        step score above which a step is abnormal (default 0.6)\n"
    "  --rules FILE         classification rules (default: built in)\n";

Status Load(const std::vector<std::string>& paths, const std::string& rules, Trace* trace,
            reconstruct::Reconstruction* r) {
  for (const std::string& p : paths) TELLER_RETURN_IF_ERROR(ingest::ImportPath(p, *trace));
  reconstruct::Options o;
  if (!rules.empty()) {
    auto c = reconstruct::Classifier::FromFile(rules);
    if (!c.ok()) return c.status();
    o.classifier = c.value();
  }
  *r = reconstruct::Reconstruct(*trace, o);
  return Status::Ok();
}

}  // namespace

int DiagnoseCommand(const std::vector<std::string>& args) {
  std::vector<std::string> traces, baseline;
  std::string json, rules;
  diagnose::Options options;
  size_t max_steps = 10;
  bool in_baseline = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller diagnose: %s needs a value\n", a.c_str());
        return false;
      }
      *v = args[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--baseline") {
      in_baseline = true;
    } else if (a == "--json") {
      if (!value(&json)) return 2;
    } else if (a == "--rules") {
      if (!value(&rules)) return 2;
    } else if (a == "--top" || a == "--steps") {
      if (!value(&v)) return 2;
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < 1 || n > 100000) {
        std::fprintf(stderr, "teller diagnose: %s expects a positive whole number, got '%s'\n",
                     a.c_str(), v.c_str());
        return 2;
      }
      (a == "--top" ? options.top_k : max_steps) = static_cast<size_t>(n);
    } else if (a == "--threshold") {
      if (!value(&v)) return 2;
      char* end = nullptr;
      options.step_threshold = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || options.step_threshold < 0 ||
          options.step_threshold >= 1) {
        std::fprintf(stderr, "teller diagnose: --threshold expects a number in [0, 1), got '%s'\n",
                     v.c_str());
        return 2;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller diagnose: unknown option '%s'\n\n%s", a.c_str(), kHelp);
      return 2;
    } else {
      (in_baseline ? baseline : traces).push_back(a);
    }
  }
  if (traces.empty()) {
    std::fprintf(stderr, "teller diagnose: give at least one TRACE\n\n%s", kHelp);
    return 2;
  }
  if (in_baseline && baseline.empty()) {
    std::fprintf(stderr, "teller diagnose: --baseline needs at least one TRACE after it\n");
    return 2;
  }
  Trace trace;
  reconstruct::Reconstruction r;
  if (Status st = Load(traces, rules, &trace, &r); !st.ok()) {
    std::fprintf(stderr, "teller diagnose: %s\n", st.message().c_str());
    return 1;
  }
  if (r.nodes.size() == 0) {
    std::fprintf(stderr, "teller diagnose: %s holds no events to diagnose\n",
                 traces.front().c_str());
    return 1;
  }
  if (r.steps.empty()) {
    std::fprintf(stderr,
                 "teller diagnose: no steps in %s (no teller.step ranges, engine step markers or "
                 "ProfilerStep#N): each process's whole timeline is diagnosed as one unit\n",
                 traces.front().c_str());
  }
  localize::Model model;
  const localize::Model* base = nullptr;
  if (!baseline.empty()) {
    Trace bt;
    reconstruct::Reconstruction br;
    if (Status st = Load(baseline, rules, &bt, &br); !st.ok()) {
      std::fprintf(stderr, "teller diagnose: baseline: %s\n", st.message().c_str());
      return 1;
    }
    model = localize::FitBaseline({{&bt, &br}}, options.localize);
    base = &model;
  }
  const diagnose::Diagnosis d = diagnose::Diagnose(trace, r, options, base);
  std::fputs(diagnose::ToText(trace, d, max_steps).c_str(), stdout);
  if (!json.empty()) {
    if (Status st = WriteFileAtomic(json, diagnose::ToJson(trace, d, traces)); !st.ok()) {
      std::fprintf(stderr, "teller diagnose: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("wrote %s\n", json.c_str());
  }
  return 0;
}

}  // namespace teller::cli
