// Methods by name and how each predicts a fold (include/teller/eval/methods.h).
#include "teller/eval/methods.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "src/eval/learned_baselines.h"
#include "src/eval/method_common.h"
#include "teller/core/vocabulary.h"
#include "teller/dataset/log_text.h"
#include "teller/eval/models.h"
#include "teller/eval/numeric.h"
#include "teller/format/ground_truth.h"
#include "teller/rca/rca.h"

namespace teller::eval {
namespace {

struct Known {
  const char* base;
  const char* display;
  MethodKind kind;
  bool supervised;
};
constexpr Known kBaselines[] = {
    {"kmeans", "KMeans", MethodKind::kKMeans, false},
    {"dbscan", "DBSCAN", MethodKind::kDbscan, false},
    {"iforest", "IsolationForest", MethodKind::kIsolationForest, false},
    {"gmm", "GMM", MethodKind::kGmm, false},
    {"svm", "LinearSVM", MethodKind::kLinearSvm, true},
    {"random-forest", "RandomForest", MethodKind::kRandomForest, true},
    {"xgboost", "XGBoost", MethodKind::kXgboost, true},
};
// The learned baselines (rca/baselines.h): what each reads is in its display name.
constexpr Known kLearnedBaselines[] = {
    {"logrobust", "LogRobust (log)", MethodKind::kLogRobust, true},
    {"lanobert", "LAnoBERT (log)", MethodKind::kLanoBert, false},
    {"logs2graphs", "Logs2Graphs (log)", MethodKind::kLogs2Graphs, false},
    {"mad-gan", "MAD-GAN (stat)", MethodKind::kMadGan, false},
    {"step-summary", "Prompt-only (step summary + log)", MethodKind::kStepSummary, true},
};

std::vector<MethodSpec> AllMethods() {
  std::vector<MethodSpec> out;
  out.push_back(
      {"teller-numeric", "Teller (numeric)", MethodKind::kTellerNumeric, FeatureSet::kStat, false});
  out.push_back(
      {"label-copy", "Label copy (nearest)", MethodKind::kLabelCopy, FeatureSet::kStat, true});
  out.push_back(
      {"teller-gcn", "Teller (trace encoder)", MethodKind::kTellerGcn, FeatureSet::kStat, true});
  out.push_back(
      {"teller-mot", "Teller (MoT: trace + log)", MethodKind::kTellerMot, FeatureSet::kStat, true});
  out.push_back({"teller-single", "Teller (single stream: trace + log)", MethodKind::kTellerSingle,
                 FeatureSet::kStat, true});
  for (FeatureSet set : {FeatureSet::kStat, FeatureSet::kStruct}) {
    for (const Known& k : kBaselines) {
      MethodSpec m;
      m.name = std::string(k.base) + "-" + FeatureSetName(set);
      m.display = std::string(k.display) + " (" + FeatureSetName(set) + ")";
      m.kind = k.kind;
      m.features = set;
      m.supervised = k.supervised;
      out.push_back(std::move(m));
    }
  }
  for (const Known& k : kLearnedBaselines)
    out.push_back({k.base, k.display, k.kind, FeatureSet::kStat, k.supervised});
  return out;
}

// The nodes of a learned method's alarm: the numeric candidates (the baselines' rule)
// ordered by the evidence head's probability (a candidate it does not list counts 0; ties
// keep the candidates' order), then the head's own nodes at P >= 0.5 that are no
// candidate; at most as many as the candidates' bound. Without the head: the candidates.
std::vector<uint32_t> CombineEvidence(const std::vector<uint32_t>& candidates,
                                      const std::vector<std::pair<uint32_t, float>>& evidence) {
  constexpr size_t kMaxNodes = 8;  // NodeDeviations::Top's default
  std::map<uint32_t, float> p(evidence.begin(), evidence.end());
  std::vector<uint32_t> out = candidates;
  std::stable_sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    const auto pa = p.find(a), pb = p.find(b);
    return (pa == p.end() ? 0.0f : pa->second) > (pb == p.end() ? 0.0f : pb->second);
  });
  for (const auto& [node, prob] : evidence) {  // highest first
    if (out.size() >= kMaxNodes || prob < 0.5f) break;
    if (std::find(out.begin(), out.end(), node) == out.end()) out.push_back(node);
  }
  return out;
}

