// The learned baselines (include/teller/rca/baselines.h): what is torch-free about them, the
// word vocabulary, the events seen in training and their TF-IDF weights, turned into the
// tables the networks read (baseline_network.h; the networks are in baselines_torch.cc).
#include "teller/rca/baselines.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>

#include "src/rca/baseline_network.h"
#include "src/rca/text.h"

namespace teller::rca {
namespace {

// The words of the event vocabulary: enough for template text, whose numbers and ids are
// already wildcards.
constexpr uint32_t kWordVocabulary = 1024;
// What a unit without log lines reads as: one event of its own, so that every unit has a
// sequence and "no log line" is something the models can learn as normal.
constexpr std::string_view kNoLogLine = "<no log line>";

std::vector<std::string_view> LinesOf(const BaselineUnit& u) {
  std::vector<std::string_view> out;
  if (u.logs != nullptr) out.assign(u.logs->begin(), u.logs->end());
  if (out.empty()) out.push_back(kNoLogLine);
  return out;
}

}  // namespace

const char* BaselineKindName(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kLogRobust:
      return "LogRobust";
    case BaselineKind::kLanoBert:
      return "LAnoBERT";
    case BaselineKind::kLogs2Graphs:
      return "Logs2Graphs";
    case BaselineKind::kMadGan:
      return "MAD-GAN";
  }
  return "?";
}

struct LearnedBaseline::Impl {
  BaselineKind kind = BaselineKind::kLogRobust;
  internal::TextVocabulary vocab;
  std::unordered_map<std::string, int64_t> known;  // training event line -> id from 1
  std::vector<double> idf;                         // per word id
  double unseen_idf = 0;                           // a word no training event holds
  int window_rows = 0, window_cols = 0;
  std::unique_ptr<internal::BaselineNetwork> network;
  std::vector<double> epoch_loss;
  uint64_t parameters = 0;

  // The events of `units` as one table, and each unit's sequence in it.
  void Read(const std::vector<const BaselineUnit*>& units, internal::EventTable* table,
            std::vector<internal::BaselineExample>* x) const {
    std::unordered_map<std::string_view, int64_t> index;
    for (const BaselineUnit* u : units) {
      internal::BaselineExample e;
      e.window = u->window;
      if (BaselineReadsLogs(kind)) {
        for (std::string_view line : LinesOf(*u)) {
          auto [it, fresh] = index.emplace(line, static_cast<int64_t>(table->size()));
          if (fresh) AddEvent(line, table);
          e.events.push_back(it->second);
        }
      }
      x->push_back(std::move(e));
    }
  }

  void AddEvent(std::string_view line, internal::EventTable* table) const {
    // TF-IDF over the event's words: a word's count in the line times its rarity among the
    // training events, normalized to sum to 1 (an event is the weighted mean of its words).
    std::map<int64_t, double> tf;
    for (int64_t w : vocab.Words(line)) tf[w] += 1;
    std::vector<int64_t> words;
    std::vector<float> weights;
    double total = 0;
    for (const auto& [w, n] : tf) {
      const double v = n * (static_cast<size_t>(w) < idf.size() && idf[static_cast<size_t>(w)] > 0
                                ? idf[static_cast<size_t>(w)]
                                : unseen_idf);
      words.push_back(w);
      weights.push_back(static_cast<float>(v));
      total += v;
    }
    if (words.empty()) {  // a blank line: the unknown word alone
      words.push_back(internal::TextVocabulary::kUnk);
      weights.push_back(1);
      total = 1;
    }
    for (float& w : weights) w = static_cast<float>(w / total);
    const auto it = known.find(std::string(line));
    table->words.push_back(std::move(words));
    table->weights.push_back(std::move(weights));
    table->known.push_back(it == known.end() ? 0 : it->second);
  }
};

LearnedBaseline::LearnedBaseline() = default;
LearnedBaseline::~LearnedBaseline() = default;
LearnedBaseline::LearnedBaseline(LearnedBaseline&&) noexcept = default;
LearnedBaseline& LearnedBaseline::operator=(LearnedBaseline&&) noexcept = default;

