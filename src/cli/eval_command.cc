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
    "                   [--seeds A-B] [--folds K] [--report OUT] [--epochs E]\n"
    "                   [--write-predictions FILE] [--without-logs] [-q]\n"
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
    "                         the label of the training step nearest in time); teller-gcn,\n"
    "                         teller-mot or teller-single (the learned models, trained\n"
    "                         per fold, docs/rca.md; teller-gcn@512: with a TPE\n"
    "                         vocabulary of 512 tokens, default 256; teller-mot:no-trace\n"
    "                         or :no-log: the MoT without one stream); a comma list; all\n"
    "  --predictions FILE     score another tool's predictions (JSON lines; docs/eval.md)\n"
    "  --split KIND           incident (default): fault windows and healthy time blocks\n"
    "                         kept whole, 80/10/10, scored on the test part; engine: train\n"
    "                         on the other engines, test on each in turn, averaged; run: the\n"
    "                         same per setting (run); request: the paper's request-disjoint\n"
    "                         80/10/10, which leaks (batch siblings share a step record)\n"
    "  --seed S               split and resampling seed (default 1)\n"
    "  --seeds A-B|A,B,..     repeat everything per seed (split, models, resampling) and\n"
    "                         add Table 2 as mean ± 95 % interval over the seeds\n"
    "  --folds K              K-fold cross-validation of the incident and request\n"
    "                         splits (K >= 3): every incident (request) tested once,\n"
    "                         rates averaged over the folds, recall per mechanism summed\n"
    "                         (default 1: one 80/10/10 cut)\n"
    "  --epochs E             training epochs of the learned models (default 30)\n"
    "  --json                 print one method's scores as JSON (one split)\n"
    "  --report OUT           write OUT/report.md and CSV tables (default splits:\n"
    "                         incident,engine; default method: all)\n"
    "  --write-predictions F  write the (one) method's predictions for the test steps\n"
    "  --without-logs         the methods read no log (an ablation): teller-numeric\n"
    "                         without its log evidence, the baselines without their\n"
    "                         log features; teller-mot and teller-single are refused\n"
    "  -q                     no progress lines\n";

bool ParseSeed(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || text[0] == '-') return false;
  *out = v;
  return true;
}

// "A-B" (inclusive) or "A,B,C".
bool ParseSeeds(const std::string& text, std::vector<uint64_t>* out) {
  out->clear();
  const size_t dash = text.find('-');
  if (dash != std::string::npos) {
    uint64_t a = 0, b = 0;
    if (!ParseSeed(text.substr(0, dash), &a) || !ParseSeed(text.substr(dash + 1), &b) || b < a ||
        b - a >= 100)
      return false;
    for (uint64_t s = a; s <= b; ++s) out->push_back(s);
    return true;
  }
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    uint64_t s = 0;
    if (!ParseSeed(text.substr(begin, comma - begin), &s)) return false;
    out->push_back(s);
    begin = comma + 1;
  }
  return !out->empty() && out->size() <= 100;
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
  std::vector<eval::TableRow> step_rows;           // Table 2 on engine-step units
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