// teller-gcn, teller-mot and teller-single on `fold` (docs/rca.md, "In teller eval"): the
// network trained on the fold's training units (its TPE and text vocabularies too), the
// alarm threshold per view the best step F1 on the validation units (0.5 when they hold no
// positive), the fault type the model's among those seen in training, the generated
// explanation (MoT, single stream); evidence nodes by the baselines' rule.
Result<Predictions> PredictTellerLearned(const Dataset& ds, const Fold& fold, uint64_t seed,
                                         int epochs, const MethodSpec& spec,
                                         const NodeDeviations& deviations,
                                         const std::function<void(std::string_view)>& progress) {
  const std::string& name = spec.name;
  if (fold.train.empty())
    return Status::Error(name + ": fold \"" + fold.name + "\" has no training steps");
  const bool summary = spec.kind == MethodKind::kStepSummary || spec.summary;
  const rca::Variant variant = spec.kind == MethodKind::kTellerMot ? rca::Variant::kMot
                               : spec.kind == MethodKind::kTellerSingle || summary
                                   ? rca::Variant::kSingle
                                   : rca::Variant::kGcn;
  const bool reads_text = rca::ReadsText(variant);
  const GcnInput input = MakeGcnInput(ds);
  const rca::Corpus& corpus = input.corpus;
  std::vector<rca::Sample> train = input.Samples(ds, fold.train, reads_text);
  // The prompt-only baseline and ":summary" read the step's summary, then the unit's log
  // lines.
  auto text_of = [&](uint32_t unit) {
    std::vector<std::string> lines = UnitLogLines(ds, unit);
    if (!summary) return lines;
    std::vector<std::string> out = StepSummaryLines(ds, unit);
    out.insert(out.end(), lines.begin(), lines.end());
    return out;
  };
  if (summary) {
    for (size_t j = 0; j < train.size(); ++j) train[j].logs = text_of(fold.train[j]);
  }
  auto step_of = [&](uint32_t unit) { return input.StepOf(ds, unit); };
  rca::TrainOptions options;
  options.seed = seed;
  options.epochs = epochs;
  options.config.variant = variant;
  if (spec.tpe_vocab != 0) options.config.tpe_vocab = spec.tpe_vocab;
  options.config.trace_stream = spec.trace_stream && !summary;
  options.config.log_stream = spec.log_stream;
  if (summary) options.config.max_log_tokens = kStepSummaryLogTokens;
  if (progress) {
    options.progress = [&](std::string_view line) {
      progress(name + ", fold " + fold.name + ": " + std::string(line));
    };
  }
  Result<rca::Model> model = rca::Model::Train(corpus, train, options);
  if (!model.ok()) return Status::Error(name + ": " + model.status().message());
  std::vector<uint32_t> asked;
  asked.insert(asked.end(), fold.validation.begin(), fold.validation.end());
  asked.insert(asked.end(), fold.test.begin(), fold.test.end());
  std::vector<std::vector<std::string>> lines(asked.size());
  std::vector<rca::Query> queries;
  for (size_t j = 0; j < asked.size(); ++j) {
    if (reads_text) lines[j] = text_of(asked[j]);
    queries.push_back({step_of(asked[j]), &lines[j]});
  }
  Result<std::vector<rca::StepOutput>> outputs = model->Predict(corpus, queries);
  if (!outputs.ok()) return Status::Error(name + ": " + outputs.status().message());
  const size_t nv = fold.validation.size();
  Predictions out;
  out.units.resize(ds.units.size());
  for (View v : kViews) {
    const int k = static_cast<int>(v);
    std::vector<double> val_scores;
    std::vector<uint8_t> val_labels;
    for (size_t j = 0; j < nv; ++j) {
      val_scores.push_back((*outputs)[j].abnormal[k]);
      val_labels.push_back(ds.units[fold.validation[j]].view(v).is_anomaly);
    }
    const bool any = std::find(val_labels.begin(), val_labels.end(), 1) != val_labels.end();
    const double threshold = any ? BestThreshold(val_scores, val_labels, {}) : 0.5;
    for (size_t j = 0; j < fold.test.size(); ++j) {
      const uint32_t u = fold.test[j];
      const rca::StepOutput& o = (*outputs)[nv + j];
      Prediction& p = out.at(u, v);
      p.present = true;
      p.score = o.abnormal[k];
      p.abnormal = p.score >= threshold;
      if (!p.abnormal) continue;
      p.fault_type = FaultCategoryName(o.Fault(model->fault_classes()));
      p.explanation = o.explanation;
      p.nodes = CombineEvidence(deviations.Top(ds, u, v), o.evidence[k]);
    }
  }
  return out;
}

}  // namespace

