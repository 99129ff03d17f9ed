// The TPE vocabulary, its files, and the encoder (include/teller/tpe/model.h).
#include "teller/tpe/model.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <queue>
#include <set>

#include "simdjson.h"
#include "teller/core/file_util.h"
#include "teller/core/json_reader.h"
#include "teller/core/json_writer.h"

namespace teller::tpe {
namespace {

constexpr uint32_t kNil = UINT32_MAX;
constexpr TokenId kDead = UINT32_MAX;

Status WriteText(const std::string& path, const std::string& text) {
  return WriteFileAtomic(path, text);
}

std::string_view kSpecial[] = {"[PAD]", "[UNK]"};

namespace od = simdjson::ondemand;

// Reads every value below `v`. On Demand checks only what is read; this makes Load
// refuse a damaged model file even where the damage lies in a field it does not use.
simdjson::error_code VisitAll(od::value v) {
  od::json_type type;
  if (const simdjson::error_code e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::object: {
      od::object object;
      if (const simdjson::error_code e = v.get_object().get(object)) return e;
      for (auto result : object) {
        od::field field;
        std::string_view key;
        if (const simdjson::error_code e = std::move(result).get(field)) return e;
        if (const simdjson::error_code e = field.unescaped_key().get(key)) return e;
        if (const simdjson::error_code e = VisitAll(field.value())) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array array;
      if (const simdjson::error_code e = v.get_array().get(array)) return e;
      for (auto result : array) {
        od::value element;
        if (const simdjson::error_code e = result.get(element)) return e;
        if (const simdjson::error_code e = VisitAll(element)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::number: {
      double x = 0;
      return v.get_double().get(x);
    }
    case od::json_type::string: {
      std::string_view s;
      return v.get_string().get(s);
    }
    case od::json_type::boolean: {
      bool b = false;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      if (const simdjson::error_code e = v.is_null().get(is_null)) return e;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

// The whole document is well-formed JSON with nothing after it; `doc` is rewound for
// the reads that follow.
Status CheckWholeDocument(const JsonContext& ctx, od::document& doc) {
  od::value root;
  simdjson::error_code e = doc.get_value().get(root);
  if (!e) e = VisitAll(root);
  const char* rest = nullptr;
  if (!e && doc.current_location().get(rest) == simdjson::SUCCESS) e = simdjson::TRAILING_CONTENT;
  if (e) return ctx.Error(e, "invalid JSON");
  doc.rewind();
  return Status::Ok();
}

// The unsigned integers of a merge's array, in order (the caller checks there are two).
Status ReadPair(const JsonContext& ctx, od::array& array, const std::string& label,
                std::vector<uint64_t>* out) {
  out->clear();
  for (auto element : array) {
    const std::string what = label + "[" + std::to_string(out->size()) + "]";
    od::value item;
    if (const simdjson::error_code e = element.get(item)) return ctx.Error(e, what);
    uint64_t x = 0;
    TELLER_RETURN_IF_ERROR(ctx.Get(item, what, &x));
    out->push_back(x);
  }
  return Status::Ok();
}

}  // namespace

std::string_view Model::SpecialText(TokenId id) {
  if (id < 2) return kSpecial[id];
  return TypeTagText(static_cast<TypeTag>(id - kFirstTagToken));
}

std::vector<std::string> Model::BaseAlphabet(const std::vector<std::string>& observed) {
  std::vector<std::string> base;
  std::set<std::string_view> special;
  for (TokenId id = 0; id < kNumSpecialTokens; ++id) {
    base.emplace_back(SpecialText(id));
    special.insert(SpecialText(id));
  }
  std::vector<std::string> rest;
  for (const std::string& s : observed) {
    if (!special.count(s)) rest.push_back(s);
  }
  std::sort(rest.begin(), rest.end());
  rest.erase(std::unique(rest.begin(), rest.end()), rest.end());
  for (std::string& s : rest) base.push_back(std::move(s));
  return base;
}

Model::Model(std::vector<std::string> base, std::vector<std::pair<TokenId, TokenId>> merges)
    : base_(std::move(base)), merges_(std::move(merges)) {
  Index();
}

void Model::Index() {
  nodes_.assign(base_.size(), 1);
  rank_.clear();
  rank_.reserve(merges_.size() * 2);
  for (uint32_t r = 0; r < merges_.size(); ++r) {
    const auto [a, b] = merges_[r];
    nodes_.push_back(nodes_[a] + nodes_[b]);
    rank_.emplace(Key(a, b), r);
  }
  symbol_id_.clear();
  for (TokenId id = 0; id < base_.size(); ++id) symbol_id_.emplace(base_[id], id);
}

std::vector<TokenId> Model::Expand(TokenId id) const {
  std::vector<TokenId> out, todo{id};
  while (!todo.empty()) {
    const TokenId t = todo.back();
    todo.pop_back();
    if (t < base_.size()) {
      out.push_back(t);
    } else {
      todo.push_back(merges_[t - base_.size()].second);
      todo.push_back(merges_[t - base_.size()].first);
    }
  }
  return out;
}

TokenId Model::SymbolId(std::string_view text, TypeTag tag) const {
  const auto it = symbol_id_.find(std::string(text));
  if (it != symbol_id_.end()) return it->second;
  const auto t = static_cast<uint32_t>(tag);
  return t < static_cast<uint32_t>(kNumTypeTags) ? kFirstTagToken + t : kUnkToken;
}

Sequence Model::Encode(const Sequence& base) const {
  const size_t n = base.ids.size();
  std::vector<TokenId> sym(base.ids);
  std::vector<uint32_t> next(n), prev(n);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? static_cast<uint32_t>(i + 1) : kNil;
    prev[i] = i > 0 ? static_cast<uint32_t>(i - 1) : kNil;
  }
  // Min-heap of (rank << 32 | position). Popping in this order applies merge r at every
  // position, left to right, before any merge r' > r: every pair a merge creates contains
  // the new symbol and so has a larger rank than the merge that created it.
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> heap;
  auto consider = [&](uint32_t i) {
    if (i == kNil || next[i] == kNil) return;
    const auto it = rank_.find(Key(sym[i], sym[next[i]]));
    if (it != rank_.end()) heap.push((static_cast<uint64_t>(it->second) << 32) | i);
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<uint32_t>(i));
  while (!heap.empty()) {
    const uint64_t top = heap.top();
    heap.pop();
    const auto r = static_cast<uint32_t>(top >> 32);
    const auto i = static_cast<uint32_t>(top);
    const uint32_t j = next[i];
    // Stale: i was merged away or one side changed since the entry was pushed (symbols
    // only ever change into newer ones, so a pair never comes back).
    if (sym[i] == kDead || j == kNil || sym[i] != merges_[r].first || sym[j] != merges_[r].second) {
      continue;
    }
    sym[i] = base_size() + r;
    sym[j] = kDead;
    next[i] = next[j];
    if (next[j] != kNil) prev[next[j]] = i;
    consider(prev[i]);
    consider(i);
  }

  // Tokens are the live positions; token t covers base positions [start, next start).
  Sequence out;
  std::vector<uint32_t> token_of(n);
  for (uint32_t i = 0; i < n; i = next[i]) {
    const uint32_t last = next[i] == kNil ? static_cast<uint32_t>(n - 1) : next[i] - 1;
    const auto t = static_cast<uint32_t>(out.ids.size());
    int64_t duration = 0;
    for (uint32_t k = i; k <= last; ++k) {
      token_of[k] = t;
      duration += base.duration[k];
    }
    out.ids.push_back(sym[i]);
    out.duration.push_back(duration);
    out.depth.push_back(base.depth[i]);
    out.span.emplace_back(i, last);
    if (next[i] == kNil) break;
  }
  // The merge rule keeps P of a token's first position and redirects pointers into
  // merged positions, so a token's parent is the token holding its first node's parent.
  out.parent.reserve(out.ids.size());
  for (const auto& [first, last] : out.span) {
    const int32_t p = base.parent[first];
    out.parent.push_back(p < 0 ? p : static_cast<int32_t>(token_of[p]));
  }
  out.node = base.node;
  return out;
}

Status Model::Save(const std::string& dir, const ModelMetadata& m) const {
  TELLER_RETURN_IF_ERROR(MakeDirs(dir));
  const bool counts = m.token_count.size() == size();

  std::string vocab;
  JsonObjectWriter v(vocab);
  v.Field("format", "teller-tpe-vocab")
      .Field("version", 1)
      .Field("size", static_cast<uint64_t>(size()));
  v.Field("base_size", static_cast<uint64_t>(base_size()))
      .Field("special", static_cast<uint64_t>(kNumSpecialTokens));
  v.Key("tokens");
  JsonArrayWriter tokens(vocab);
  for (TokenId id = 0; id < size(); ++id) {
    tokens.NewLine().Next();
    JsonObjectWriter t(vocab);
    t.Field("id", static_cast<uint64_t>(id));
    if (id < base_size()) {
      t.Field("symbol", base_[id]);
    } else {
      t.Key("merge");
      JsonArrayWriter(vocab)
          .Element(static_cast<uint64_t>(merges_[id - base_size()].first))
          .Element(static_cast<uint64_t>(merges_[id - base_size()].second))
          .Close();
      t.Field("nodes", static_cast<uint64_t>(nodes_[id]));
    }
    if (counts) t.Field("count", static_cast<uint64_t>(m.token_count[id]));
    t.Close();
  }
  tokens.Close();
  v.Close();
  vocab += '\n';
  TELLER_RETURN_IF_ERROR(WriteText(dir + "/vocab.json", vocab));

  std::string merges;
  JsonObjectWriter mw(merges);
  mw.Field("format", "teller-tpe-merges")
      .Field("version", 1)
      .Field("base_size", static_cast<uint64_t>(base_size()));
  mw.Key("merges");
  JsonArrayWriter list(merges);
  for (const auto& [a, b] : merges_) {
    list.NewLine().Next();
    JsonArrayWriter(merges)
        .Element(static_cast<uint64_t>(a))
        .Element(static_cast<uint64_t>(b))
        .Close();
  }
  list.Close();
  mw.Close();
  merges += '\n';
  TELLER_RETURN_IF_ERROR(WriteText(dir + "/merges.json", merges));

  std::string meta;
  JsonObjectWriter w(meta, JsonDoubles::kShortest);
  w.Field("format", "teller-tpe-model")
      .Field("version", static_cast<uint64_t>(kModelFormatVersion))
      .Field("normalization", static_cast<uint64_t>(kNormalizationVersion))
      .Field("vocab_size", static_cast<uint64_t>(size()))
      .Field("requested_vocab_size", static_cast<uint64_t>(m.requested_vocab_size))
      .Field("base_size", static_cast<uint64_t>(base_size()))
      .Field("special_tokens", static_cast<uint64_t>(kNumSpecialTokens))
      .Field("merges", static_cast<uint64_t>(merges_.size()))
      .Field("min_frequency", static_cast<uint64_t>(m.min_frequency))
      .Field("stop_reason", m.stop_reason);
  w.NewLine().Key("corpus");
  JsonObjectWriter corpus(meta, JsonDoubles::kShortest);
  corpus.Field("data", m.data).Key("settings");
  JsonArrayWriter settings(meta);
  for (const std::string& name : m.settings) settings.Element(name);
  settings.Close();
  corpus.Field("steps", static_cast<uint64_t>(m.steps))
      .Field("distinct_steps", static_cast<uint64_t>(m.distinct_steps))
      .Field("symbols", static_cast<uint64_t>(m.symbols))
      .Field("tokens", static_cast<uint64_t>(m.tokens));
  if (m.steps > 0 && m.tokens > 0) {
    corpus
        .Field("events_per_step_before",
               static_cast<double>(m.symbols) / static_cast<double>(m.steps))
        .Field("events_per_step_after",
               static_cast<double>(m.tokens) / static_cast<double>(m.steps))
        .Field("compression", static_cast<double>(m.symbols) / static_cast<double>(m.tokens));
  }
  corpus.Close();
  w.NewLine().Field("train_seconds", m.train_seconds);
  w.Close();
  meta += '\n';
  return WriteText(dir + "/metadata.json", meta);
}

Result<Model> Model::Load(const std::string& dir) {
  if (!IsDirectory(dir)) {
    return Status::Error(dir + ": no such model directory (train one with `teller tpe train`)");
  }
  od::parser parser;
  simdjson::padded_string text;
  od::document doc;
  // Reads one of the model's files into `text` and `doc`, checked whole; the returned
  // context reports "<path>: byte <offset>: ..." for it.
  auto load = [&](const std::string& name) -> Result<JsonContext> {
    const std::string path = dir + "/" + name;
    Result<simdjson::padded_string> loaded = LoadJsonFile(path);
    if (!loaded.ok()) return loaded.status();
    text = std::move(loaded.value());
    JsonContext ctx(path, std::string_view(text.data(), text.size()), doc);
    if (const simdjson::error_code e = parser.iterate(text).get(doc)) {
      return ctx.Error(e, "invalid JSON");
    }
    TELLER_RETURN_IF_ERROR(CheckWholeDocument(ctx, doc));
    return ctx;
  };

  // metadata.json: the versions this build can read.
  Result<JsonContext> meta = load("metadata.json");
  if (!meta.ok()) return meta.status();
  uint64_t version = 0, normalization = 0;
  TELLER_RETURN_IF_ERROR(meta->Field(doc, "version", &version));
  if (version != kModelFormatVersion) {
    return meta->Error("model format version " + std::to_string(version) +
                       " is not the supported version " + std::to_string(kModelFormatVersion));
  }
  TELLER_RETURN_IF_ERROR(meta->Field(doc, "normalization", &normalization));
  if (normalization != static_cast<uint64_t>(kNormalizationVersion)) {
    return meta->Error("the model was trained with symbol normalization v" +
                       std::to_string(normalization) + ", this teller uses v" +
                       std::to_string(kNormalizationVersion) + "; retrain it");
  }

  // vocab.json: the base symbols.
  Result<JsonContext> vocab = load("vocab.json");
  if (!vocab.ok()) return vocab.status();
  uint64_t size = 0, base_size = 0;
  od::array tokens;
  TELLER_RETURN_IF_ERROR(vocab->Field(doc, "size", &size));
  TELLER_RETURN_IF_ERROR(vocab->Field(doc, "base_size", &base_size));
  TELLER_RETURN_IF_ERROR(vocab->Field(doc, "tokens", &tokens));
  size_t num_tokens = 0;
  if (const simdjson::error_code e = tokens.count_elements().get(num_tokens)) {
    return vocab->Error(e, "\"tokens\"");
  }
  if (base_size < kNumSpecialTokens || base_size > size || num_tokens != size || size >= kDead) {
    return vocab->Error("inconsistent sizes (size " + std::to_string(size) + ", base_size " +
                        std::to_string(base_size) + ", " + std::to_string(num_tokens) + " tokens)");
  }
  std::vector<std::string> base;
  std::vector<std::pair<TokenId, TokenId>> vocab_merges;
  for (auto element : tokens) {
    const uint64_t expect = base.size() + vocab_merges.size();
    const std::string label = "tokens[" + std::to_string(expect) + "]";
    od::value item;
    if (const simdjson::error_code e = element.get(item)) return vocab->Error(e, label);
    od::object t;
    TELLER_RETURN_IF_ERROR(vocab->Get(item, label, &t));
    uint64_t id = 0;
    TELLER_RETURN_IF_ERROR(vocab->Field(t, "id", &id, label));
    if (id != expect) {
      return vocab->Error("token " + std::to_string(expect) + " is out of order (id " +
                          std::to_string(id) + ")");
    }
    if (id < base_size) {
      std::string_view s;
      TELLER_RETURN_IF_ERROR(vocab->Field(t, "symbol", &s, label));
      if (id < kNumSpecialTokens && s != SpecialText(static_cast<TokenId>(id))) {
        return vocab->Error("token " + std::to_string(id) + " must be " +
                            std::string(SpecialText(static_cast<TokenId>(id))));
      }
      base.emplace_back(s);
    } else {
      od::array pair;
      TELLER_RETURN_IF_ERROR(vocab->Field(t, "merge", &pair, label));
      std::vector<uint64_t> ab;
      TELLER_RETURN_IF_ERROR(ReadPair(*vocab, pair, label + ".merge", &ab));
      if (ab.size() != 2 || ab[0] >= id || ab[1] >= id) {
        return vocab->Error("token " + std::to_string(id) +
                            " needs \"merge\":[a,b] of earlier tokens");
      }
      vocab_merges.emplace_back(static_cast<TokenId>(ab[0]), static_cast<TokenId>(ab[1]));
    }
  }

  // merges.json: the merge order; must agree with vocab.json.
  Result<JsonContext> mctx = load("merges.json");
  if (!mctx.ok()) return mctx.status();
  od::array merges;
  uint64_t merges_base = 0;
  TELLER_RETURN_IF_ERROR(mctx->Field(doc, "base_size", &merges_base));
  TELLER_RETURN_IF_ERROR(mctx->Field(doc, "merges", &merges));
  size_t num_merges = 0;
  if (const simdjson::error_code e = merges.count_elements().get(num_merges)) {
    return mctx->Error(e, "\"merges\"");
  }
  if (merges_base != base_size || num_merges != vocab_merges.size()) {
    return mctx->Error("does not match vocab.json (base size " + std::to_string(merges_base) +
                       " vs " + std::to_string(base_size) + ", " + std::to_string(num_merges) +
                       " merges vs " + std::to_string(vocab_merges.size()) + ")");
  }
  size_t r = 0;
  for (auto element : merges) {
    const std::string label = "merges[" + std::to_string(r) + "]";
    od::value item;
    if (const simdjson::error_code e = element.get(item)) return mctx->Error(e, label);
    od::array pair;
    TELLER_RETURN_IF_ERROR(mctx->Get(item, label, &pair));
    std::vector<uint64_t> ab;
    TELLER_RETURN_IF_ERROR(ReadPair(*mctx, pair, label, &ab));
    if (ab.size() != 2 || ab[0] != vocab_merges[r].first || ab[1] != vocab_merges[r].second) {
      return mctx->Error("merge " + std::to_string(r) + " does not match token " +
                         std::to_string(base_size + r) + " of vocab.json");
    }
    ++r;
  }
  return Model(std::move(base), std::move(vocab_merges));
}

}  // namespace teller::tpe
