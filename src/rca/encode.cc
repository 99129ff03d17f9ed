// Step records -> TPE tokens with their side channels (src/rca/encode.h).
#include "src/rca/encode.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "teller/tpe/tpe.h"

namespace teller::rca::internal {
namespace {

// The steps of `corpus` whose index is in `keep` (all when `keep` is null) as a TPE corpus:
// symbols as `teller tpe` forms them (symbols.h), depth from the parents, depth-first order
// (dataset records are stored that way; any other order is serialized).
Result<tpe::Corpus> ToTpeCorpus(const Corpus& corpus, const std::vector<uint8_t>* keep) {
  tpe::Corpus out;
  out.settings.resize(corpus.names.size());
  // Symbol text per (setting, name, tag), interned in first-seen order.
  std::map<std::pair<uint32_t, uint64_t>, tpe::TokenId> local;
  std::unordered_map<std::string, tpe::TokenId> by_text;
  for (size_t k = 0; k < corpus.steps.size(); ++k) {
    if (keep != nullptr && !(*keep)[k]) continue;
    const StepRef& ref = corpus.steps[k];
    if (ref.columns == nullptr || ref.setting >= corpus.names.size() ||
        corpus.names[ref.setting] == nullptr) {
      return Status::Error("step " + std::to_string(k) + ": no columns or names");
    }
    const format::DatasetColumns& c = *ref.columns;
    const std::vector<std::string>& names = *corpus.names[ref.setting];
    const size_t n = c.size();
    std::vector<tpe::TokenId> symbol(n);
    std::vector<uint16_t> depth(n, 0);
    std::vector<int64_t> duration(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (c.name[i] >= names.size()) {
        return Status::Error("step " + std::to_string(k) + ": name id " +
                             std::to_string(c.name[i]) + " outside names.json (" +
                             std::to_string(names.size()) + " names)");
      }
      const int32_t p = c.parent[i];
      if (p >= static_cast<int32_t>(i)) {
        return Status::Error("step " + std::to_string(k) + ": node " + std::to_string(i) +
                             " has parent " + std::to_string(p) + " (parents precede children)");
      }
      depth[i] = p < 0 ? 0 : static_cast<uint16_t>(std::min<int>(depth[p] + 1, UINT16_MAX));
      duration[i] = std::max<int64_t>(0, c.dur_ns[i]);
      const auto tag = static_cast<tpe::TypeTag>(std::min<int>(c.type[i], tpe::kNumTypeTags - 1));
      const auto key =
          std::make_pair(ref.setting, (static_cast<uint64_t>(c.name[i]) << 8) | c.type[i]);
      auto it = local.find(key);
      if (it == local.end()) {
        std::string text = tpe::SymbolText(tag, tpe::NormalizeName(tag, names[c.name[i]]));
        auto [t, fresh] = by_text.emplace(text, static_cast<tpe::TokenId>(out.symbol_text.size()));
        if (fresh) {
          out.symbol_text.push_back(std::move(text));
          out.symbol_tag.push_back(tag);
        }
        it = local.emplace(key, t->second).first;
      }
      symbol[i] = it->second;
    }
    tpe::StepInfo info;
    info.setting = ref.setting;
    info.seq = k;
    const std::span<const int32_t> parent(c.parent.data(), n);
    if (tpe::IsDepthFirstOrder(parent)) {
      out.symbol.insert(out.symbol.end(), symbol.begin(), symbol.end());
      out.parent.insert(out.parent.end(), c.parent.begin(), c.parent.end());
      out.duration.insert(out.duration.end(), duration.begin(), duration.end());
      out.depth.insert(out.depth.end(), depth.begin(), depth.end());
      for (uint32_t i = 0; i < n; ++i) out.node.push_back(i);
    } else {
      Result<tpe::Sequence> s = tpe::Serialize(tpe::TreeView{symbol, parent, duration, depth});
      if (!s.ok()) return Status::Error("step " + std::to_string(k) + ": " + s.status().message());
      out.symbol.insert(out.symbol.end(), s->ids.begin(), s->ids.end());
      out.parent.insert(out.parent.end(), s->parent.begin(), s->parent.end());
      out.duration.insert(out.duration.end(), s->duration.begin(), s->duration.end());
      out.depth.insert(out.depth.end(), s->depth.begin(), s->depth.end());
      out.node.insert(out.node.end(), s->node.begin(), s->node.end());
      ++out.reordered_steps;
    }
    out.offsets.push_back(out.symbol.size());
    out.steps.push_back(std::move(info));
  }
  return out;
}

}  // namespace

Result<tpe::Model> TrainVocabulary(const Corpus& corpus, const std::vector<uint32_t>& steps,
                                   uint32_t vocab) {
  std::vector<uint8_t> keep(corpus.steps.size(), 0);
  for (uint32_t s : steps) {
    if (s >= keep.size())
      return Status::Error("training step " + std::to_string(s) + " out of range");
    keep[s] = 1;
  }
  Result<tpe::Corpus> sub = ToTpeCorpus(corpus, &keep);
  if (!sub.ok()) return sub.status();
  if (sub->num_steps() == 0) return Status::Error("no training steps");
  tpe::TrainOptions options;
  options.vocab_size = vocab;
  Result<tpe::Trained> trained = tpe::TrainOnCorpus(*sub, options, "");
  if (!trained.ok()) return trained.status();
  return std::move(trained->model);
}

Result<std::vector<EncodedStep>> EncodeCorpus(const Corpus& corpus, const tpe::Model& model,
                                              const ModelConfig& config,
                                              const std::vector<uint32_t>& wanted) {
  std::set<uint32_t> settings;
  for (uint32_t s : wanted) {
    if (s >= corpus.steps.size())
      return Status::Error("step " + std::to_string(s) + " out of range");
    settings.insert(corpus.steps[s].setting);
  }
  std::vector<uint8_t> keep(corpus.steps.size(), 0);
  for (size_t k = 0; k < corpus.steps.size(); ++k)
    keep[k] = settings.count(corpus.steps[k].setting);
  Result<tpe::Corpus> tc = ToTpeCorpus(corpus, &keep);
  if (!tc.ok()) return tc.status();
  const std::vector<tpe::TokenId> ids = tpe::ModelIds(*tc, model);
  std::vector<EncodedStep> out(corpus.steps.size());
  // Per (setting, token): every log-duration, for the medians.
  std::map<std::pair<uint32_t, int64_t>, std::vector<float>> values;
  for (size_t j = 0; j < tc->num_steps(); ++j) {
    const size_t k = tc->steps[j].seq;  // ToTpeCorpus keeps the step index there
    const tpe::Sequence seq = tpe::EncodeStep(*tc, ids, model, j);
    EncodedStep& e = out[k];
    const size_t n = seq.size();
    e.token.assign(seq.ids.begin(), seq.ids.end());
    e.parent.assign(seq.parent.begin(), seq.parent.end());
    e.span = seq.span;
    e.node = seq.node;
    e.depth.resize(n);
    e.log_duration.resize(n);
    for (size_t i = 0; i < n; ++i) {
      e.depth[i] = std::min<int64_t>(seq.depth[i], config.max_depth - 1);
      e.log_duration[i] = static_cast<float>(std::log1p(
          config.duration_scale * static_cast<double>(std::max<int64_t>(0, seq.duration[i]))));
      values[{corpus.steps[k].setting, e.token[i]}].push_back(e.log_duration[i]);
    }
  }
  std::map<std::pair<uint32_t, int64_t>, float> median;
  for (auto& [key, v] : values) {
    // The lower median: an actual value, the same whatever the platform's sort.
    const size_t mid = (v.size() - 1) / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    median[key] = v[mid];
  }
  for (size_t k = 0; k < out.size(); ++k) {
    EncodedStep& e = out[k];
    e.relative.resize(e.size());
    for (size_t i = 0; i < e.size(); ++i) {
      e.relative[i] = e.log_duration[i] - median[{corpus.steps[k].setting, e.token[i]}];
    }
  }
  return out;
}

}  // namespace teller::rca::internal