std::vector<uint32_t> DistinctRecords(const Dataset& ds, const std::vector<uint32_t>& units) {
  std::set<std::pair<uint32_t, uint32_t>> seen;
  std::vector<uint32_t> out;
  for (uint32_t i : units) {
    if (seen.emplace(ds.units[i].setting, ds.units[i].record).second) out.push_back(i);
  }
  return out;
}

double BestThreshold(const std::vector<double>& scores, const std::vector<uint8_t>& labels,
                     std::vector<double> fallback) {
  const bool any = std::find(labels.begin(), labels.end(), 1) != labels.end();
  if (!any || scores.empty()) {
    if (fallback.empty()) return 0;
    const size_t at = std::min(fallback.size() - 1,
                               static_cast<size_t>(0.9 * static_cast<double>(fallback.size())));
    std::nth_element(fallback.begin(), fallback.begin() + static_cast<long>(at), fallback.end());
    return fallback[at];
  }
  std::vector<size_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  uint64_t positives = 0;
  for (uint8_t l : labels) positives += l;
  double best_f1 = -1, best = scores[order.front()];
  uint64_t tp = 0, flagged = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) {
      tp += labels[order[j]];
      ++flagged;
      ++j;
    }
    const double p = static_cast<double>(tp) / static_cast<double>(flagged);
    const double r = static_cast<double>(tp) / static_cast<double>(positives);
    const double f1 = p + r > 0 ? 2 * p * r / (p + r) : 0;
    if (f1 > best_f1 + 1e-12) {
      best_f1 = f1;
      best = scores[order[i]];
    }
    i = j;
  }
  return best;
}

int FaultClass(const std::string& name) {
  FaultCategory c;
  return ParseFaultCategory(name, &c) ? static_cast<int>(c) : -1;
}

GcnInput MakeGcnInput(const Dataset& ds) {
  GcnInput in;
  in.first.assign(ds.settings.size(), 0);
  for (size_t s = 0; s < ds.settings.size(); ++s) {
    in.corpus.names.push_back(&ds.settings[s].names);
    in.first[s] = static_cast<uint32_t>(in.corpus.steps.size());
    for (const StepColumns& r : ds.settings[s].records) {
      in.corpus.steps.push_back({static_cast<uint32_t>(s), &r});
    }
  }
  return in;
}

