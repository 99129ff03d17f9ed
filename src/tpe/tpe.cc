#include "teller/tpe/tpe.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_map>

#include "teller/core/json_writer.h"

namespace teller::tpe {

std::vector<TokenId> ModelIds(const Corpus& corpus, const Model& model) {
  std::vector<TokenId> local_to_model(corpus.symbol_text.size());
  for (size_t s = 0; s < local_to_model.size(); ++s) {
    local_to_model[s] = model.SymbolId(corpus.symbol_text[s], corpus.symbol_tag[s]);
  }
  std::vector<TokenId> ids(corpus.symbol.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = local_to_model[corpus.symbol[i]];
  return ids;
}

Result<Trained> TrainOnCorpus(const Corpus& corpus, const TrainOptions& options,
                              const std::string& data) {
  const auto t0 = std::chrono::steady_clock::now();
  Model alphabet(Model::BaseAlphabet(corpus.symbol_text), {});
  const std::vector<TokenId> ids = ModelIds(corpus, alphabet);
  Result<TrainResult> result =
      TrainMerges(SymbolCorpusView{ids, corpus.offsets}, alphabet.base_size(), options);
  if (!result.ok()) {
    if (options.vocab_size < alphabet.base_size()) {
      return Status::Error(
          "--vocab " + std::to_string(options.vocab_size) + " is smaller than the base alphabet: " +
          std::to_string(alphabet.base_size()) + " symbols (" + std::to_string(kNumSpecialTokens) +
          " special tokens and " + std::to_string(alphabet.base_size() - kNumSpecialTokens) +
          " distinct node symbols in the data); use at least " +
          std::to_string(alphabet.base_size()));
    }
    return result.status();
  }
  Trained out{Model(alphabet.base_symbols(), result->merges), std::move(result).value(), {}};
  ModelMetadata& m = out.metadata;
  m.requested_vocab_size = options.vocab_size;
  m.min_frequency = options.min_frequency;
  m.data = data;
  m.settings = corpus.settings;
  m.steps = corpus.num_steps();
  m.distinct_steps = out.result.distinct_sequences;
  m.symbols = corpus.num_nodes();
  m.tokens = out.result.tokens_after.back();
  m.stop_reason = out.result.stop_reason;
  m.token_count.assign(out.model.size(), 0);
  for (TokenId id : ids) ++m.token_count[id];
  for (size_t r = 0; r < out.result.merge_count.size(); ++r) {
    m.token_count[out.model.base_size() + r] = out.result.merge_count[r];
  }
  m.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

Sequence EncodeStep(const Corpus& corpus, const std::vector<TokenId>& ids, const Model& model,
                    size_t k) {
  // Corpus steps are stored serialized already: the base sequence is the step's columns.
  const TreeView tree = corpus.Step(k, &ids);
  Sequence base;
  const size_t n = tree.symbol.size();
  base.ids.assign(tree.symbol.begin(), tree.symbol.end());
  base.parent.assign(tree.parent.begin(), tree.parent.end());
  base.duration.assign(tree.duration.begin(), tree.duration.end());
  base.depth.assign(tree.depth.begin(), tree.depth.end());
  base.span.resize(n);
  for (uint32_t i = 0; i < n; ++i) base.span[i] = {i, i};
  base.node.assign(corpus.node.begin() + static_cast<std::ptrdiff_t>(corpus.offsets[k]),
                   corpus.node.begin() + static_cast<std::ptrdiff_t>(corpus.offsets[k + 1]));
  return model.Encode(base);
}

void AppendEncodedStepJson(std::string& out, const Corpus& corpus, size_t k, const Sequence& seq) {
  const StepInfo& info = corpus.steps[k];
  JsonObjectWriter step(out);
  step.Field("setting", corpus.settings[info.setting])
      .Field("request", info.request)
      .Field("step", static_cast<uint64_t>(info.step))
      .Field("seq", static_cast<uint64_t>(info.seq))
      .FieldBool("is_anomaly", info.is_anomaly)
      .Field("nodes", static_cast<uint64_t>(corpus.offsets[k + 1] - corpus.offsets[k]));
  auto array = [&](const char* key, const auto& values) {
    step.Key(key);
    JsonArrayWriter(out).Integers(values).Close();
  };
  array("input_ids", seq.ids);
  array("parent_idx", seq.parent);
  array("duration", seq.duration);
  array("depth", seq.depth);
  step.Key("spans");
  JsonArrayWriter spans(out);
  for (const auto& [first, last] : seq.span) {
    spans.Next();
    JsonArrayWriter(out)
        .Element(static_cast<uint64_t>(first))
        .Element(static_cast<uint64_t>(last))
        .Close();
  }
  spans.Close();
  if (!corpus.StepNodesAreIdentity(k)) array("node_ids", seq.node);
  step.Close();
  out += '\n';
}

Result<std::vector<StatsRow>> CompressionStats(const Corpus& corpus,
                                               const std::vector<uint32_t>& vocab_sizes,
                                               const TrainOptions& options) {
  if (vocab_sizes.empty()) return Status::Error("no vocabulary sizes given");
  TrainOptions o = options;
  o.vocab_size = *std::max_element(vocab_sizes.begin(), vocab_sizes.end());
  const uint32_t smallest = *std::min_element(vocab_sizes.begin(), vocab_sizes.end());
  if (smallest < Model(Model::BaseAlphabet(corpus.symbol_text), {}).base_size()) {
    // Let the trainer's check phrase the error (it names the base alphabet's size).
    o.vocab_size = smallest;
    return TrainOnCorpus(corpus, o, "").status();
  }
  Result<Trained> trained = TrainOnCorpus(corpus, o, "");
  if (!trained.ok()) return trained.status();
  const TrainResult& r = trained->result;
  const double steps = static_cast<double>(corpus.num_steps());
  const double before = static_cast<double>(corpus.num_nodes()) / steps;
  std::vector<StatsRow> rows;
  for (uint32_t v : vocab_sizes) {
    const size_t k = std::min<size_t>(v - r.base_size, r.merges.size());
    StatsRow row;
    row.vocab = v;
    row.vocab_reached = r.base_size + static_cast<uint32_t>(k);
    row.events_before = before;
    row.events_after = static_cast<double>(r.tokens_after[k]) / steps;
    row.compression = row.events_before / row.events_after;
    row.reduction = 1.0 - row.events_after / row.events_before;
    rows.push_back(row);
  }
  return rows;
}

std::string StatsJson(const std::vector<StatsRow>& rows) {
  std::string out;
  JsonObjectWriter doc(out, JsonDoubles::kShortest);
  doc.Key("rows");
  JsonArrayWriter list(out);
  for (const StatsRow& row : rows) {
    list.Next();
    JsonObjectWriter(out, JsonDoubles::kShortest)
        .Field("vocab", static_cast<uint64_t>(row.vocab))
        .Field("events_before", row.events_before)
        .Field("events_after", row.events_after)
        .Field("compression", row.compression)
        .Field("reduction", row.reduction)
        .Close();
  }
  list.Close();
  doc.Close();
  out += '\n';
  return out;
}

std::string StatsTable(const std::vector<StatsRow>& rows) {
  std::string out = "vocab  events/step before  events/step after  compression  reduction\n";
  char line[160];
  for (const StatsRow& r : rows) {
    std::snprintf(line, sizeof(line), "%5u  %18.2f  %17.2f  %10.2fx  %8.2f%%\n", r.vocab,
                  r.events_before, r.events_after, r.compression, 100.0 * r.reduction);
    out += line;
    if (r.vocab_reached < r.vocab) {
      std::snprintf(line, sizeof(line),
                    "       (training stopped at vocabulary %u: no pair occurs often enough)\n",
                    r.vocab_reached);
      out += line;
    }
  }
  return out;
}

}  // namespace teller::tpe
