// Reading steps.jsonl, and the model round trip: train, save, load, encode equals the
// in-memory encode (and the trainer's own final corpus).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "teller/core/file_util.h"
#include "teller/tpe/tpe.h"

namespace teller::tpe {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/teller-tpe-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct NodeRow {
  int type;
  int name;
  int parent;
  int depth;
  int64_t dur;
};

template <typename F>
std::string Column(const std::vector<NodeRow>& nodes, F f) {
  std::string s = "[";
  for (size_t i = 0; i < nodes.size(); ++i) s += (i ? "," : "") + std::to_string(f(nodes[i]));
  return s + "]";
}

// One steps.jsonl line as `teller dataset build` writes it (labels, then columns).
std::string StepLine(const std::string& request, int step, const std::vector<NodeRow>& nodes) {
  std::string line =
      "{\"request\":\"" + request + "\",\"step\":" + std::to_string(step) +
      ",\"seq\":" + std::to_string(step + 1) +
      ",\"is_anomaly\":false,\"fault_type\":null,\"vertical\":{\"is_anomaly\":false,"
      "\"affected_nodes\":[]},\"horizontal\":{\"is_anomaly\":false,\"affected_nodes\":[]}";
  line += ",\"n\":" + std::to_string(nodes.size());
  line += ",\"type\":" + Column(nodes, [](const NodeRow& r) { return r.type; });
  line += ",\"layer\":" + Column(nodes, [](const NodeRow&) { return 0; });
  line += ",\"name\":" + Column(nodes, [](const NodeRow& r) { return r.name; });
  line += ",\"parent\":" + Column(nodes, [](const NodeRow& r) { return r.parent; });
  line += ",\"depth\":" + Column(nodes, [](const NodeRow& r) { return r.depth; });
  line += ",\"rank\":" + Column(nodes, [](const NodeRow&) { return 0; });
  line += ",\"offset_ns\":" + Column(nodes, [](const NodeRow&) { return 0; });
  line += ",\"dur_ns\":" + Column(nodes, [](const NodeRow& r) { return r.dur; });
  return line + "}\n";
}

const char* kNames =
    "{\"format\":\"teller-dataset-names\",\"version\":1,\"names\":["
    "\"teller.step seq=1 kind=decode n=1 tokens=1 reqs=a\",\n"  // 0
    "\"aten::linear\",\n"                                       // 1
    "\"cudaLaunchKernel\",\n"                                   // 2
    "\"void gemm<float, 128>(float*)\",\n"                      // 3
    "\"void gemm<float, 64>(float*)\",\n"                       // 4
    "\"teller.step seq=2 kind=decode n=1 tokens=1 reqs=b\",\n"  // 5
    "\"model.layers.3\"]}\n";                                   // 6

// A decode step: STEP > layer > {linear > launch > gemm} x k.
std::vector<NodeRow> DecodeStep(int layers, int step_name, int gemm_name, std::mt19937& rng) {
  std::vector<NodeRow> nodes{{0, step_name, -1, 0, 1000}};
  for (int l = 0; l < layers; ++l) {
    const int layer = static_cast<int>(nodes.size());
    nodes.push_back({1, 6, 0, 1, 100});
    for (int op = 0; op < 2; ++op) {
      const int linear = static_cast<int>(nodes.size());
      nodes.push_back({1, 1, layer, 2, static_cast<int64_t>(10 + rng() % 5)});
      nodes.push_back({4, 2, linear, 3, 3});
      nodes.push_back(
          {6, rng() % 5 == 0 ? 4 : gemm_name, linear + 1, 4, static_cast<int64_t>(7 + rng() % 3)});
    }
  }
  return nodes;
}

// Two settings; "b" holds a step stored breadth-first (not depth-first).
void WriteDataset(const std::string& root) {
  std::mt19937 rng(3);
  for (const char* setting : {"a", "b"}) {
    const std::string dir = root + "/" + setting;
    ASSERT_TRUE(MakeDirs(dir).ok());
    WriteFile(dir + "/names.json", kNames);
    std::string lines;
    for (int k = 0; k < 12; ++k)
      lines +=
          StepLine("req-" + std::to_string(k % 3), k, DecodeStep(2 + k % 3, k % 2 ? 0 : 5, 3, rng));
    if (std::string(setting) == "b") {
      lines += StepLine("req-bfs", 12,
                        {{0, 0, -1, 0, 50},
                         {1, 1, 0, 1, 10},
                         {1, 6, 0, 1, 20},
                         {4, 2, 1, 2, 3},
                         {4, 2, 2, 2, 4}});
    }
    WriteFile(dir + "/steps.jsonl", lines);
  }
}

TEST(LoadCorpus, ReadsSettingsNormalizesAndSerializes) {
  TempDir tmp;
  WriteDataset(tmp.path());
  Result<Corpus> corpus = LoadCorpus(tmp.path(), LoadOptions{});
  ASSERT_TRUE(corpus.ok()) << corpus.status().message();
  EXPECT_EQ(corpus->settings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(corpus->num_steps(), 25u);
  // Two STEP names normalize to one symbol; gemm<float, 128> and <float, 64> too.
  std::vector<std::string> texts = corpus->symbol_text;
  std::sort(texts.begin(), texts.end());
  EXPECT_EQ(texts,
            (std::vector<std::string>{"[FE] aten::linear", "[FE] model.layers.#",
                                      "[K] gemm<float, #>", "[RT] cudaLaunchKernel",
                                      "[STEP] teller.step seq=* kind=decode n=* tokens=* reqs=*"}));
  // The breadth-first step comes out depth-first, with its node ids kept.
  const size_t k = corpus->num_steps() - 1;
  EXPECT_EQ(corpus->steps[k].request, "req-bfs");
  EXPECT_EQ(corpus->reordered_steps, 1u);
  EXPECT_FALSE(corpus->StepNodesAreIdentity(k));
  const std::vector<uint32_t> node(corpus->node.begin() + corpus->offsets[k], corpus->node.end());
  EXPECT_EQ(node, (std::vector<uint32_t>{0, 1, 3, 2, 4}));
  const std::vector<int32_t> parent(corpus->parent.begin() + corpus->offsets[k],
                                    corpus->parent.end());
  EXPECT_EQ(parent, (std::vector<int32_t>{-1, 0, 1, 0, 3}));

  // One setting directory reads alone.
  Result<Corpus> one = LoadCorpus(tmp.path() + "/a", LoadOptions{});
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->num_steps(), 12u);
  // The thread count does not change the corpus.
  LoadOptions single;
  single.threads = 1;
  Result<Corpus> again = LoadCorpus(tmp.path(), single);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->symbol, corpus->symbol);
  EXPECT_EQ(again->offsets, corpus->offsets);
}