Result<LearnedBaseline> LearnedBaseline::Train(BaselineKind kind,
                                               const std::vector<BaselineUnit>& train,
                                               const TrainOptions& options) {
  const std::string name = BaselineKindName(kind);
  std::vector<const BaselineUnit*> units;
  for (const BaselineUnit& u : train) {
    const bool normal =
        std::none_of(u.abnormal.begin(), u.abnormal.end(), [](bool b) { return b; });
    if (BaselineSupervised(kind) || normal) units.push_back(&u);
  }
  if (units.empty()) {
    return Status::Error(name + ": no " + (BaselineSupervised(kind) ? "" : "normal ") +
                         "training unit to learn from");
  }
  auto impl = std::make_unique<Impl>();
  impl->kind = kind;
  internal::BaselineShape shape;
  if (kind == BaselineKind::kMadGan) {
    for (const BaselineUnit* u : units) {
      const FeatureWindow* w = u->window;
      if (w == nullptr || w->rows <= 0 || w->cols <= 0 ||
          w->values.size() != static_cast<size_t>(w->rows) * static_cast<size_t>(w->cols))
        return Status::Error(name + ": a training unit has no feature window");
      if (impl->window_rows == 0) {
        impl->window_rows = w->rows;
        impl->window_cols = w->cols;
      } else if (w->rows != impl->window_rows || w->cols != impl->window_cols) {
        return Status::Error(name + ": feature windows of different shapes");
      }
    }
    shape.window_rows = impl->window_rows;
    shape.window_cols = impl->window_cols;
  } else {
    // Words from every training line (repeats count: a word must occur twice to enter);
    // events: the distinct training lines, in order of first appearance.
    std::vector<std::string_view> texts;
    for (const BaselineUnit* u : units) {
      for (std::string_view line : LinesOf(*u)) {
        texts.push_back(line);
        impl->known.emplace(std::string(line), static_cast<int64_t>(impl->known.size()) + 1);
      }
    }
    impl->vocab = internal::TextVocabulary::Train(texts, kWordVocabulary);
    std::vector<double> df(impl->vocab.size(), 0);
    for (const auto& [line, id] : impl->known) {
      std::vector<int64_t> words = impl->vocab.Words(line);
      std::sort(words.begin(), words.end());
      words.erase(std::unique(words.begin(), words.end()), words.end());
      for (int64_t w : words) df[static_cast<size_t>(w)] += 1;
    }
    const double n = static_cast<double>(impl->known.size());
    impl->idf.resize(df.size());
    for (size_t w = 0; w < df.size(); ++w) impl->idf[w] = df[w] > 0 ? std::log(1 + n / df[w]) : 0;
    impl->unseen_idf = std::log(1 + n);
    shape.words = static_cast<int64_t>(impl->vocab.size());
    shape.known_events = static_cast<int64_t>(impl->known.size());
  }
  Result<std::unique_ptr<internal::BaselineNetwork>> net =
      internal::MakeBaselineNetwork(kind, shape, options.seed);
  if (!net.ok()) return Status::Error(name + ": " + net.status().message());
  impl->network = std::move(net).value();

  internal::EventTable table;
  std::vector<internal::BaselineExample> x;
  impl->Read(units, &table, &x);
  std::vector<internal::Target> y;
  for (const BaselineUnit* u : units) {
    internal::Target t;
    for (int v = 0; v < kViewsCount; ++v) t.abnormal[v] = u->abnormal[v] ? 1.0f : 0.0f;
    t.fault = u->fault;
    y.push_back(std::move(t));
  }
  Result<std::vector<double>> losses = impl->network->Train(table, x, y, options);
  if (!losses.ok()) return Status::Error(name + ": " + losses.status().message());
  impl->epoch_loss = std::move(losses).value();
  impl->parameters = impl->network->Parameters();
  LearnedBaseline out;
  out.impl_ = std::move(impl);
  return out;
}

Result<std::vector<BaselineScore>> LearnedBaseline::Score(
    const std::vector<BaselineUnit>& units) const {
  if (!impl_) return Status::Error("a learned baseline that was never trained");
  std::vector<const BaselineUnit*> ptrs;
  for (const BaselineUnit& u : units) {
    if (impl_->kind == BaselineKind::kMadGan &&
        (u.window == nullptr || u.window->rows != impl_->window_rows ||
         u.window->cols != impl_->window_cols ||
         u.window->values.size() !=
             static_cast<size_t>(u.window->rows) * static_cast<size_t>(u.window->cols)))
      return Status::Error(std::string(BaselineKindName(impl_->kind)) +
                           ": a unit's feature window is missing or not of the trained shape");
    ptrs.push_back(&u);
  }
  internal::EventTable table;
  std::vector<internal::BaselineExample> x;
  impl_->Read(ptrs, &table, &x);
  Result<std::vector<BaselineScore>> out = impl_->network->Score(table, x);
  if (!out.ok())
    return Status::Error(std::string(BaselineKindName(impl_->kind)) + ": " +
                         out.status().message());
  return out;
}

BaselineKind LearnedBaseline::kind() const { return impl_->kind; }
const std::vector<double>& LearnedBaseline::epoch_loss() const { return impl_->epoch_loss; }
uint64_t LearnedBaseline::parameters() const { return impl_->parameters; }

}  // namespace teller::rca