std::vector<rca::Sample> GcnInput::Samples(const Dataset& ds, const std::vector<uint32_t>& units,
                                           bool text) const {
  std::vector<rca::Sample> out;
  for (uint32_t i : units) {
    const Unit& u = ds.units[i];
    rca::Sample s;
    s.step = StepOf(ds, i);
    for (View v : kViews) s.abnormal[static_cast<int>(v)] = u.view(v).is_anomaly;
    s.fault = u.is_anomaly ? FaultClass(u.fault_type) : -1;
    for (View v : kViews) {
      const ViewLabel& l = u.view(v);
      s.nodes[static_cast<int>(v)] = l.has_roots && !l.roots.empty() ? l.roots : l.nodes;
    }
    if (text) {
      s.logs = UnitLogLines(ds, i);
      if (u.is_anomaly) s.explanation = u.explanation;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> UnitLogLines(const Dataset& ds, uint32_t unit) {
  const Unit& u = ds.units[unit];
  const std::vector<std::string>& text = ds.settings[u.setting].template_text;
  std::vector<std::string> out;
  for (const auto& [level, id] : u.logs.sequence)
    out.push_back(dataset::ModelLogLine(level, id < text.size() ? text[id] : std::string_view()));
  return out;
}

Result<Predictions> PredictLabelCopy(const Dataset& ds, const Fold& fold) {
  // Training units of each setting by engine-step start time.
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> by_time(ds.settings.size());
  for (uint32_t i : fold.train) {
    const Unit& u = ds.units[i];
    if (!u.has_incident) {
      return Status::Error(ds.settings[u.setting].name +
                           "/steps.jsonl: the steps carry no engine-step times (a dataset from "
                           "an older `teller dataset build`); rebuild it");
    }
    by_time[u.setting].emplace_back(u.start_ns, i);
  }
  for (auto& v : by_time) std::sort(v.begin(), v.end());
  Predictions out;
  out.units.resize(ds.units.size());
  for (uint32_t i : fold.test) {
    const Unit& u = ds.units[i];
    const auto& v = by_time[u.setting];
    for (View view : kViews) out.at(i, view).present = true;
    if (v.empty()) continue;  // nothing to copy: predicted normal
    // The nearest start; a tie goes to the earlier unit (then the lower index).
    auto it = std::lower_bound(v.begin(), v.end(), std::pair<int64_t, uint32_t>(u.start_ns, 0));
    const std::pair<int64_t, uint32_t>* best = nullptr;
    if (it != v.end()) best = &*it;
    if (it != v.begin()) {
      // The earliest unit at the previous start time.
      auto prev = std::prev(it);
      const int64_t t = prev->first;
      while (prev != v.begin() && std::prev(prev)->first == t) --prev;
      if (best == nullptr || u.start_ns - prev->first <= best->first - u.start_ns) best = &*prev;
    }
    const Unit& src = ds.units[best->second];
    for (View view : kViews) {
      Prediction& p = out.at(i, view);
      p.abnormal = src.view(view).is_anomaly;
      p.score = p.abnormal ? 1.0 : 0.0;
      if (p.abnormal) p.fault_type = src.fault_type;
    }
  }
  return out;
}

std::vector<std::string> MethodNames() {
  std::vector<std::string> out;
  for (const MethodSpec& m : AllMethods()) out.push_back(m.name);
  return out;
}

bool MethodAvailable(MethodKind kind) {
  if (kind == MethodKind::kXgboost) return XgboostModel::Available();
  if (IsLearned(kind) || IsLearnedBaseline(kind)) return rca::Available();
  return true;
}

Result<std::vector<MethodSpec>> ParseMethods(const std::string& text) {
  const std::vector<MethodSpec> all = AllMethods();
  std::vector<MethodSpec> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string name = text.substr(begin, comma - begin);
    begin = comma + 1;
    if (name.empty()) continue;
    if (name == "all") {
      for (const MethodSpec& m : all) {
        if (MethodAvailable(m.kind)) out.push_back(m);
      }
      continue;
    }
    // "teller-gcn@512": a learned method with its TPE vocabulary size; "teller-mot:no-log":
    // the MoT without one of its streams.
    const size_t colon = name.find(':');
    const std::string spec = name.substr(0, colon);
    const std::string stream = colon == std::string::npos ? "" : name.substr(colon + 1);
    const size_t at = spec.find('@');
    const std::string base = spec.substr(0, at);
    const auto it =
        std::find_if(all.begin(), all.end(), [&](const MethodSpec& m) { return m.name == base; });
    if (it == all.end()) {
      std::string names;
      for (const MethodSpec& m : all) names += (names.empty() ? "" : ", ") + m.name;
      return Status::Error("unknown method \"" + name + "\"; known: all, " + names);
    }
    if (!MethodAvailable(it->kind)) {
      return Status::Error("method \"" + name + "\" needs " +
                           (IsLearned(it->kind) || IsLearnedBaseline(it->kind)
                                ? "libtorch, which this build of Teller lacks (apt-get install "
                                  "libtorch-dev libopenblas0-pthread, then re-run cmake)"
                                : "XGBoost, which this build of Teller lacks (apt-get install "
                                  "libxgboost-dev xgboost, then re-run cmake)"));
    }
    MethodSpec m = *it;
    if (at != std::string::npos) {
      if (!IsLearned(m.kind))
        return Status::Error("method \"" + name +
                             "\": only teller-gcn, teller-mot and teller-single take @VOCAB");
      const std::string v = spec.substr(at + 1);
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 64 || n > 65536)
        return Status::Error("method \"" + name +
                             "\": @VOCAB is a TPE vocabulary size from 64 to 65536");
      m.tpe_vocab = static_cast<uint32_t>(n);
      m.name = name;
      m.display.insert(m.display.size() - 1, ", vocab " + v);
    }
    if (colon != std::string::npos) {
      // Suffixes, one or more: the modality ablation (:no-trace or :no-log) and :summary.
      std::vector<std::string> options;
      for (size_t b = 0; b <= stream.size();) {
        const size_t e = std::min(stream.find(':', b), stream.size());
        options.push_back(stream.substr(b, e - b));
        b = e + 1;
      }
      for (const std::string& o : options) {
        if (!IsLearnedWithText(m.kind) || (o != "no-trace" && o != "no-log" && o != "summary"))
          return Status::Error("method \"" + name +
                               "\": teller-mot and teller-single take :no-trace or :no-log (the "
                               "modality ablation) and :summary; no other method or option does");
      }
      m.name = name;
      for (const std::string& o : options) {
        if (o == "summary") continue;
        (o == "no-trace" ? m.trace_stream : m.log_stream) = false;
        const std::string both = "trace + log";
        const size_t at_both = m.display.find(both);
        if (at_both == std::string::npos)
          return Status::Error("method \"" + name + "\": leaves out both streams");
        m.display.replace(at_both, both.size(), o == "no-trace" ? "log only" : "trace only");
      }
      if (std::find(options.begin(), options.end(), "summary") != options.end()) {
        if (!m.log_stream)
          return Status::Error("method \"" + name +
                               "\": the summary is read through the log stream, which :no-log "
                               "leaves out");
        m.summary = true;
        // "Teller (MoT: trace + log + step summary, vocab 512)".
        const size_t end = std::min(m.display.find(','), m.display.size() - 1);
        m.display.insert(end, " + step summary");
      }
    }
    out.push_back(std::move(m));
  }
  if (out.empty()) return Status::Error("no method named");
  return out;
}

MethodRunner::MethodRunner(const Dataset& dataset, uint64_t seed,
                           std::function<void(std::string_view)> progress)
    : dataset_(dataset), seed_(seed), progress_(std::move(progress)) {}
MethodRunner::~MethodRunner() = default;

const Features& MethodRunner::FeaturesFor(FeatureSet set) {
  auto& slot = features_[set];
  if (!slot) slot = std::make_unique<Features>(ComputeFeatures(dataset_, set, with_logs_));
  return *slot;
}

Result<Predictions> MethodRunner::Predict(const MethodSpec& method, const Fold& fold) {
  const Dataset& ds = dataset_;
  if (method.kind == MethodKind::kTellerNumeric) {
    if (!numeric_) {
      NumericOptions o;
      o.progress = progress_;
      o.diagnose.log.enabled = with_logs_;
      NumericStats st;
      auto p = PredictTellerNumeric(ds, o, &st);
      if (!p.ok()) return p.status();
      numeric_ = std::move(p).value();
      // In name order, as reports have always listed them.
      counters_.Add(CounterId::kNumericAbnormalEngineSteps, st.abnormal_steps);
      counters_.Add(CounterId::kNumericEngineSteps, st.engine_steps);
      counters_.Add(CounterId::kNumericEvidence, st.evidence);
      counters_.Add(CounterId::kNumericEvidenceOutsideRecord, st.evidence_outside_record);
      counters_.Add(CounterId::kNumericUnitsWithoutDiagnosis, st.units_without_diagnosis);
      counters_.Add(CounterId::kNumericUnmatchedRequests, st.unmatched_requests);
    }
    // Predictions are the same whatever the fold (no training); only test units count.
    return *numeric_;
  }

  if (method.kind == MethodKind::kLabelCopy) return PredictLabelCopy(ds, fold);

  if (!deviations_) deviations_ = std::make_unique<NodeDeviations>(ds);
  if (method.kind == MethodKind::kTellerGcn) {
    return PredictTellerLearned(ds, fold, seed_, epochs_, method, *deviations_, progress_);
  }
  if (IsLearnedWithText(method.kind)) {
    if (!with_logs_)
      return Status::Error(method.name +
                           ": reads the logs by design; --without-logs applies to "
                           "teller-numeric and the feature baselines");
    return PredictTellerLearned(ds, fold, seed_, epochs_, method, *deviations_, progress_);
  }
  if (method.kind == MethodKind::kStepSummary) {
    if (!with_logs_)
      return Status::Error(method.name +
                           ": reads the logs by design; --without-logs applies to "
                           "teller-numeric and the feature baselines");
    return PredictTellerLearned(ds, fold, seed_, epochs_, method, *deviations_, progress_);
  }
  if (IsLearnedBaseline(method.kind)) {
    if (!with_logs_ && rca::BaselineReadsLogs(BaselineOf(method.kind)))
      return Status::Error(method.name +
                           ": reads the logs by design; --without-logs applies to "
                           "teller-numeric and the feature baselines");
    return PredictLearnedBaseline(ds, fold, method, seed_, epochs_, FeaturesFor(FeatureSet::kStat),
                                  *deviations_, progress_);
  }
  // Template rarity (a log feature) is counted on the fold's training units only.
  const Features f = FeaturesFor(method.features).ForTraining(ds, fold.train);
  if (fold.train.empty())
    return Status::Error(method.name + ": fold \"" + fold.name + "\" has no training steps");
  const Matrix x_test = f.Rows(ds, fold.test);
  Predictions out;
  out.units.resize(ds.units.size());
  // Scores per view of the test units; a model per view for supervised methods (their
  // labels differ), one detector for both views otherwise.
  std::vector<double> test_scores[2];
  std::vector<uint8_t> test_flags[2];

  if (!method.supervised) {
    const std::vector<uint32_t> fit_units = DistinctRecords(ds, fold.train);
    const Matrix x_fit = f.Rows(ds, fit_units);
    const Matrix x_val = f.Rows(ds, fold.validation);
    std::vector<double> fit_scores, val_scores, scores;
    auto run = [&](auto& model) {
      fit_scores = model.Score(x_fit);
      val_scores = model.Score(x_val);
      scores = model.Score(x_test);
    };
    switch (method.kind) {
      case MethodKind::kKMeans: {
        KMeansDetector m;
        TELLER_RETURN_IF_ERROR(m.Fit(x_fit, 8));
        run(m);
        break;
      }
      case MethodKind::kGmm: {
        GmmDetector m;
        TELLER_RETURN_IF_ERROR(m.Fit(x_fit, 4));
        run(m);
        break;
      }
      case MethodKind::kDbscan: {
        Dbscan m;
        TELLER_RETURN_IF_ERROR(m.Fit(x_fit, 0, 10));
        run(m);
        break;
      }
      case MethodKind::kIsolationForest: {
        IsolationForest m;
        TELLER_RETURN_IF_ERROR(m.Fit(x_fit, 100, 256, seed_));
        run(m);
        break;
      }
      default:
        return Status::Error(method.name + ": not an unsupervised method");
    }
    // No labels in fitting; the alarm threshold is the one place labels enter: the best
    // step F1 on the validation steps, per view.
    for (View v : kViews) {
      std::vector<uint8_t> val_labels;
      for (uint32_t i : fold.validation) val_labels.push_back(ds.units[i].view(v).is_anomaly);
      const double threshold = BestThreshold(val_scores, val_labels, fit_scores);
      const int k = static_cast<int>(v);
      test_scores[k] = scores;
      for (double s : scores) test_flags[k].push_back(s >= threshold);
    }
  } else {
    const Matrix x_train = f.Rows(ds, fold.train);
    auto fit_predict = [&](const std::vector<int>& y, int classes,
                           uint64_t seed) -> Result<Matrix> {
      switch (method.kind) {
        case MethodKind::kLinearSvm: {
          LinearSvm m;
          TELLER_RETURN_IF_ERROR(m.Fit(x_train, y, classes, 1.0, 50, seed));
          return m.Decision(x_test);
        }
        case MethodKind::kRandomForest: {
          RandomForest m;
          TELLER_RETURN_IF_ERROR(m.Fit(x_train, y, classes, 100, seed));
          return m.Proba(x_test);
        }
        case MethodKind::kXgboost: {
          XgboostModel m;
          TELLER_RETURN_IF_ERROR(m.Fit(x_train, y, classes, 100, seed));
          return m.Proba(x_test);
        }
        default:
          return Status::Error(method.name + ": not a supervised method");
      }
    };
    for (View v : kViews) {
      const int k = static_cast<int>(v);
      std::vector<int> y;
      for (uint32_t i : fold.train) y.push_back(ds.units[i].view(v).is_anomaly ? 1 : 0);
      const bool both =
          std::count(y.begin(), y.end(), 1) > 0 && std::count(y.begin(), y.end(), 0) > 0;
      if (!both) {
        // One class in training: the only sensible prediction is that class.
        const bool abnormal = !y.empty() && y.front() == 1;
        test_scores[k].assign(fold.test.size(), abnormal ? 1.0 : 0.0);
        test_flags[k].assign(fold.test.size(), abnormal);
        continue;
      }
      auto m = fit_predict(y, 2, seed_ + static_cast<uint64_t>(k));
      if (!m.ok()) return m.status();
      const bool margin = method.kind == MethodKind::kLinearSvm;
      for (size_t i = 0; i < fold.test.size(); ++i) {
        const double s = margin ? m->at(i, 0) : m->at(i, 1);
        test_scores[k].push_back(s);
        test_flags[k].push_back(margin ? s > 0 : s > 0.5);
      }
    }
    // Fault type: one multi-class model over the training steps labelled abnormal.
    std::vector<uint32_t> faulty;
    std::vector<int> y;
    std::set<int> seen;
    for (uint32_t i : fold.train) {
      const int c = FaultClass(ds.units[i].fault_type);
      if (!ds.units[i].is_anomaly || c < 0) continue;
      faulty.push_back(i);
      y.push_back(c);
      seen.insert(c);
    }
    std::vector<std::string> fault(fold.test.size());
    if (seen.size() == 1) {
      std::fill(fault.begin(), fault.end(),
                std::string(FaultCategoryName(static_cast<FaultCategory>(*seen.begin()))));
    } else if (seen.size() > 1) {
      const Matrix x_faulty = f.Rows(ds, faulty);
      Result<Matrix> scores = Status::Error("unset");
      switch (method.kind) {
        case MethodKind::kLinearSvm: {
          LinearSvm m;
          TELLER_RETURN_IF_ERROR(m.Fit(x_faulty, y, 5, 1.0, 50, seed_ + 2));
          scores = m.Decision(x_test);
          break;
        }
        case MethodKind::kRandomForest: {
          RandomForest m;
          TELLER_RETURN_IF_ERROR(m.Fit(x_faulty, y, 5, 100, seed_ + 2));
          scores = m.Proba(x_test);
          break;
        }
        default: {
          XgboostModel m;
          TELLER_RETURN_IF_ERROR(m.Fit(x_faulty, y, 5, 100, seed_ + 2));
          scores = m.Proba(x_test);
          break;
        }
      }
      if (!scores.ok()) return scores.status();
      for (size_t i = 0; i < fold.test.size(); ++i) {
        int best = -1;
        for (int c : seen) {  // classes never seen in training cannot be predicted
          if (best < 0 ||
              scores->at(i, static_cast<size_t>(c)) > scores->at(i, static_cast<size_t>(best)))
            best = c;
        }
        fault[i] = FaultCategoryName(static_cast<FaultCategory>(best));
      }
    }
    for (size_t i = 0; i < fold.test.size(); ++i) {
      for (View v : kViews) out.at(fold.test[i], v).fault_type = fault[i];
    }
  }

  for (size_t i = 0; i < fold.test.size(); ++i) {
    const uint32_t u = fold.test[i];
    for (View v : kViews) {
      const int k = static_cast<int>(v);
      Prediction& p = out.at(u, v);
      p.present = true;
      p.score = test_scores[k][i];
      p.abnormal = test_flags[k][i] != 0;
      if (!p.abnormal) {
        p.fault_type.clear();
        continue;
      }
      p.nodes = deviations_->Top(ds, u, v);
    }
  }
  return out;
}

}  // namespace teller::eval
