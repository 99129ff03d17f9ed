// Reading steps.jsonl (docs/dataset-format.md) into TPE's corpus columns.
//
// A setting's steps.jsonl is read whole and its lines are parsed with simdjson On Demand
// by a few threads, each over a contiguous range of lines with its own parser, straight
// into column blocks that are concatenated in file order (so the corpus does not depend
// on the thread count). Lines are parsed in place: simdjson only needs padding readable
// after a document, and the rest of the file buffer (plus its own padding) provides it.
// Symbols are normalized once per distinct (tag, name id) of a setting.
#include "teller/tpe/corpus.h"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "simdjson.h"
#include "teller/core/file_util.h"
#include "teller/core/json_reader.h"

namespace teller::tpe {
namespace {

namespace od = simdjson::ondemand;

// Columns of a run of lines; `key` packs (tag, name id) as tag * names + name.
struct Block {
  std::vector<uint32_t> key;
  std::vector<int32_t> parent;
  std::vector<int64_t> duration;
  std::vector<uint16_t> depth;
  std::vector<uint32_t> node;
  std::vector<uint64_t> sizes;
  std::vector<StepInfo> steps;
  uint64_t reordered = 0;
  std::string error;
};

// Parses the lines [first, last) of one steps.jsonl. Errors come from core's JsonContext,
// so they read like every other reader's: "<file>:<line>: byte <offset in the line>: ...".
class LineParser {
 public:
  LineParser(const std::string& path, const simdjson::padded_string& text, size_t num_names,
             uint32_t setting)
      : path_(path), text_(text), num_names_(num_names), setting_(setting) {}

  void Parse(const std::vector<size_t>& line_start, size_t first, size_t last, Block* out);

 private:
  bool ParseLine(size_t line_no, size_t begin, size_t end, Block* out);
  bool Fail(const Status& status) {
    error_ = status.message();
    return false;
  }
  bool Check(const Status& status) { return status.ok() || Fail(status); }
  template <typename T, typename Get>
  bool ReadArray(const JsonContext& ctx, od::value& v, const char* key, std::vector<T>* out,
                 Get get);