TEST(LoadCorpus, ClearErrors) {
  TempDir tmp;
  auto error = [](const std::string& data) {
    Result<Corpus> c = LoadCorpus(data, LoadOptions{});
    return c.ok() ? std::string("(ok)") : c.status().message();
  };
  EXPECT_NE(error(tmp.path() + "/missing").find("no such directory"), std::string::npos);
  EXPECT_NE(error(tmp.path()).find("no steps.jsonl"), std::string::npos);
  const std::string dir = tmp.path() + "/s";
  ASSERT_TRUE(MakeDirs(dir).ok());
  WriteFile(dir + "/names.json", kNames);
  WriteFile(dir + "/steps.jsonl", "");
  EXPECT_NE(error(tmp.path()).find("no steps"), std::string::npos) << error(tmp.path());
  std::mt19937 rng(1);
  WriteFile(dir + "/steps.jsonl",
            StepLine("r", 0, DecodeStep(1, 0, 3, rng)) + "{\"request\":\"r\",\"type\":[1,\n");
  // Errors are core's JsonContext's: "<file>:<line>: byte <offset in the line>: <what>".
  EXPECT_NE(error(dir).find("steps.jsonl:2: byte "), std::string::npos) << error(dir);
  EXPECT_NE(error(dir).find(": invalid JSON ("), std::string::npos) << error(dir);
  // Checks made after the whole line is read stand at its end.
  std::string line = StepLine("r", 0, {{0, 99, -1, 0, 1}});
  WriteFile(dir + "/steps.jsonl", line);
  EXPECT_NE(error(dir).find("steps.jsonl:1: byte " + std::to_string(line.size() - 1) +
                            ": node 0: name id 99 is outside names.json"),
            std::string::npos)
      << error(dir);
  WriteFile(dir + "/steps.jsonl", StepLine("r", 0, {{0, 0, -1, 0, 1}, {1, 1, 7, 1, 1}}));
  EXPECT_NE(error(dir).find("parent 7 is not a node"), std::string::npos) << error(dir);
  line = "{\"request\":\"r\",\"n\":1,\"type\":[0],\"name\":[0],\"parent\":[-1],\"depth\":[0]}";
  WriteFile(dir + "/steps.jsonl", line + "\n");
  EXPECT_NE(error(dir).find("steps.jsonl:1: byte " + std::to_string(line.size()) +
                            ": missing field \"dur_ns\""),
            std::string::npos)
      << error(dir);
  // A mistyped value is named with its column and index, at its offset: "name":[0,"x"]
  // has the string at byte 44.
  line =
      "{\"request\":\"r\",\"n\":2,\"type\":[0,0],\"name\":[0,\"x\"],\"parent\":[-1,0],"
      "\"depth\":[0,1],\"dur_ns\":[1,1]}";
  WriteFile(dir + "/steps.jsonl", line + "\n");
  ASSERT_EQ(line.find("\"x\""), 44u);
  EXPECT_NE(error(dir).find("steps.jsonl:1: byte 44: \"name[1]\": expected an unsigned integer ("),
            std::string::npos)
      << error(dir);
}