// What one fold of a split is, for the tables' headings: the engine and run splits hold a
// group out, the incident and request splits (with --folds) test one part in turn.
std::string FoldWord(eval::SplitKind kind) {
  if (kind == eval::SplitKind::kEngine) return "held-out engine";
  if (kind == eval::SplitKind::kRun) return "held-out run";
  return "fold";
}
std::string FoldsWord(eval::SplitKind kind) {
  if (kind == eval::SplitKind::kEngine || kind == eval::SplitKind::kRun) return "held-out groups";
  return kind == eval::SplitKind::kIncident ? "folds (every incident tested once)"
                                            : "folds (every request tested once)";
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
  uint64_t seed = 1, epochs = 30, k_folds = 1;
  std::string seeds_text;
  std::vector<uint64_t> run_seeds;
  bool json = false, quiet = false, with_logs = true;
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
    } else if (a == "--seeds") {
      if (!value(&seeds_text)) return 2;
      if (!ParseSeeds(seeds_text, &run_seeds)) {
        std::fprintf(stderr,
                     "teller eval: --seeds expects A-B or a comma list of whole numbers (at most "
                     "100 seeds), got '%s'\n",
                     seeds_text.c_str());
        return 2;
      }
    } else if (a == "--epochs") {
      std::string v;
      if (!value(&v)) return 2;
      if (!ParseSeed(v, &epochs) || epochs < 1 || epochs > 100000) {
        std::fprintf(stderr,
                     "teller eval: --epochs expects a whole number in [1, 100000], got '%s'\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--folds") {
      std::string v;
      if (!value(&v)) return 2;
      if (!ParseSeed(v, &k_folds) || k_folds == 2 || k_folds < 1 ||
          k_folds > static_cast<uint64_t>(eval::kMaxFolds)) {
        std::fprintf(stderr,
                     "teller eval: --folds expects 1 or a whole number in [3, %d], got '%s'\n",
                     eval::kMaxFolds, v.c_str());
        return 2;
      }
    } else if (a == "--report") {
      if (!value(&report)) return 2;
    } else if (a == "--write-predictions") {
      if (!value(&write_predictions)) return 2;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--without-logs") {
      with_logs = false;
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
  if (run_seeds.empty()) {
    run_seeds = {seed};
  } else {
    seed = run_seeds.front();  // the seed of the printed tables
    if (json && run_seeds.size() > 1) {
      std::fprintf(stderr, "teller eval: --json prints one seed; --seeds gives %zu\n",
                   run_seeds.size());
      return 2;
    }
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
  // The step records' columns feed the baselines' features and, for every method, the
  // root-cause keys (operator family and rank of each node).
  eval::LoadOptions load;
  load.columns = true;
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
  const eval::EngineStepUnits engine_steps = eval::CollapseToEngineSteps(ds);
  eval::MethodRunner runner(ds, seed, progress);
  runner.set_epochs(static_cast<int>(epochs));
  runner.set_with_logs(with_logs);
  std::vector<SplitResult> results;
  std::string predictions_out;
  // --seeds: everything below once per seed; the tables of the first seed are printed, and
  // every seed's Table 2 rows feed the table over seeds.
  std::vector<eval::SeedRow> seed_rows;
  for (size_t si = 0; si < run_seeds.size(); ++si) {
    const uint64_t run_seed = run_seeds[si];
    const bool primary = si == 0;
    runner.set_seed(run_seed);
    for (eval::SplitKind kind : splits) {
      // --folds is for the splits that cut once; the engine and run splits hold each group
      // out in turn whatever it says.
      const bool cut_once = kind == eval::SplitKind::kIncident || kind == eval::SplitKind::kRequest;
      auto folds = eval::MakeFolds(ds, kind, run_seed, cut_once ? static_cast<int>(k_folds) : 1);
      if (!folds.ok()) {
        std::fprintf(stderr, "teller eval: %s\n", folds.status().message().c_str());
        return 1;
      }
      SplitResult sr;
      sr.kind = kind;
      sr.folds = std::move(folds).value();
      if (kind == eval::SplitKind::kRequest && primary) {
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
        std::vector<eval::Scores> fold_scores, step_scores;
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
          so.low_prior_options.seed = run_seed;
          fold_scores.push_back(eval::ScoreUnits(ds, *p, fold.test, so));
          eval::AddMechanismRecall(ds, *p, fold.test, timing_invisible, &by_mechanism);
          if (primary) {
            eval::ScoreOptions step_options;
            step_options.low_prior = false;
            step_scores.push_back(eval::ScoreUnits(
                engine_steps.dataset, eval::CollapsePredictions(engine_steps, *p, fold.test),
                eval::EngineStepsOf(engine_steps, fold.test), step_options));
          }
          if (!write_predictions.empty() && kind == splits.front() && primary) {
            predictions_out += eval::PredictionsToJsonl(ds, *p, fold.test);
          }
          for (eval::View v : {eval::View::kHorizontal, eval::View::kVertical}) {
            sr.fold_rows.push_back(
                {display, eval::SplitName(kind), fold.name, eval::ViewName(v), fold_scores.back()});
          }
        }
        sr.mechanisms.emplace_back(display, std::move(by_mechanism));
        const eval::Scores mean = eval::AverageScores(fold_scores);
        if (primary) {
          const eval::Scores step_mean = eval::AverageScores(step_scores);
          for (eval::View v : {eval::View::kHorizontal, eval::View::kVertical}) {
            sr.step_rows.push_back({display, eval::SplitName(kind),
                                    sr.folds.size() == 1 ? sr.folds[0].name : "mean",
                                    eval::ViewName(v), step_mean});
          }
        }
        for (eval::View v : {eval::View::kHorizontal, eval::View::kVertical}) {
          sr.mean_rows.push_back({display, eval::SplitName(kind),
                                  sr.folds.size() == 1 ? sr.folds[0].name : "mean",
                                  eval::ViewName(v), mean});
        }
        for (eval::View v : {eval::View::kHorizontal, eval::View::kVertical}) {
          auto it = std::find_if(seed_rows.begin(), seed_rows.end(), [&](const eval::SeedRow& r) {
            return r.method == display && r.split == eval::SplitName(kind) &&
                   r.view == eval::ViewName(v);
          });
          if (it == seed_rows.end()) {
            seed_rows.push_back({display, eval::SplitName(kind), eval::ViewName(v), {}});
            it = std::prev(seed_rows.end());
          }
          it->seeds.push_back(mean);
        }
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s: split %s, seed %llu scored (%.1f s)", display.c_str(),
                      eval::SplitName(kind), static_cast<unsigned long long>(run_seed),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - tm).count());
        progress(buf);
        if (json && primary) {
          std::fputs(eval::ScoresJson(mean, eval::SplitName(kind), seed).c_str(), stdout);
        }
      }
      if (primary) results.push_back(std::move(sr));
    }
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
  if (!with_logs) text += "\nWithout logs: the methods read no log line (--without-logs).\n";
  for (const SplitResult& sr : results) {
    size_t test = 0;
    for (const eval::Fold& f : sr.folds) test += f.test.size();
    text += "\nTable 2, split " + std::string(eval::SplitName(sr.kind)) + " (seed " +
            std::to_string(seed) + "; " + std::to_string(test) + " test steps" +
            (sr.folds.size() > 1
                 ? ", mean over " + std::to_string(sr.folds.size()) + " " + FoldsWord(sr.kind)
                 : "") +
            ")\n";
    if (sr.leakage) text += LeakageNote(*sr.leakage, test);
    text += BaseRateNote(ds, sr.folds);
    text += eval::Table2Text(sr.mean_rows);
    if (sr.folds.size() > 1) {
      text += "\nper " + FoldWord(sr.kind) + ":\n";
      std::vector<eval::TableRow> rows = sr.fold_rows;
      for (eval::TableRow& r : rows) r.method += " @ " + r.fold;
      text += eval::Table2Text(rows);
    }
    {
      size_t steps = 0;
      for (const eval::Fold& f : sr.folds)
        steps += eval::EngineStepsOf(engine_steps, f.test).size();
      text += "\nTable 2, split " + std::string(eval::SplitName(sr.kind)) +
              ", engine-step units (" + std::to_string(steps) +
              " test engine steps; a step is abnormal when any of its " + "requests is)\n";
      text += eval::Table2Text(sr.step_rows);
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
  std::string seed_table;
  if (run_seeds.size() > 1) {
    seed_table = eval::SeedTableMarkdown(seed_rows, seeds_text);
    text += "\nTable 2 over seeds (" + std::to_string(run_seeds.size()) + "):\n" + seed_table;
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
    if (!with_logs)
      md +=
          "\nWithout logs (`--without-logs`): teller-numeric without its log evidence, the "
          "baselines without their log features.\n";
    std::vector<eval::TableRow> all_mean, all_folds;
    std::string mechanism_csv;
    std::vector<eval::TableRow> all_steps;
    for (const SplitResult& sr : results) {
      const std::string split = eval::SplitName(sr.kind);
      md += "\n## Table 2, split " + split + "\n\n";
      if (sr.folds.size() > 1)
        md +=
            "Mean over the " + std::to_string(sr.folds.size()) + " " + FoldsWord(sr.kind) + ".\n\n";
      if (sr.leakage) {
        size_t test = 0;
        for (const eval::Fold& f : sr.folds) test += f.test.size();
        md += LeakageNote(*sr.leakage, test) + "\n";
      }
      md += BaseRateNote(ds, sr.folds) + "\n";
      md += eval::Table2Markdown(sr.mean_rows);
      if (sr.folds.size() > 1) {
        md += "\n### Per " + FoldWord(sr.kind) + " (" + split + " split)\n\n";
        std::vector<eval::TableRow> rows = sr.fold_rows;
        for (eval::TableRow& r : rows) r.method += " @ " + r.fold;
        md += eval::Table2Markdown(rows);
      }
      md += "\n### Table 2 on engine-step units (" + split +
            " split)\n\nOne unit per engine step: abnormal when any of its requests is; "
            "predicted abnormal when the method says so for any of them.\n\n" +
            eval::Table2Markdown(sr.step_rows);
      all_steps.insert(all_steps.end(), sr.step_rows.begin(), sr.step_rows.end());
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
    if (!seed_table.empty()) md += "\n## Table 2 over seeds\n\n" + seed_table;
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
             {"mechanism_recall.csv", mechanism_csv},
             {"table2_engine_steps.csv", eval::Table2Csv(all_steps)},
             {"seeds.csv", run_seeds.size() > 1 ? eval::SeedTableCsv(seed_rows) : ""}}) {
      if (body.empty() && file == "seeds.csv") continue;
      if (Status st = WriteText(report + "/" + file, body); !st.ok()) {
        std::fprintf(stderr, "teller eval: %s\n", st.message().c_str());
        return 1;
      }
    }
    progress("wrote " + report +
             "/report.md, table2.csv, table2_engine_steps.csv, per_fold.csv, low_prior.csv, "
             "mechanism_recall.csv");
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "done in %.1f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  progress(buf);
  return 0;
}

}  // namespace teller::cli