  const std::string& path_;
  const simdjson::padded_string& text_;
  const size_t num_names_;
  const uint32_t setting_;
  od::parser parser_;
  std::string error_;
  // Per-line scratch columns, reused.
  std::vector<uint64_t> type_, name_, depth_;
  std::vector<int64_t> parent_, dur_;
};

template <typename T, typename Get>
bool LineParser::ReadArray(const JsonContext& ctx, od::value& v, const char* key,
                           std::vector<T>* out, Get get) {
  out->clear();
  od::array array;
  if (Status s = ctx.Get(v, key, &array); !s.ok()) return Fail(s);
  for (auto element : array) {
    T x{};
    if (const simdjson::error_code e = get(element, x); e != simdjson::SUCCESS) {
      // The label is built only on this path: columns hold millions of values.
      return Fail(ctx.Error(e, "\"" + std::string(key) + "[" + std::to_string(out->size()) +
                                   "]\": expected " + json_internal::TypeName(&x)));
    }
    out->push_back(x);
  }
  return true;
}

bool LineParser::ParseLine(size_t line_no, size_t begin, size_t end, Block* out) {
  const size_t capacity = text_.size() + simdjson::SIMDJSON_PADDING - begin;
  const std::string_view row(text_.data() + begin, end - begin);
  od::document doc;
  const JsonContext ctx(path_ + ":" + std::to_string(line_no), row, doc);
  if (auto e = parser_.iterate(row.data(), row.size(), capacity).get(doc); e) {
    return Fail(ctx.Error(e, "invalid JSON"));
  }
  od::object object;
  if (auto e = doc.get_object().get(object); e) {
    return Fail(ctx.Error(e, e == simdjson::INCORRECT_TYPE
                                 ? "expected a JSON object (one step record per line)"
                                 : "invalid JSON"));
  }
  StepInfo info;
  info.setting = setting_;
  uint64_t n = 0;
  bool has_n = false;
  uint32_t seen = 0;  // bit per required column
  enum { kType = 1, kName = 2, kParent = 4, kDepth = 8, kDur = 16 };
  auto get_u = [](auto& el, uint64_t& x) { return el.get_uint64().get(x); };
  auto get_i = [](auto& el, int64_t& x) { return el.get_int64().get(x); };
  // The fields in file order, each looked at once (not searched for by name): a line is
  // mostly its node columns.
  for (auto field : object) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key); e) return Fail(ctx.Error(e, "invalid JSON"));
    od::value v;
    if (auto e = field.value().get(v); e) return Fail(ctx.Error(e, "invalid JSON"));
    bool ok = true;
    if (key == "request") {
      ok = Check(ctx.Get(v, "request", &info.request));
    } else if (key == "step") {
      ok = Check(ctx.Get(v, "step", &info.step));
    } else if (key == "seq") {
      ok = Check(ctx.Get(v, "seq", &info.seq));
    } else if (key == "is_anomaly") {
      bool b = false;
      // null: unlabelled (an exported real trace); read as not anomalous.
      if (v.get_bool().get(b) == simdjson::SUCCESS) info.is_anomaly = b;
    } else if (key == "n") {
      ok = Check(ctx.Get(v, "n", &n));
      has_n = true;
    } else if (key == "type") {
      ok = ReadArray(ctx, v, "type", &type_, get_u);
      seen |= kType;
    } else if (key == "name") {
      ok = ReadArray(ctx, v, "name", &name_, get_u);
      seen |= kName;
    } else if (key == "parent") {
      ok = ReadArray(ctx, v, "parent", &parent_, get_i);
      seen |= kParent;
    } else if (key == "depth") {
      ok = ReadArray(ctx, v, "depth", &depth_, get_u);
      seen |= kDepth;
    } else if (key == "dur_ns") {
      ok = ReadArray(ctx, v, "dur_ns", &dur_, get_i);
      seen |= kDur;
    }
    if (!ok) return false;
  }
  if (seen != (kType | kName | kParent | kDepth | kDur)) {
    const char* missing = !(seen & kType)     ? "type"
                          : !(seen & kName)   ? "name"
                          : !(seen & kParent) ? "parent"
                          : !(seen & kDepth)  ? "depth"
                                              : "dur_ns";
    return Fail(ctx.Error(std::string("missing field \"") + missing + "\""));
  }
  if (!has_n) n = type_.size();
  if (type_.size() != n || name_.size() != n || parent_.size() != n || depth_.size() != n ||
      dur_.size() != n) {
    return Fail(ctx.Error("columns differ in length (n = " + std::to_string(n) + ")"));
  }
  if (n >= INT32_MAX) return Fail(ctx.Error("step too large"));
  for (size_t i = 0; i < n; ++i) {
    if (type_[i] >= static_cast<uint64_t>(kNumTypeTags)) {
      return Fail(ctx.Error("node " + std::to_string(i) + ": unknown type tag " +
                            std::to_string(type_[i])));
    }
    if (name_[i] >= num_names_) {
      return Fail(ctx.Error("node " + std::to_string(i) + ": name id " + std::to_string(name_[i]) +
                            " is outside names.json (" + std::to_string(num_names_) + " names)"));
    }
    if (parent_[i] < -1 || parent_[i] >= static_cast<int64_t>(n) ||
        parent_[i] == static_cast<int64_t>(i)) {
      return Fail(ctx.Error("node " + std::to_string(i) + ": parent " + std::to_string(parent_[i]) +
                            " is not a node of the step"));
    }
    if (depth_[i] > UINT16_MAX) {
      return Fail(ctx.Error("node " + std::to_string(i) + ": depth too large"));
    }
  }

  std::vector<int32_t> parent(parent_.begin(), parent_.end());
  const size_t at = out->key.size();
  if (IsDepthFirstOrder(parent)) {
    for (size_t i = 0; i < n; ++i) {
      out->key.push_back(static_cast<uint32_t>(type_[i] * num_names_ + name_[i]));
      out->parent.push_back(parent[i]);
      out->duration.push_back(dur_[i]);
      out->depth.push_back(static_cast<uint16_t>(depth_[i]));
      out->node.push_back(static_cast<uint32_t>(i));
    }
  } else {
    // Not stored depth-first (not what `teller dataset build` writes, but a valid tree):
    // serialize it here, remembering each position's node id.
    std::vector<TokenId> key(n);
    std::vector<uint16_t> depth(n);
    for (size_t i = 0; i < n; ++i) {
      key[i] = static_cast<uint32_t>(type_[i] * num_names_ + name_[i]);
      depth[i] = static_cast<uint16_t>(depth_[i]);
    }
    Result<Sequence> seq = Serialize(TreeView{key, parent, dur_, depth});
    if (!seq.ok()) return Fail(ctx.Error(seq.status().message()));
    out->key.insert(out->key.end(), seq->ids.begin(), seq->ids.end());
    out->parent.insert(out->parent.end(), seq->parent.begin(), seq->parent.end());
    out->duration.insert(out->duration.end(), seq->duration.begin(), seq->duration.end());
    out->depth.insert(out->depth.end(), seq->depth.begin(), seq->depth.end());
    out->node.insert(out->node.end(), seq->node.begin(), seq->node.end());
    ++out->reordered;
  }
  out->sizes.push_back(out->key.size() - at);
  out->steps.push_back(std::move(info));
  return true;
}

