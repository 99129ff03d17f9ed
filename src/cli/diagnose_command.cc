// `teller diagnose`: abnormal steps, evidence operators, fault category and explanation;
// failures (crashes, exit statuses, open ranges, log errors), also from logs alone
// (docs/diagnose.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/cli/commands.h"
#include "src/cli/diagnose_model.h"
#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/diagnose/diagnose.h"
#include "teller/diagnose/failures.h"
#include "teller/ingest/ingest.h"
#include "teller/report/report.h"

namespace teller::cli {
namespace {

constexpr const char* kHelp =
    "usage: teller diagnose TRACE... [--baseline TRACE...] [--json FILE] [--html FILE]\n"
    "                       [--trace-out FILE] [--top K] [--steps N] [--threshold X]\n"
    "                       [--min-effect X] [--rules FILE] [--log-signatures FILE]\n"
    "                       [--model DIR] [--fail-on-anomaly]\n"
    "\n"
    "Rebuilds per-step call trees and finds the abnormal steps, the operators that are the\n"
    "evidence, a likely fault category and an explanation with the aligned log lines.\n"
    "Failures are findings too, with or without timing evidence: a `teller run` whose\n"
    "command died of a signal, exited non-zero or was cut short, ranges still open at\n"
    "the end of a process (what was in flight), and error lines of the logs (CUDA out of\n"
    "memory, illegal memory access, NCCL timeouts and errors, Xid, Python tracebacks,\n"
    "engine errors, other ERROR/CRITICAL lines grouped by template).\n"
    "TRACE: a `teller run` or `teller simulate` directory, a .tlr file, Kineto JSON\n"
    "(.json, .json.gz, or a folder of rank files), an Nsight Systems SQLite export, or\n"
    "log files: logs alone are triaged for failures (\"mode\": \"logs\" in the JSON).\n"
    "Several TRACEs are one trace (e.g. one file per rank, or a trace and its logs).\n"
    "\n"
    "  --baseline TRACE...  healthy traces of the same deployment: operator families are\n"
    "                       modelled on them and the incident is scored against them,\n"
    "                       and the operators they never ran are listed and compared\n"
    "                       with the work they replaced (default: each family is\n"
    "                       modelled on the trace itself)\n"
    "  --json FILE          write the full report (schema: docs/diagnose.md)\n"
    "  --html FILE          write a self-contained HTML report to open in a browser:\n"
    "                       verdict, step times per rank, a timeline of each abnormal\n"
    "                       step, operators, collectives, logs, counters (docs/report.md)\n"
    "  --trace-out FILE     write the trace with the findings as a Chrome trace-event\n"
    "                       JSON for ui.perfetto.dev (as `teller export --perfetto`)\n"
    "  --top K              operators in the top-operators ranking (default 10)\n"
    "  --steps N            abnormal steps printed (default 10)\n"
    "  --threshold X        step score above which a step is abnormal (default 0.6)\n"
    "  --min-effect X       least time ratio to its peers that makes an instance\n"
    "                       evidence; X > 1 (default 1.2: 20% slower)\n"
    "  --rules FILE         classification rules (default: built in)\n"
    "  --log-signatures FILE\n"
    "                       what log lines report, replacing the built-in signatures (a\n"
    "                       file of the form of share/teller/log_signatures.rules)\n"
    "  --model DIR          a model of `teller train` (docs/rca.md) also reads every step\n"
    "                       with step markers and names the fault type of the abnormal\n"
    "                       ones (the rules' stays in rule_fault_type; the JSON gives\n"
    "                       the model's probabilities and, from a MoT, its sentence)\n"
    "  --fail-on-anomaly    exit with status 3 when an abnormal step or an error\n"
    "                       finding was found (for CI)\n"
    "\n"
    "Exit status: 0 done (nothing abnormal, or --fail-on-anomaly not given), 1 error\n"
    "(unreadable input, nothing to diagnose), 2 usage, 3 anomaly (--fail-on-anomaly).\n";

constexpr int kExitAnomaly = 3;

// The report of a trace without events: the failure findings of its logs and run manifest,
// in the top-level shape of the diagnosis JSON (docs/diagnose.md).
std::string LogsJson(const Trace& trace, const std::vector<diagnose::Finding>& findings,
                     const std::vector<std::string>& sources) {
  std::string out;
  JsonObjectWriter w(out);
  w.Field("format", "teller-diagnosis").Field("version", 2).Field("mode", "logs");
  w.Key("sources");
  JsonArrayWriter s(out);
  for (const std::string& src : sources) s.Element(src);
  s.Close();
  w.Field("log_lines", static_cast<uint64_t>(trace.logs.size()));
  w.Key("findings");
  diagnose::AppendFindingsJson(out, findings);
  w.Key("counters");
  JsonObjectWriter c(out);
  for (const auto& [name, value] : trace.counters.items()) {
    if (value != 0) c.Field(name, value);
  }
  c.Close();
  w.Close();
  out += '\n';
  return out;
}

}  // namespace

Status LoadTrace(const std::vector<std::string>& paths, const std::string& rules, Trace* trace,
                 reconstruct::Reconstruction* r, ingest::PartSource* parts) {
  TELLER_RETURN_IF_ERROR(ingest::ImportPaths(paths, *trace, parts));
  reconstruct::Options o;
  if (!rules.empty()) {
    auto c = reconstruct::Classifier::FromFile(rules);
    if (!c.ok()) return c.status();
    o.classifier = c.value();
  }
  *r = reconstruct::Reconstruct(*trace, o);
  return Status::Ok();
}

namespace {

int WriteHtml(const Trace& trace, const reconstruct::Reconstruction& r,
              const diagnose::Diagnosis& d, const std::vector<std::string>& sources,
              const std::string& path) {
  report::HtmlOptions options;
  options.sources = sources;
  report::HtmlStats stats;
  const auto start = std::chrono::steady_clock::now();
  const std::string html = report::ToHtml(trace, r, d, options, &stats);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (Status st = WriteFileAtomic(path, html); !st.ok()) {
    std::fprintf(stderr, "teller diagnose: %s\n", st.message().c_str());
    return 1;
  }
  std::printf("wrote %s (%.2f MB in %.2f s; %zu steps with a timeline): open it in a browser\n",
              path.c_str(), static_cast<double>(html.size()) / 1e6, seconds, stats.detailed_steps);
  return 0;
}

}  // namespace

int DiagnoseCommand(const std::vector<std::string>& args, ingest::PartSource* parts) {
  std::vector<std::string> traces, baseline;
  std::string json, rules, html, trace_out, model_dir;
  diagnose::Options options;
  size_t max_steps = 10;
  bool in_baseline = false;
  bool fail_on_anomaly = false;
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
    } else if (a == "--fail-on-anomaly") {
      fail_on_anomaly = true;
    } else if (a == "--min-effect") {
      if (!value(&v)) return 2;
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      // !(x > 1) also refuses NaN; a ratio past 1e6 is a typo, not a threshold.
      if (end == v.c_str() || *end != '\0' || !(x > 1) || x > 1e6) {
        std::fprintf(stderr,
                     "teller diagnose: --min-effect expects a time ratio above 1 (e.g. 1.5), "
                     "got '%s'\n",
                     v.c_str());
        return 2;
      }
      options.localize.min_ratio = x;
    } else if (a == "--json") {
      if (!value(&json)) return 2;
    } else if (a == "--model") {
      if (!value(&model_dir)) return 2;
    } else if (a == "--html") {
      if (!value(&html)) return 2;
    } else if (a == "--trace-out") {
      if (!value(&trace_out)) return 2;
    } else if (a == "--rules") {
      if (!value(&rules)) return 2;
    } else if (a == "--log-signatures") {
      if (!value(&v)) return 2;
      auto sigs = logs::SignatureSet::FromFile(v);
      if (!sigs.ok()) {
        std::fprintf(stderr, "teller diagnose: %s\n", sigs.status().message().c_str());
        return 1;
      }
      options.log_signatures = sigs.value();
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
  // The model first: a wrong path is an error before minutes of import.
  std::optional<rca::Model> learned;
  if (!model_dir.empty()) {
    Result<rca::Model> m = rca::Model::Load(model_dir);
    if (!m.ok()) {
      std::fprintf(stderr, "teller diagnose: --model %s: %s\n", model_dir.c_str(),
                   m.status().message().c_str());
      return 1;
    }
    learned.emplace(std::move(m).value());
  }
  Trace trace;
  reconstruct::Reconstruction r;
  if (Status st = LoadTrace(traces, rules, &trace, &r, parts); !st.ok()) {
    std::fprintf(stderr, "teller diagnose: %s\n", st.message().c_str());
    return 1;
  }
  std::vector<diagnose::Finding> findings = diagnose::FindFailures(
      trace, &r, options.log_signatures ? *options.log_signatures : *logs::SignatureSet::BuiltIn());
  if (r.nodes.size() == 0) {
    if (learned) {
      std::fprintf(stderr, "teller diagnose: no events: --model %s has no steps to read\n",
                   model_dir.c_str());
    }
    for (diagnose::Finding& f : diagnose::LogPeriodFindings(trace, options.log))
      findings.push_back(std::move(f));
    // Logs alone (or a run that recorded no events): the failures are the diagnosis.
    if (trace.logs.size() == 0 && !trace.run.known) {
      std::fprintf(stderr, "teller diagnose: %s holds no events or log lines to diagnose\n",
                   traces.front().c_str());
      return 1;
    }
    const std::string text = diagnose::FindingsText(findings);
    if (text.empty()) {
      std::printf("no failures found in %zu log lines (no events to diagnose for steps)\n",
                  trace.logs.size());
    } else {
      std::fputs(text.c_str(), stdout);
    }
    if (!json.empty()) {
      if (Status st = WriteFileAtomic(json, LogsJson(trace, findings, traces)); !st.ok()) {
        std::fprintf(stderr, "teller diagnose: %s\n", st.message().c_str());
        return 1;
      }
      std::printf("wrote %s\n", json.c_str());
    }
    if (!trace_out.empty()) {
      std::fprintf(stderr, "teller diagnose: no events: --trace-out %s not written\n",
                   trace_out.c_str());
      return 1;
    }
    if (!html.empty()) {
      diagnose::Diagnosis logs_only;
      logs_only.mode = "logs";
      logs_only.findings = findings;
      if (WriteHtml(trace, r, logs_only, traces, html) != 0) return 1;
    }
    return fail_on_anomaly && diagnose::HasErrorFinding(findings) ? kExitAnomaly : 0;
  }
  localize::Model model;
  const localize::Model* base = nullptr;
  if (!baseline.empty()) {
    Trace bt;
    reconstruct::Reconstruction br;
    if (Status st = LoadTrace(baseline, rules, &bt, &br, parts); !st.ok()) {
      std::fprintf(stderr, "teller diagnose: baseline: %s\n", st.message().c_str());
      return 1;
    }
    model = localize::FitBaseline({{&bt, &br}}, options.localize);
    options.log.baseline_templates = diagnose::LogTemplatesOf(bt);
    base = &model;
  }
  diagnose::Diagnosis d = diagnose::Diagnose(trace, r, options, base);
  if (learned) {
    if (Status st = ApplyModel(*learned, model_dir, trace, r, &d); !st.ok()) {
      std::fprintf(stderr, "teller diagnose: --model %s: %s\n", model_dir.c_str(),
                   st.message().c_str());
      return 1;
    }
    if (d.model.steps_read == 0) {
      std::fprintf(stderr,
                   "teller diagnose: --model %s read no step: it reads steps with step markers "
                   "only\n",
                   model_dir.c_str());
    }
  }
  if (r.steps.empty()) {
    std::fprintf(stderr,
                 "teller diagnose: no steps in %s (no teller.step ranges, engine step markers or "
                 "ProfilerStep#N): %s\n",
                 traces.front().c_str(),
                 d.scope == "iterations"
                     ? "the iterations its work repeats in are diagnosed as its steps"
                     : "each process's whole timeline is diagnosed as one unit");
  }
  std::fputs(diagnose::ToText(trace, d, max_steps).c_str(), stdout);
  if (!json.empty()) {
    if (Status st = WriteFileAtomic(json, diagnose::ToJson(trace, d, traces)); !st.ok()) {
      std::fprintf(stderr, "teller diagnose: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("wrote %s\n", json.c_str());
  }
  if (!trace_out.empty() && WriteChromeTrace(trace, r, &d, trace_out, "teller diagnose") != 0) {
    return 1;
  }
  if (!html.empty() && WriteHtml(trace, r, d, traces, html) != 0) return 1;
  if (fail_on_anomaly && (d.abnormal_steps > 0 || diagnose::HasErrorFinding(d.findings))) {
    return kExitAnomaly;
  }
  return 0;
}

}  // namespace teller::cli
