// `teller eval`: scores methods (Teller's numeric diagnosis, classical baselines) or a
// predictions file against a labelled dataset, per view, with the metrics of docs/method.md
// §8 and the splits of docs/eval.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/file_util.h"
#include "teller/eval/dataset.h"
#include "teller/eval/evaluate.h"
#include "teller/eval/methods.h"
#include "teller/eval/predictions.h"
#include "teller/sim/faults.h"

namespace teller::cli {
namespace {

constexpr const char* kHelp =
    "usage: teller eval --data DIR (--method NAME[,NAME...] | --predictions FILE)\n"
    "                   [--split incident|engine|request|run[,...]] [--seed S] [--json]\n"
    "                   [--report OUT]\n"
    "                   [--write-predictions FILE] [-q]\n"
    "\n"
    "Scores abnormal-step detection, evidence operators, fault type and explanations\n"
    "(docs/method.md §8) on the dataset steps of DIR (from `teller dataset build`), separately\n"
    "in the vertical and horizontal view, and prints the paper's Table 2.\n"
    "\n"
    "  --data DIR             the labelled dataset\n"
    "  --method NAME          teller-numeric (the diagnosis of `teller diagnose`, no\n"
    "                         training) or a baseline with stat or struct features:\n"
    "                         kmeans, dbscan, iforest, gmm, svm, random-forest, xgboost\n"
    "                         (e.g. random-forest-struct); label-copy (a leakage probe:\n"
    "                         the label of the training step nearest in time); a comma\n"
    "                         list; all\n"
    "  --predictions FILE     score another tool's predictions (JSON lines; docs/eval.md)\n"
    "  --split KIND           incident (default): fault windows and healthy time blocks\n"
    "                         kept whole, 80/10/10, scored on the test part; engine: train\n"
    "                         on the other engines, test on each in turn, averaged; run: the\n"
    "                         same per setting (run); request: the paper's request-disjoint\n"
    "                         80/10/10, which leaks (batch siblings share a step record)\n"
    "  --seed S               split and resampling seed (default 1)\n"
    "  --json                 print one method's scores as JSON (one split)\n"
    "  --report OUT           write OUT/report.md and CSV tables (default splits:\n"
    "                         incident,engine; default method: all)\n"
    "  --write-predictions F  write the (one) method's predictions for the test steps\n"
    "  -q                     no progress lines\n";

bool ParseSeed(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || text[0] == '-') return false;
  *out = v;
  return true;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    if (comma > begin) out.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return out;
}

Status WriteText(const std::string& path, const std::string& text) {
  return WriteFileAtomic(path, text);
}

struct SplitResult {
  eval::SplitKind kind;
  std::vector<eval::Fold> folds;
  // Per method: the mean row and one row per fold.
  std::vector<eval::TableRow> mean_rows, fold_rows;
  std::optional<eval::SharedRecordCount> leakage;  // request split only
  // Recall per fault mechanism, per method (summed over folds).
  std::vector<std::pair<std::string, std::map<std::string, eval::MechanismRecall>>> mechanisms;
};

std::string Percent(uint64_t a, uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%",
                b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0);
  return buf;
}

std::string LeakageNote(const eval::SharedRecordCount& shared, size_t test_units) {
  return "WARNING: this split leaks: " + std::to_string(shared.records) +
         " engine-step records are in train and test; " + std::to_string(shared.test_units) +
         " of " + std::to_string(test_units) +
         " test steps sit on a record trained on (batch siblings).\n";
}

// The positive rate of the test units per view (mean over folds): flagging units at
// random at that rate scores step precision, recall and F1 equal to it, the bar a method
// (and the label-copy probe) has to clear.
std::string BaseRateNote(const eval::Dataset& ds, const std::vector<eval::Fold>& folds) {
  double rate[2] = {0, 0};
  for (const eval::Fold& f : folds) {
    for (int v = 0; v < 2; ++v) {
      uint64_t pos = 0;
      for (uint32_t i : f.test) pos += ds.units[i].views[v].is_anomaly;
      rate[v] += f.test.empty() ? 0.0 : static_cast<double>(pos) / f.test.size() / folds.size();
    }
  }
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "Base rate (abnormal test steps): H %.3f, V %.3f; random flags at that rate "
                "score step P = R = F1 = the rate.\n",
                rate[1], rate[0]);
  return buf;
}

}  // namespace