void LineParser::Parse(const std::vector<size_t>& line_start, size_t first, size_t last,
                       Block* out) {
  for (size_t l = first; l < last; ++l) {
    size_t begin = line_start[l], end = line_start[l + 1];
    while (end > begin && (text_.data()[end - 1] == '\n' || text_.data()[end - 1] == '\r')) --end;
    bool blank = true;
    for (size_t i = begin; i < end && blank; ++i)
      blank = text_.data()[i] == ' ' || text_.data()[i] == '\t';
    if (blank) continue;
    if (!ParseLine(l + 1, begin, end, out)) {
      out->error = error_;
      return;
    }
  }
}

Result<std::vector<std::string>> ReadNames(const std::string& path) {
  Result<simdjson::padded_string> json = LoadJsonFile(path);
  if (!json.ok()) return json.status();
  od::parser parser;
  od::document doc;
  const JsonContext ctx(path, std::string_view(json->data(), json->size()), doc);
  if (auto e = parser.iterate(*json).get(doc); e) return ctx.Error(e, "invalid JSON");
  od::array names;
  if (doc["names"].get_array().get(names) != simdjson::SUCCESS) {
    return ctx.Error("expected {\"names\":[...]} as written by `teller dataset build`");
  }
  std::vector<std::string> out;
  for (auto element : names) {
    od::value v;
    if (auto e = element.get(v); e) return ctx.Error(e, "invalid JSON");
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) {
      return ctx.Error("name " + std::to_string(out.size()) + " is not a string");
    }
    out.emplace_back(s);
  }
  return out;
}

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Builds the corpus-local symbol table: interns "<tag> <normalized name>".
class SymbolInterner {
 public:
  explicit SymbolInterner(Corpus* corpus) : corpus_(corpus) {}
  TokenId Intern(TypeTag tag, std::string_view name) {
    std::string text = SymbolText(tag, NormalizeName(tag, name));
    const auto [it, inserted] =
        ids_.try_emplace(text, static_cast<TokenId>(corpus_->symbol_text.size()));
    if (inserted) {
      corpus_->symbol_text.push_back(std::move(text));
      corpus_->symbol_tag.push_back(tag);
    }
    return it->second;
  }

 private:
  Corpus* corpus_;
  std::unordered_map<std::string, TokenId> ids_;
};

Status ReadSetting(const std::string& dir, uint32_t setting, const LoadOptions& options,
                   SymbolInterner& interner, Corpus* corpus) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<std::string>> names = ReadNames(dir + "/names.json");
  if (!names.ok()) return names.status();
  const std::string path = dir + "/steps.jsonl";
  Result<simdjson::padded_string> loaded = LoadJsonFile(path);
  if (!loaded.ok()) return loaded.status();
  simdjson::padded_string text = std::move(loaded.value());
  if (static_cast<uint64_t>(names->size()) * kNumTypeTags >= UINT32_MAX) {
    return Status::Error(dir + "/names.json: too many names");
  }
  std::vector<size_t> line_start{0};
  for (const char* p = text.data();
       (p = static_cast<const char*>(std::memchr(p, '\n', text.data() + text.size() - p)));) {
    ++p;
    line_start.push_back(static_cast<size_t>(p - text.data()));
  }
  if (line_start.back() != text.size()) line_start.push_back(text.size());
  const size_t lines = line_start.size() - 1;

  int threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<size_t>({static_cast<size_t>(threads), 8, lines / 4 + 1}));
  // Split by bytes, not by lines: step records differ in size by orders of magnitude.
  std::vector<size_t> cut{0};
  for (int t = 1; t < threads; ++t) {
    const size_t target = text.size() * t / threads;
    const size_t l = static_cast<size_t>(
        std::lower_bound(line_start.begin(), line_start.end() - 1, target) - line_start.begin());
    cut.push_back(std::max(cut.back(), l));
  }
  cut.push_back(lines);
  std::vector<Block> blocks(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      LineParser parser(path, text, names->size(), setting);
      parser.Parse(line_start, cut[t], cut[t + 1], &blocks[t]);
    });
  }
  for (std::thread& w : workers) w.join();
  for (const Block& b : blocks) {
    if (!b.error.empty()) return Status::Error(b.error);
  }

  text = simdjson::padded_string();  // the columns are all that is needed from here on

  // Concatenate in file order, mapping (tag, name) to the corpus symbols. Exact
  // reservations: the corpus columns are the largest allocation of the whole command.
  size_t added = 0, added_steps = 0;
  for (const Block& b : blocks) added += b.key.size(), added_steps += b.sizes.size();
  corpus->symbol.reserve(corpus->symbol.size() + added);
  corpus->parent.reserve(corpus->parent.size() + added);
  corpus->duration.reserve(corpus->duration.size() + added);
  corpus->depth.reserve(corpus->depth.size() + added);
  corpus->node.reserve(corpus->node.size() + added);
  corpus->offsets.reserve(corpus->offsets.size() + added_steps);
  corpus->steps.reserve(corpus->steps.size() + added_steps);
  const size_t num_names = names->size();
  std::vector<TokenId> symbol_of(num_names * kNumTypeTags, UINT32_MAX);
  uint64_t nodes = 0, steps = 0;
  for (Block& b : blocks) {
    for (uint32_t key : b.key) {
      TokenId& s = symbol_of[key];
      if (s == UINT32_MAX) {
        s = interner.Intern(static_cast<TypeTag>(key / num_names), (*names)[key % num_names]);
      }
      corpus->symbol.push_back(s);
    }
    corpus->parent.insert(corpus->parent.end(), b.parent.begin(), b.parent.end());
    corpus->duration.insert(corpus->duration.end(), b.duration.begin(), b.duration.end());
    corpus->depth.insert(corpus->depth.end(), b.depth.begin(), b.depth.end());
    corpus->node.insert(corpus->node.end(), b.node.begin(), b.node.end());
    for (uint64_t size : b.sizes) corpus->offsets.push_back(corpus->offsets.back() + size);
    for (StepInfo& s : b.steps) corpus->steps.push_back(std::move(s));
    corpus->reordered_steps += b.reordered;
    nodes += b.key.size();
    steps += b.sizes.size();
    b = Block{};
  }
  if (options.progress) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char buf[64];
    std::snprintf(buf, sizeof(buf), " in %.2f s", seconds);
    options.progress("read " + BaseName(dir) + ": " + std::to_string(steps) + " steps, " +
                     std::to_string(nodes) + " nodes" + buf);
  }
  return Status::Ok();
}

}  // namespace

