// `teller tpe`: Trace Pair Encoding (docs/method.md §5, docs/tpe.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/file_util.h"
#include "teller/tpe/tpe.h"

namespace teller::cli {
namespace {

using namespace teller::tpe;  // NOLINT: this file is the tpe command

constexpr const char* kTpeUsage =
    "usage: teller tpe train --data DIR --vocab N --out MODEL_DIR\n"
    "       teller tpe encode --model MODEL_DIR --data DIR [--out FILE] [--step K]\n"
    "       teller tpe stats --data DIR [--vocab 256,512,1024] [--json]\n"
    "\n"
    "Trace Pair Encoding (docs/method.md §5): call-tree steps serialized depth-first, one symbol\n"
    "per node (type tag + normalized name), compressed by merging frequent adjacent pairs.\n"
    "DIR is a dataset from `teller dataset build`: its root (all settings) or one setting\n"
    "directory (it reads <setting>/steps.jsonl and names.json).\n"
    "\n"
    "  train    learn a vocabulary of N tokens; writes vocab.json, merges.json, metadata.json\n"
    "  encode   encode steps with a model: JSON lines of input_ids, parent_idx, duration,\n"
    "           depth and spans (the nodes each token covers)\n"
    "  stats    events per step before and after TPE per vocabulary size (paper Table 6)\n"
    "Run 'teller tpe <subcommand> --help' for its options.\n";

constexpr const char* kTrainUsage =
    "usage: teller tpe train --data DIR --vocab N --out MODEL_DIR [--min-frequency F] [-q]\n"
    "\n"
    "Learns a TPE vocabulary on every step of DIR: the base alphabet is the special tokens\n"
    "([PAD], [UNK], the bare type tags) plus every node symbol seen; then the most frequent\n"
    "adjacent pair is merged into a new token until N tokens exist (ties: smallest ids\n"
    "first), or no pair occurs F times. Writes MODEL_DIR/vocab.json, merges.json and\n"
    "metadata.json (docs/tpe.md).\n"
    "\n"
    "options:\n"
    "  --data DIR           dataset root or setting directory\n"
    "  --vocab N            vocabulary size (at least the base alphabet; the error says its size)\n"
    "  --out MODEL_DIR      model directory (created)\n"
    "  --min-frequency F    do not merge pairs seen fewer than F times (default 2)\n"
    "  --threads N          parser threads (default: hardware threads, at most 8)\n"
    "  -q, --quiet          no progress lines on stderr\n";

constexpr const char* kEncodeUsage =
    "usage: teller tpe encode --model MODEL_DIR --data DIR [--out FILE] [--step K] [-q]\n"
    "\n"
    "Encodes the steps of DIR with a model from `teller tpe train`, one JSON line per step:\n"
    "  {\"setting\",\"request\",\"step\",\"seq\",\"is_anomaly\",\"nodes\",\n"
    "   \"input_ids\":[...],\"parent_idx\":[...],\"duration\":[...],\"depth\":[...],\n"
    "   \"spans\":[[first,last],...]}\n"
    "parent_idx is a token index (-1 for a root); duration is the sum of the covered nodes'\n"
    "durations (ns); depth is the first covered node's; spans give the step record's node ids\n"
    "(trace.json \"id\") each token covers, so a flagged token maps back to its operators.\n"
    "Symbols the model has never seen encode as the bare tag of their type ([K], [FE], ...).\n"
    "\n"
    "options:\n"
    "  --model MODEL_DIR    a directory written by `teller tpe train`\n"
    "  --data DIR           dataset root or setting directory\n"
    "  --out FILE           output file (default: stdout)\n"
    "  --step K             only the K-th step read (0-based, in settings' name order and\n"
    "                       file order)\n"
    "  --threads N          threads (default: hardware threads, at most 8)\n"
    "  -q, --quiet          no progress lines on stderr\n";

constexpr const char* kStatsUsage =
    "usage: teller tpe stats --data DIR [--vocab 256,512,1024] [--json] [-q]\n"
    "\n"
    "Table 6 of the paper for DIR: per vocabulary size, trained on DIR's steps, the events\n"
    "(nodes) per step before TPE, the tokens per step after, compression (before/after)\n"
    "and reduction (1 - after/before). One training run to the largest size answers all\n"
    "(a smaller vocabulary's merges are a prefix of a larger one's).\n"
    "\n"
    "options:\n"
    "  --data DIR           dataset root or setting directory\n"
    "  --vocab LIST         comma-separated vocabulary sizes (default 256,512,1024)\n"
    "  --json               {\"rows\":[{\"vocab\",\"events_before\",\"events_after\",\n"
    "                        \"compression\",\"reduction\"}]} (reduction a fraction)\n"
    "  --min-frequency F    as for train (default 2)\n"
    "  --threads N          parser threads\n"
    "  -q, --quiet          no progress lines on stderr\n";

bool IsHelp(const std::string& a) { return a == "-h" || a == "--help"; }

bool ParseUint(const std::string& text, uint64_t min, uint64_t max, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The options the three subcommands share; each accepts a subset.
struct Options {
  std::string data, out, model;
  std::string vocab;  // as given
  uint64_t min_frequency = 2;
  int64_t step = -1;
  int threads = 0;
  bool json = false;
  bool quiet = false;
};

// Parses args[1..]; returns -1 to continue, else an exit code (help printed, or an error).
int ParseOptions(const std::vector<std::string>& args, const char* sub, const char* usage,
                 const std::vector<std::string>& allowed, Options* o) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (IsHelp(a)) {
      std::fputs(usage, stdout);
      return 0;
    }
    const bool known = std::find(allowed.begin(), allowed.end(), a) != allowed.end();
    if (!known) {
      std::fprintf(stderr, "teller tpe %s: %s '%s'\n\n%s", sub,
                   !a.empty() && a[0] == '-' ? "unknown option" : "unexpected argument", a.c_str(),
                   usage);
      return 2;
    }
    if (a == "--json") {
      o->json = true;
      continue;
    }
    if (a == "-q" || a == "--quiet") {
      o->quiet = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      std::fprintf(stderr, "teller tpe %s: %s needs a value\n", sub, a.c_str());
      return 2;
    }
    const std::string& v = args[++i];
    uint64_t n = 0;
    if (a == "--data") {
      o->data = v;
    } else if (a == "--out") {
      o->out = v;
    } else if (a == "--model") {
      o->model = v;
    } else if (a == "--vocab") {
      o->vocab = v;
    } else if (a == "--min-frequency") {
      if (!ParseUint(v, 1, UINT64_MAX, &n)) {
        std::fprintf(stderr, "teller tpe %s: --min-frequency takes a count >= 1, not '%s'\n", sub,
                     v.c_str());
        return 2;
      }
      o->min_frequency = n;
    } else if (a == "--step") {
      if (!ParseUint(v, 0, INT64_MAX, &n)) {
        std::fprintf(stderr, "teller tpe %s: --step takes a step index >= 0, not '%s'\n", sub,
                     v.c_str());
        return 2;
      }
      o->step = static_cast<int64_t>(n);
    } else if (a == "--threads") {
      if (!ParseUint(v, 1, 256, &n)) {
        std::fprintf(stderr, "teller tpe %s: --threads takes 1..256, not '%s'\n", sub, v.c_str());
        return 2;
      }
      o->threads = static_cast<int>(n);
    }
  }
  return -1;
}

// Parses "256,512,1024" into sizes.
bool ParseVocabList(const std::string& text, std::vector<uint32_t>* out) {
  size_t i = 0;
  while (i <= text.size()) {
    const size_t comma = std::min(text.find(',', i), text.size());
    uint64_t v = 0;
    if (!ParseUint(text.substr(i, comma - i), 1, UINT32_MAX / 2, &v)) return false;
    out->push_back(static_cast<uint32_t>(v));
    i = comma + 1;
  }
  return !out->empty();
}

LoadOptions MakeLoadOptions(const Options& o) {
  LoadOptions l;
  l.threads = o.threads;
  if (!o.quiet) {
    l.progress = [](std::string_view line) {
      std::fprintf(stderr, "teller tpe: %.*s\n", static_cast<int>(line.size()), line.data());
    };
  }
  return l;
}

TrainOptions MakeTrainOptions(const Options& o) {
  TrainOptions t;
  t.min_frequency = o.min_frequency;
  if (!o.quiet) {
    t.progress = [](std::string_view line) {
      std::fprintf(stderr, "teller tpe: %.*s\n", static_cast<int>(line.size()), line.data());
    };
  }
  return t;
}

int Fail(const char* sub, const Status& status) {
  std::fprintf(stderr, "teller tpe %s: %s\n", sub, status.message().c_str());
  return 1;
}

int TrainCommand(const std::vector<std::string>& args) {
  Options o;
  if (const int rc = ParseOptions(
          args, "train", kTrainUsage,
          {"--data", "--vocab", "--out", "--min-frequency", "--threads", "-q", "--quiet"}, &o);
      rc >= 0) {
    return rc;
  }
  uint64_t vocab = 0;
  if (o.data.empty() || o.vocab.empty() || o.out.empty()) {
    std::fprintf(stderr,
                 "teller tpe train: --data DIR, --vocab N and --out MODEL_DIR are needed\n\n%s",
                 kTrainUsage);
    return 2;
  }
  if (!ParseUint(o.vocab, 1, UINT32_MAX / 2, &vocab)) {
    std::fprintf(stderr, "teller tpe train: --vocab takes a vocabulary size, not '%s'\n",
                 o.vocab.c_str());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Result<Corpus> corpus = LoadCorpus(o.data, MakeLoadOptions(o));
  if (!corpus.ok()) return Fail("train", corpus.status());
  if (!o.quiet) {
    std::fprintf(stderr,
                 "teller tpe: %zu steps, %zu nodes, %zu distinct symbols; training to %llu\n",
                 corpus->num_steps(), corpus->num_nodes(), corpus->symbol_text.size(),
                 static_cast<unsigned long long>(vocab));
  }
  TrainOptions t = MakeTrainOptions(o);
  t.vocab_size = static_cast<uint32_t>(vocab);
  Result<Trained> trained = TrainOnCorpus(*corpus, t, o.data);
  if (!trained.ok()) return Fail("train", trained.status());
  if (const Status s = trained->model.Save(o.out, trained->metadata); !s.ok())
    return Fail("train", s);
  const ModelMetadata& m = trained->metadata;
  std::fprintf(
      stderr,
      "teller tpe train: vocabulary %u (%u special, %u symbols, %zu merges) on %llu steps: "
      "%.2f -> %.2f events per step (%.2fx) in %.2f s (training %.2f s); wrote %s\n",
      trained->model.size(), kNumSpecialTokens, trained->model.base_size() - kNumSpecialTokens,
      trained->model.merges().size(), static_cast<unsigned long long>(m.steps),
      static_cast<double>(m.symbols) / static_cast<double>(m.steps),
      static_cast<double>(m.tokens) / static_cast<double>(m.steps),
      static_cast<double>(m.symbols) / static_cast<double>(m.tokens), Seconds(t0), m.train_seconds,
      o.out.c_str());
  if (!m.stop_reason.empty()) {
    std::fprintf(stderr, "teller tpe train: stopped before %llu tokens: %s\n",
                 static_cast<unsigned long long>(vocab), m.stop_reason.c_str());
  }
  return 0;
}

int EncodeCommand(const std::vector<std::string>& args) {
  Options o;
  if (const int rc =
          ParseOptions(args, "encode", kEncodeUsage,
                       {"--model", "--data", "--out", "--step", "--threads", "-q", "--quiet"}, &o);
      rc >= 0) {
    return rc;
  }
  if (o.model.empty() || o.data.empty()) {
    std::fprintf(stderr, "teller tpe encode: --model MODEL_DIR and --data DIR are needed\n\n%s",
                 kEncodeUsage);
    return 2;
  }
  Result<Model> model = Model::Load(o.model);
  if (!model.ok()) return Fail("encode", model.status());
  Result<Corpus> corpus = LoadCorpus(o.data, MakeLoadOptions(o));
  if (!corpus.ok()) return Fail("encode", corpus.status());
  size_t first = 0, last = corpus->num_steps();
  if (o.step >= 0) {
    if (static_cast<uint64_t>(o.step) >= corpus->num_steps()) {
      std::fprintf(stderr,
                   "teller tpe encode: --step %lld is out of range: %s has %zu steps (0..%zu)\n",
                   static_cast<long long>(o.step), o.data.c_str(), corpus->num_steps(),
                   corpus->num_steps() - 1);
      return 1;
    }
    first = static_cast<size_t>(o.step);
    last = first + 1;
  }
  // --out: written whole or not at all (a temporary renamed at the end); else stdout.
  std::optional<AtomicFileWriter> file;
  if (!o.out.empty()) {
    file.emplace(o.out);
    if (Status st = file->Open(); !st.ok()) {
      std::fprintf(stderr, "teller tpe encode: %s\n", st.message().c_str());
      return 1;
    }
  }
  const std::vector<TokenId> ids = ModelIds(*corpus, *model);
  // Batches of steps encoded in parallel, written in order.
  const int threads =
      o.threads > 0 ? o.threads
                    : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  const size_t batch = 64;
  std::vector<std::string> text(batch);
  uint64_t tokens = 0, nodes = 0;
  bool write_ok = true;
  const auto t0 = std::chrono::steady_clock::now();
  auto last_progress = t0;
  for (size_t b = first; b < last && write_ok; b += batch) {
    const size_t e = std::min(last, b + batch);
    std::vector<uint64_t> counts(e - b, 0);
    auto work = [&](int t) {
      for (size_t k = b + static_cast<size_t>(t); k < e; k += static_cast<size_t>(threads)) {
        std::string& s = text[k - b];
        s.clear();
        const Sequence seq = EncodeStep(*corpus, ids, *model, k);
        counts[k - b] = seq.size();
        AppendEncodedStepJson(s, *corpus, k, seq);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (std::thread& th : pool) th.join();
    for (size_t k = b; k < e; ++k) {
      if (file) {
        write_ok = write_ok && file->Append(text[k - b]).ok();
      } else {
        write_ok = write_ok && std::fwrite(text[k - b].data(), 1, text[k - b].size(), stdout) ==
                                   text[k - b].size();
      }
      tokens += counts[k - b];
      nodes += corpus->offsets[k + 1] - corpus->offsets[k];
    }
    if (!o.quiet && std::chrono::steady_clock::now() - last_progress > std::chrono::seconds(1)) {
      last_progress = std::chrono::steady_clock::now();
      std::fprintf(stderr, "teller tpe: encoded %zu/%zu steps\n", e - first, last - first);
    }
  }
  if (file) {
    const Status st = write_ok ? file->Commit() : file->Append({});  // the first error
    if (!st.ok()) {
      std::fprintf(stderr, "teller tpe encode: %s\n", st.message().c_str());
      return 1;
    }
  } else if (std::fflush(stdout) != 0 || !write_ok) {
    std::fprintf(stderr, "teller tpe encode: writing stdout failed\n");
    return 1;
  }
  if (!o.quiet) {
    std::fprintf(
        stderr, "teller tpe encode: %zu steps, %llu nodes -> %llu tokens (%.2fx) in %.2f s\n",
        last - first, static_cast<unsigned long long>(nodes),
        static_cast<unsigned long long>(tokens),
        tokens ? static_cast<double>(nodes) / static_cast<double>(tokens) : 0.0, Seconds(t0));
  }
  return 0;
}

int StatsCommand(const std::vector<std::string>& args) {
  Options o;
  o.vocab = "256,512,1024";
  if (const int rc = ParseOptions(
          args, "stats", kStatsUsage,
          {"--data", "--vocab", "--json", "--min-frequency", "--threads", "-q", "--quiet"}, &o);
      rc >= 0) {
    return rc;
  }
  if (o.data.empty()) {
    std::fprintf(stderr, "teller tpe stats: --data DIR is needed\n\n%s", kStatsUsage);
    return 2;
  }
  std::vector<uint32_t> sizes;
  if (!ParseVocabList(o.vocab, &sizes)) {
    std::fprintf(stderr, "teller tpe stats: --vocab takes sizes like 256,512,1024, not '%s'\n",
                 o.vocab.c_str());
    return 2;
  }
  Result<Corpus> corpus = LoadCorpus(o.data, MakeLoadOptions(o));
  if (!corpus.ok()) return Fail("stats", corpus.status());
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<StatsRow>> rows = CompressionStats(*corpus, sizes, MakeTrainOptions(o));
  if (!rows.ok()) return Fail("stats", rows.status());
  if (!o.quiet) {
    std::fprintf(stderr,
                 "teller tpe: %zu steps, %zu nodes, %zu distinct symbols; trained in %.2f s\n",
                 corpus->num_steps(), corpus->num_nodes(), corpus->symbol_text.size(), Seconds(t0));
  }
  if (o.json && !o.quiet) {  // the table says so itself; JSON has a fixed shape
    for (const StatsRow& r : *rows) {
      if (r.vocab_reached < r.vocab) {
        std::fprintf(stderr,
                     "teller tpe stats: vocabulary %u: training stopped at %u (no pair occurs "
                     "often enough)\n",
                     r.vocab, r.vocab_reached);
      }
    }
  }
  const std::string text = o.json ? StatsJson(*rows) : StatsTable(*rows);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

int TpeCommand(const std::vector<std::string>& args) {
  if (args.empty() || IsHelp(args[0])) {
    std::fputs(kTpeUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string& sub = args[0];
  if (sub == "train") return TrainCommand(args);
  if (sub == "encode") return EncodeCommand(args);
  if (sub == "stats") return StatsCommand(args);
  std::fprintf(stderr, "teller tpe: unknown subcommand '%s'\n\n%s", sub.c_str(), kTpeUsage);
  return 2;
}

}  // namespace teller::cli