TEST(Model, RoundTripThroughFilesEncodesTheSame) {
  TempDir tmp;
  WriteDataset(tmp.path() + "/data");
  Result<Corpus> corpus = LoadCorpus(tmp.path() + "/data", LoadOptions{});
  ASSERT_TRUE(corpus.ok()) << corpus.status().message();
  TrainOptions options;
  options.vocab_size = 40;
  Result<Trained> trained = TrainOnCorpus(*corpus, options, tmp.path() + "/data");
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  EXPECT_EQ(trained->model.base_size(), kNumSpecialTokens + 5);
  ASSERT_GT(trained->model.merges().size(), 5u);
  const std::string dir = tmp.path() + "/model";
  ASSERT_TRUE(trained->model.Save(dir, trained->metadata).ok());
  Result<Model> loaded = Model::Load(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->base_symbols(), trained->model.base_symbols());
  EXPECT_EQ(loaded->merges(), trained->model.merges());

  const std::vector<TokenId> ids = ModelIds(*corpus, trained->model);
  EXPECT_EQ(ModelIds(*corpus, *loaded), ids);
  uint64_t tokens = 0;
  for (size_t k = 0; k < corpus->num_steps(); ++k) {
    const Sequence a = EncodeStep(*corpus, ids, trained->model, k);
    const Sequence b = EncodeStep(*corpus, ids, *loaded, k);
    ASSERT_EQ(a.ids, b.ids);
    ASSERT_EQ(a.parent, b.parent);
    ASSERT_EQ(a.duration, b.duration);
    ASSERT_EQ(a.depth, b.depth);
    ASSERT_EQ(a.span, b.span);
    std::string la, lb;
    AppendEncodedStepJson(la, *corpus, k, a);
    AppendEncodedStepJson(lb, *corpus, k, b);
    ASSERT_EQ(la, lb);
    tokens += a.size();
  }
  // Encoding the training data reproduces the trainer's own corpus size.
  EXPECT_EQ(tokens, trained->result.tokens_after.back());

  const std::string meta = ReadFile(dir + "/metadata.json");
  EXPECT_NE(meta.find("\"requested_vocab_size\":40"), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"vocab_size\":" + std::to_string(trained->model.size())), std::string::npos)
      << meta;
  EXPECT_NE(meta.find("\"steps\":25"), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"normalization\":1"), std::string::npos) << meta;

  // Damaged model files are refused with the file's name and the byte offset (core's
  // JsonContext).
  const std::string merges = ReadFile(dir + "/merges.json");
  WriteFile(dir + "/merges.json", "{\"base_size\":18,\"merges\":[[1,2]]}");
  Result<Model> broken = Model::Load(dir);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("merges.json: byte "), std::string::npos)
      << broken.status().message();
  EXPECT_NE(broken.status().message().find("does not match vocab.json"), std::string::npos)
      << broken.status().message();
  WriteFile(dir + "/merges.json", merges);
  ASSERT_TRUE(Model::Load(dir).ok());
  // The whole file is checked, not only the fields Load reads: a broken value in
  // metadata.json's corpus description is refused too (at its offset).
  const size_t at = meta.find("\"corpus\":{");
  ASSERT_NE(at, std::string::npos);
  WriteFile(dir + "/metadata.json", meta.substr(0, at) + "\"corpus\":tru}\n");
  broken = Model::Load(dir);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("metadata.json: byte " + std::to_string(at + 9) +
                                           ": invalid JSON ("),
            std::string::npos)
      << broken.status().message();
  EXPECT_FALSE(Model::Load(tmp.path() + "/nothing").ok());
}

TEST(CompressionStats, RowsFromOneTraining) {
  TempDir tmp;
  WriteDataset(tmp.path());
  Result<Corpus> corpus = LoadCorpus(tmp.path(), LoadOptions{});
  ASSERT_TRUE(corpus.ok());
  Result<std::vector<StatsRow>> rows = CompressionStats(*corpus, {18, 24, 40}, TrainOptions{});
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_DOUBLE_EQ((*rows)[0].compression, 1.0);  // base alphabet only: no merges
  EXPECT_GT((*rows)[1].compression, (*rows)[0].compression);
  EXPECT_GE((*rows)[2].compression, (*rows)[1].compression);
  for (const StatsRow& r : *rows) {
    EXPECT_NEAR(r.reduction, 1 - r.events_after / r.events_before, 1e-12);
  }
  // A size below the base alphabet says so.
  Result<std::vector<StatsRow>> small = CompressionStats(*corpus, {10, 40}, TrainOptions{});
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("smaller than the base alphabet: 18 symbols"),
            std::string::npos)
      << small.status().message();
}

}  // namespace
}  // namespace teller::tpe