TreeView Corpus::Step(size_t k, const std::vector<TokenId>* ids) const {
  const size_t b = offsets[k], n = offsets[k + 1] - b;
  const std::vector<TokenId>& s = ids != nullptr ? *ids : symbol;
  return TreeView{std::span<const TokenId>(s).subspan(b, n),
                  std::span<const int32_t>(parent).subspan(b, n),
                  std::span<const int64_t>(duration).subspan(b, n),
                  std::span<const uint16_t>(depth).subspan(b, n)};
}

bool Corpus::StepNodesAreIdentity(size_t k) const {
  for (uint64_t i = offsets[k]; i < offsets[k + 1]; ++i) {
    if (node[i] != i - offsets[k]) return false;
  }
  return true;
}

Result<std::vector<std::string>> FindSettingDirectories(const std::string& data) {
  if (data.empty()) return Status::Error("no data directory given");
  if (!IsDirectory(data)) {
    return Status::Error(data + ": " +
                         (IsRegularFile(data) ? "not a directory" : "no such directory") +
                         " (--data takes a dataset from `teller dataset build`: its root or one "
                         "setting directory)");
  }
  if (IsRegularFile(data + "/steps.jsonl")) return std::vector<std::string>{data};
  std::vector<std::string> entries;
  if (DIR* d = opendir(data.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string sub = data + "/" + name;
      if (IsDirectory(sub) && IsRegularFile(sub + "/steps.jsonl")) entries.push_back(sub);
    }
    closedir(d);
  }
  std::sort(entries.begin(), entries.end());
  if (entries.empty()) {
    return Status::Error(data +
                         ": no steps.jsonl in it or in its sub-directories (--data takes a "
                         "dataset from `teller dataset build`: its root or one setting "
                         "directory)");
  }
  return entries;
}

Result<Corpus> LoadCorpus(const std::string& data, const LoadOptions& options) {
  Result<std::vector<std::string>> dirs = FindSettingDirectories(data);
  if (!dirs.ok()) return dirs.status();
  Corpus corpus;
  SymbolInterner interner(&corpus);
  for (const std::string& dir : *dirs) {
    const auto setting = static_cast<uint32_t>(corpus.settings.size());
    corpus.settings.push_back(BaseName(dir));
    corpus.setting_dirs.push_back(dir);
    TELLER_RETURN_IF_ERROR(ReadSetting(dir, setting, options, interner, &corpus));
  }
  if (corpus.steps.empty()) {
    return Status::Error(data + ": the dataset has no steps (steps.jsonl files are empty)");
  }
  return corpus;
}

}  // namespace teller::tpe