int EvalCommand(const std::vector<std::string>& args) {
  std::string data, methods_text, predictions_path, splits_text, report, write_predictions;
  uint64_t seed = 1;
  bool json = false, quiet = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller eval: %s needs a value\n", a.c_str());
        return false;
      }
      *v = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--data") {
      if (!value(&data)) return 2;
    } else if (a == "--method") {
      if (!value(&methods_text)) return 2;
    } else if (a == "--predictions") {
      if (!value(&predictions_path)) return 2;
    } else if (a == "--split") {
      if (!value(&splits_text)) return 2;
    } else if (a == "--seed") {
      std::string v;
      if (!value(&v)) return 2;
      if (!ParseSeed(v, &seed)) {
        std::fprintf(stderr, "teller eval: --seed expects a non-negative whole number, got '%s'\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--report") {
      if (!value(&report)) return 2;
    } else if (a == "--write-predictions") {
      if (!value(&write_predictions)) return 2;
    } else if (a == "--json") {
      json = true;
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else {
      std::fprintf(stderr, "teller eval: unknown argument '%s'\n\n%s", a.c_str(), kHelp);
      return 2;
    }
  }
  if (data.empty()) {
    std::fprintf(stderr, "teller eval: give the dataset with --data DIR\n\n%s", kHelp);
    return 2;
  }
  if (!methods_text.empty() && !predictions_path.empty()) {
    std::fprintf(stderr, "teller eval: give either --method or --predictions, not both\n");
    return 2;
  }
  if (methods_text.empty() && predictions_path.empty()) {
    if (report.empty()) {
      std::fprintf(stderr, "teller eval: give --method NAME or --predictions FILE\n\n%s", kHelp);
      return 2;
    }
    methods_text = "all";
  }
  if (splits_text.empty()) splits_text = report.empty() ? "incident" : "incident,engine";

  std::vector<eval::MethodSpec> methods;
  if (!methods_text.empty()) {
    auto parsed = eval::ParseMethods(methods_text);
    if (!parsed.ok()) {
      std::fprintf(stderr, "teller eval: %s\n", parsed.status().message().c_str());
      return 2;
    }
    methods = std::move(parsed).value();
  }
  std::vector<eval::SplitKind> splits;
  for (const std::string& s : SplitList(splits_text)) {
    auto k = eval::ParseSplit(s);
    if (!k.ok()) {
      std::fprintf(stderr, "teller eval: %s\n", k.status().message().c_str());
      return 2;
    }
    splits.push_back(k.value());
  }
  if (splits.empty()) {
    std::fprintf(stderr, "teller eval: --split names no split\n");
    return 2;
  }
  const size_t method_count = predictions_path.empty() ? methods.size() : 1;
  if (json && (method_count != 1 || splits.size() != 1)) {
    std::fprintf(
        stderr,
        "teller eval: --json prints one method on one split; got %zu methods and %zu splits\n",
        method_count, splits.size());
    return 2;
  }
  if (!write_predictions.empty() && method_count != 1) {
    std::fprintf(stderr, "teller eval: --write-predictions needs exactly one method\n");
    return 2;
  }

  auto progress = [quiet](std::string_view line) {
    if (!quiet) std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  };
  const auto t0 = std::chrono::steady_clock::now();
  bool baselines = false;
  for (const eval::MethodSpec& m : methods)
    baselines |=
        m.kind != eval::MethodKind::kTellerNumeric && m.kind != eval::MethodKind::kLabelCopy;
  eval::LoadOptions load;
  load.columns = baselines;  // the step records' columns feed only the baselines' features
  auto loaded = eval::LoadDataset(data, load);
  if (!loaded.ok()) {
    std::fprintf(stderr, "teller eval: %s\n", loaded.status().message().c_str());
    return 1;
  }
  const eval::Dataset& ds = loaded.value();
  {
    uint64_t v = 0, h = 0;
    for (const eval::Unit& u : ds.units) {
      v += u.views[0].is_anomaly;
      h += u.views[1].is_anomaly;
    }
    char buf[256];
    std::snprintf(
        buf, sizeof buf,
        "loaded %s: %zu settings, %zu dataset steps (vertical %s, horizontal %s abnormal)",
        data.c_str(), ds.settings.size(), ds.units.size(), Percent(v, ds.units.size()).c_str(),
        Percent(h, ds.units.size()).c_str());
    progress(buf);
  }

  std::optional<eval::Predictions> given;
  if (!predictions_path.empty()) {
    eval::PredictionFileStats st;
    auto p = eval::ReadPredictions(predictions_path, ds, &st);
    if (!p.ok()) {
      std::fprintf(stderr, "teller eval: %s\n", p.status().message().c_str());
      return 1;
    }
    given = std::move(p).value();
    if (st.unknown_units > 0) {
      std::fprintf(
          stderr,
          "teller eval: %s: %llu of %llu lines name steps this dataset does not have (ignored)\n",
          predictions_path.c_str(), static_cast<unsigned long long>(st.unknown_units),
          static_cast<unsigned long long>(st.lines));
    }
  }

  // Mechanisms that operator timing cannot show: reported apart (docs/eval.md).
  std::set<std::string> timing_invisible;
  for (const sim::Mechanism m :
       {sim::Mechanism::kStarvation, sim::Mechanism::kMisroute, sim::Mechanism::kOpReorder})
    timing_invisible.insert(sim::Info(m).name);
  eval::MethodRunner runner(ds, seed, progress);
  std::vector<SplitResult> results;
  std::string predictions_out;
  for (eval::SplitKind kind : splits) {
    auto folds = eval::MakeFolds(ds, kind, seed);
    if (!folds.ok()) {
      std::fprintf(stderr, "teller eval: %s\n", folds.status().message().c_str());
      return 1;
    }
    SplitResult sr;
    sr.kind = kind;
    sr.folds = std::move(folds).value();
    if (kind == eval::SplitKind::kRequest) {
      // The paper's protocol: batch siblings share one engine-step record, so a test unit
      // can sit on a record the methods were trained on.
      const eval::SharedRecordCount shared = eval::CountSharedRecords(ds, sr.folds.front());
      sr.leakage = shared;
      std::fprintf(stderr,
                   "teller eval: warning: the request split leaks: %llu engine-step records are "
                   "in both train and test (%llu of %zu test steps sit on one); prefer --split "
                   "incident\n",
                   static_cast<unsigned long long>(shared.records),
                   static_cast<unsigned long long>(shared.test_units),
                   sr.folds.front().test.size());
    }
    for (size_t m = 0; m < method_count; ++m) {
      const std::string display = given ? std::string("predictions") : methods[m].display;
      std::vector<eval::Scores> fold_scores;
      std::map<std::string, eval::MechanismRecall> by_mechanism;
      const auto tm = std::chrono::steady_clock::now();
      for (const eval::Fold& fold : sr.folds) {
        eval::Predictions local;
        const eval::Predictions* p = nullptr;
        if (given) {
          p = &*given;
        } else {
          auto r = runner.Predict(methods[m], fold);
          if (!r.ok()) {
            std::fprintf(stderr, "teller eval: %s: %s\n", methods[m].name.c_str(),
                         r.status().message().c_str());
            return 1;
          }
          local = std::move(r).value();
          p = &local;
        }
        eval::ScoreOptions so;
        so.low_prior_options.seed = seed;
        fold_scores.push_back(eval::ScoreUnits(ds, *p, fold.test, so));
        eval::AddMechanismRecall(ds, *p, fold.test, timing_invisible, &by_mechanism);
        if (!write_predictions.empty() && kind == splits.front()) {
          predictions_out += eval::PredictionsToJsonl(ds, *p, fold.test);
        }
        for (eval::View v : {eval::View::kHorizontal, eval::View::kVertical}) {
          sr.fold_rows.push_back(
              {display, eval::SplitName(kind), fold.name, eval::ViewName(v), fold_scores.back()});
        }
      }
      sr.mechanisms.emplace_back(display, std::move(by_mechanism));
      const eval::Scores mean = eval::AverageScores(fold_scores);
      for (eval::View v : {eval::View::kHorizontal, eval::View::kVertical}) {
        sr.mean_rows.push_back({display, eval::SplitName(kind),
                                sr.folds.size() == 1 ? sr.folds[0].name : "mean", eval::ViewName(v),
                                mean});
      }
      char buf[128];
      std::snprintf(buf, sizeof buf, "%s: split %s scored (%.1f s)", display.c_str(),
                    eval::SplitName(kind),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - tm).count());
      progress(buf);
      if (json) {
        std::fputs(eval::ScoresJson(mean, eval::SplitName(kind), seed).c_str(), stdout);
      }
    }
    results.push_back(std::move(sr));
  }
  for (const auto& [name, value] : runner.counters().items()) {
    if (!quiet)
      std::fprintf(stderr, "  %.*s=%llu\n", static_cast<int>(name.size()), name.data(),
                   static_cast<unsigned long long>(value));
  }
  if (!write_predictions.empty()) {
    if (Status st = WriteText(write_predictions, predictions_out); !st.ok()) {
      std::fprintf(stderr, "teller eval: %s\n", st.message().c_str());
      return 1;
    }
    progress("wrote " + write_predictions);
  }

  // Terminal tables.
  std::string text;
  for (const SplitResult& sr : results) {
    size_t test = 0;
    for (const eval::Fold& f : sr.folds) test += f.test.size();
    text +=
        "\nTable 2, split " + std::string(eval::SplitName(sr.kind)) + " (seed " +
        std::to_string(seed) + "; " + std::to_string(test) + " test steps" +
        (sr.folds.size() > 1 ? ", mean over " + std::to_string(sr.folds.size()) + " held-out groups"
                             : "") +
        ")\n";
    if (sr.leakage) text += LeakageNote(*sr.leakage, test);
    text += BaseRateNote(ds, sr.folds);
    text += eval::Table2Text(sr.mean_rows);
    if (sr.folds.size() > 1) {
      text += "\nper held-out " +
              std::string(sr.kind == eval::SplitKind::kEngine ? "engine" : "run") + ":\n";
      std::vector<eval::TableRow> rows = sr.fold_rows;
      for (eval::TableRow& r : rows) r.method += " @ " + r.fold;
      text += eval::Table2Text(rows);
    }
    if (sr.mechanisms.size() == 1) {
      text += "\nRecall per fault mechanism, split " + std::string(eval::SplitName(sr.kind)) +
              " (test steps, summed over folds):\n";
      text += eval::MechanismRecallMarkdown(sr.mechanisms[0].first, sr.mechanisms[0].second);
    }
    text += "\nLow prior, split " + std::string(eval::SplitName(sr.kind)) +
            " (test steps resampled to the fault prior, 50 repetitions; mean ± sd):\n";
    text += eval::LowPriorMarkdown(sr.mean_rows);
  }
  if (!json) std::fputs(text.c_str(), stdout);

  if (!report.empty()) {
    if (Status st = MakeDirs(report); !st.ok()) {
      std::fprintf(stderr, "teller eval: %s\n", st.message().c_str());
      return 1;
    }
    std::string md = "# teller eval report\n\nDataset `" + data +
                     "`: " + std::to_string(ds.settings.size()) + " settings, " +
                     std::to_string(ds.units.size()) + " dataset steps. Seed " +
                     std::to_string(seed) + ". Metrics and splits: docs/eval.md.\n";
    std::vector<eval::TableRow> all_mean, all_folds;
    std::string mechanism_csv;
    for (const SplitResult& sr : results) {
      const std::string split = eval::SplitName(sr.kind);
      md += "\n## Table 2, split " + split + "\n\n";
      if (sr.folds.size() > 1)
        md += "Mean over the " + std::to_string(sr.folds.size()) + " held-out groups.\n\n";
      if (sr.leakage) {
        size_t test = 0;
        for (const eval::Fold& f : sr.folds) test += f.test.size();
        md += LeakageNote(*sr.leakage, test) + "\n";
      }
      md += BaseRateNote(ds, sr.folds) + "\n";
      md += eval::Table2Markdown(sr.mean_rows);
      if (sr.folds.size() > 1) {
        md += "\n### Per held-out " +
              std::string(sr.kind == eval::SplitKind::kEngine ? "engine" : "run") + " (" + split +
              " split)\n\n";
        std::vector<eval::TableRow> rows = sr.fold_rows;
        for (eval::TableRow& r : rows) r.method += " @ " + r.fold;
        md += eval::Table2Markdown(rows);
      }
      md += "\n### Recall per fault mechanism (" + split +
            " split)\n\nTest steps labelled abnormal in each view, summed over folds; "
            "\"without evidence\": those of them with no evidence node in the view. The "
            "timing-invisible mechanisms follow apart; the last row is the false-alarm rate on "
            "steps no fault acted on.\n\n";
      for (const auto& [method, rows] : sr.mechanisms) {
        md += eval::MechanismRecallMarkdown(method, rows) + "\n";
        mechanism_csv += eval::MechanismRecallCsv(split, method, rows, mechanism_csv.empty());
      }
      md += "\n### Low prior (" + split + " split)\n\n" + eval::LowPriorMarkdown(sr.mean_rows);
      all_mean.insert(all_mean.end(), sr.mean_rows.begin(), sr.mean_rows.end());
      all_folds.insert(all_folds.end(), sr.fold_rows.begin(), sr.fold_rows.end());
    }
    if (const auto counters = runner.counters().items(); !counters.empty()) {
      md += "\n## Counters\n\n";
      for (const auto& [name, value] : counters)
        md += "- `" + std::string(name) + "` = " + std::to_string(value) + "\n";
    }
    for (const auto& [file, body] : std::vector<std::pair<std::string, std::string>>{
             {"report.md", md},
             {"table2.csv", eval::Table2Csv(all_mean)},
             {"per_fold.csv", eval::Table2Csv(all_folds)},
             {"low_prior.csv", eval::LowPriorCsv(all_mean)},
             {"mechanism_recall.csv", mechanism_csv}}) {
      if (Status st = WriteText(report + "/" + file, body); !st.ok()) {
        std::fprintf(stderr, "teller eval: %s\n", st.message().c_str());
        return 1;
      }
    }
    progress("wrote " + report +
             "/report.md, table2.csv, per_fold.csv, low_prior.csv, mechanism_recall.csv");
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "done in %.1f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  progress(buf);
  return 0;
}

}  // namespace teller::cli
