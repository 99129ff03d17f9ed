// `teller tpe` end to end on a small simulated dataset (teller simulate + dataset build):
// the stats JSON shape and compression growing with the vocabulary, train + encode
// against the library's in-memory encode, and the errors a user meets.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "simdjson.h"
#include "teller/tpe/tpe.h"

namespace teller::tpe {
namespace {

struct Output {
  int code = -1;
  std::string out, err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TpeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/teller-tpe-cli-XXXXXX";
    dir_ = new std::string(mkdtemp(tmpl));
    // A small faulty vLLM run: 12 requests, 4 layers; about 0.5 s to simulate and build.
    const Output sim =
        Run("simulate --profile vllm-v1-online --requests 12 --layers 4 "
            "--random-faults 2 --seed 3 --out " +
            Dir() + "/sim");
    ASSERT_EQ(sim.code, 0) << sim.err;
    const Output build = Run("dataset build " + Dir() + "/sim --out " + Dir() + "/ds");
    ASSERT_EQ(build.code, 0) << build.err;
  }
  static void TearDownTestSuite() {
    std::system(("rm -rf '" + Dir() + "'").c_str());
    delete dir_;
  }
  static const std::string& Dir() { return *dir_; }

  // Runs `teller ARGS`, capturing stdout and stderr.
  static Output Run(const std::string& args) {
    Output o;
    const std::string out = Dir() + "/stdout", err = Dir() + "/stderr";
    const std::string cmd =
        std::string("'") + TELLER_BIN + "' " + args + " >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = ReadFile(out);
    o.err = ReadFile(err);
    return o;
  }

  // The base alphabet's size, from the error for a vocabulary that is too small.
  static uint32_t BaseSize() {
    const Output o = Run("tpe stats --data " + Dir() + "/ds --vocab 1 -q");
    EXPECT_EQ(o.code, 1);
    EXPECT_NE(o.err.find("smaller than the base alphabet"), std::string::npos) << o.err;
    const size_t at = o.err.find("use at least ");
    if (at == std::string::npos) return 0;
    return static_cast<uint32_t>(std::stoul(o.err.substr(at + 13)));
  }

  static std::string* dir_;
};
std::string* TpeCli::dir_ = nullptr;

TEST_F(TpeCli, StatsJsonHasTheTableShapeAndCompressionGrowsWithVocab) {
  const uint32_t base = BaseSize();
  ASSERT_GT(base, kNumSpecialTokens);
  const std::vector<uint32_t> sizes{base, base + 16, base + 64, base + 256};
  std::string list;
  for (uint32_t v : sizes) list += (list.empty() ? "" : ",") + std::to_string(v);
  const Output o = Run("tpe stats --data " + Dir() + "/ds --vocab " + list + " --json");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("read vllm-v1-online"), std::string::npos) << o.err;  // progress

  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(o.out).get(root), simdjson::SUCCESS) << o.out;
  simdjson::dom::object top;
  ASSERT_EQ(root.get_object().get(top), simdjson::SUCCESS);
  ASSERT_EQ(top.size(), 1u) << o.out;  // exactly {"rows":[...]}
  simdjson::dom::array rows;
  ASSERT_EQ(root["rows"].get_array().get(rows), simdjson::SUCCESS) << o.out;
  ASSERT_EQ(rows.size(), sizes.size());
  const std::vector<std::string> keys{"vocab", "events_before", "events_after", "compression",
                                      "reduction"};
  double last_compression = 0, first_compression = 0;
  size_t i = 0;
  for (simdjson::dom::element row : rows) {
    simdjson::dom::object obj;
    ASSERT_EQ(row.get_object().get(obj), simdjson::SUCCESS);
    std::vector<std::string> got;
    for (auto field : obj) got.emplace_back(field.key);
    EXPECT_EQ(got, keys);
    uint64_t vocab = 0;
    double before = 0, after = 0, compression = 0, reduction = 0;
    ASSERT_EQ(row["vocab"].get_uint64().get(vocab), simdjson::SUCCESS);
    ASSERT_EQ(row["events_before"].get_double().get(before), simdjson::SUCCESS);
    ASSERT_EQ(row["events_after"].get_double().get(after), simdjson::SUCCESS);
    ASSERT_EQ(row["compression"].get_double().get(compression), simdjson::SUCCESS);
    ASSERT_EQ(row["reduction"].get_double().get(reduction), simdjson::SUCCESS);
    EXPECT_EQ(vocab, sizes[i]);
    EXPECT_GT(before, 0);
    EXPECT_NEAR(compression, before / after, 1e-9 * compression);
    EXPECT_NEAR(reduction, 1 - after / before, 1e-12);
    EXPECT_GE(reduction, 0);
    EXPECT_LT(reduction, 1);  // a fraction, not a percentage
    if (i == 0) {
      EXPECT_DOUBLE_EQ(compression, 1.0);  // the base alphabet alone compresses nothing
      first_compression = compression;
    } else {
      EXPECT_GE(compression, last_compression) << "vocab " << vocab;
    }
    last_compression = compression;
    ++i;
  }
  EXPECT_GT(last_compression, 2 * first_compression);

  // The text table has the same rows.
  const Output text = Run("tpe stats --data " + Dir() + "/ds --vocab " + list + " -q");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(
      text.out.rfind("vocab  events/step before  events/step after  compression  reduction\n", 0),
      0u)
      << text.out;
  EXPECT_NE(text.out.find("x  "), std::string::npos);
  EXPECT_NE(text.out.find('%'), std::string::npos);
  EXPECT_TRUE(text.err.empty()) << text.err;  // -q
}

TEST_F(TpeCli, TrainThenEncodeMatchesTheLibrary) {
  const uint32_t vocab = BaseSize() + 64;
  const std::string model = Dir() + "/model";
  const Output train =
      Run("tpe train --data " + Dir() + "/ds --vocab " + std::to_string(vocab) + " --out " + model);
  ASSERT_EQ(train.code, 0) << train.err;
  for (const char* f : {"/vocab.json", "/merges.json", "/metadata.json"}) {
    EXPECT_FALSE(ReadFile(model + f).empty()) << f;
  }
  const Output encode = Run("tpe encode --model " + model + " --data " + Dir() + "/ds --out " +
                            Dir() + "/enc.jsonl -q");
  ASSERT_EQ(encode.code, 0) << encode.err;
  const std::string lines = ReadFile(Dir() + "/enc.jsonl");

  // The same encode in memory, from the files the command wrote.
  Result<Model> loaded = Model::Load(model);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->size(), vocab);
  Result<Corpus> corpus = LoadCorpus(Dir() + "/ds", LoadOptions{});
  ASSERT_TRUE(corpus.ok()) << corpus.status().message();
  const std::vector<TokenId> ids = ModelIds(*corpus, *loaded);
  std::string want;
  for (size_t k = 0; k < corpus->num_steps(); ++k) {
    AppendEncodedStepJson(want, *corpus, k, EncodeStep(*corpus, ids, *loaded, k));
  }
  ASSERT_EQ(lines, want);

  // Every line: parallel arrays, and spans that cover the step's nodes once, in order.
  simdjson::dom::parser parser;
  std::istringstream in(lines);
  std::string line;
  size_t steps = 0, tokens = 0, nodes = 0;
  while (std::getline(in, line)) {
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(line).get(e), simdjson::SUCCESS);
    simdjson::dom::array input_ids, parent, duration, depth, spans;
    ASSERT_EQ(e["input_ids"].get_array().get(input_ids), simdjson::SUCCESS);
    ASSERT_EQ(e["parent_idx"].get_array().get(parent), simdjson::SUCCESS);
    ASSERT_EQ(e["duration"].get_array().get(duration), simdjson::SUCCESS);
    ASSERT_EQ(e["depth"].get_array().get(depth), simdjson::SUCCESS);
    ASSERT_EQ(e["spans"].get_array().get(spans), simdjson::SUCCESS);
    uint64_t n = 0;
    ASSERT_EQ(e["nodes"].get_uint64().get(n), simdjson::SUCCESS);
    const size_t t = input_ids.size();
    ASSERT_EQ(parent.size(), t);
    ASSERT_EQ(duration.size(), t);
    ASSERT_EQ(depth.size(), t);
    ASSERT_EQ(spans.size(), t);
    uint64_t next = 0;
    for (simdjson::dom::element span : spans) {
      uint64_t first = 0, last = 0;
      ASSERT_EQ(span.at(0).get_uint64().get(first), simdjson::SUCCESS);
      ASSERT_EQ(span.at(1).get_uint64().get(last), simdjson::SUCCESS);
      ASSERT_EQ(first, next);
      ASSERT_GE(last, first);
      next = last + 1;
    }
    ASSERT_EQ(next, n);
    size_t j = 0;
    for (simdjson::dom::element p : parent) {
      int64_t v = 0;
      ASSERT_EQ(p.get_int64().get(v), simdjson::SUCCESS);
      ASSERT_GE(v, -1);
      ASSERT_LT(v, static_cast<int64_t>(j));  // parents precede children, as in the steps
      ++j;
    }
    ++steps;
    tokens += t;
    nodes += n;
  }
  EXPECT_EQ(steps, corpus->num_steps());
  EXPECT_LT(tokens, nodes);

  // --step K is line K.
  const Output one = Run("tpe encode --model " + model + " --data " + Dir() + "/ds --step 3 -q");
  ASSERT_EQ(one.code, 0) << one.err;
  std::istringstream again(lines);
  for (int k = 0; k <= 3; ++k) std::getline(again, line);
  EXPECT_EQ(one.out, line + "\n");
}

TEST_F(TpeCli, Errors) {
  Output o = Run("tpe train --data " + Dir() + "/missing --vocab 512 --out " + Dir() + "/m2");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("no such directory"), std::string::npos) << o.err;
  o = Run("tpe train --data " + Dir() + "/sim --vocab 512 --out " + Dir() + "/m2");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("no steps.jsonl"), std::string::npos) << o.err;
  o = Run("tpe train --data " + Dir() + "/ds --vocab 20 --out " + Dir() + "/m2 -q");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("--vocab 20 is smaller than the base alphabet"), std::string::npos) << o.err;
  o = Run("tpe train --data " + Dir() + "/ds --out " + Dir() + "/m2");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--vocab N"), std::string::npos) << o.err;
  o = Run("tpe stats --data " + Dir() + "/ds --vocab 256,abc");
  EXPECT_EQ(o.code, 2);
  o = Run("tpe encode --model " + Dir() + "/nothing --data " + Dir() + "/ds");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("no such model directory"), std::string::npos) << o.err;
  o = Run("tpe frobnicate");
  EXPECT_EQ(o.code, 2);
  for (const char* help :
       {"tpe --help", "tpe train --help", "tpe encode --help", "tpe stats --help"}) {
    o = Run(help);
    EXPECT_EQ(o.code, 0) << help;
    EXPECT_EQ(o.out.rfind("usage: teller tpe", 0), 0u) << help << ": " << o.out;
  }
}

}  // namespace
}  // namespace teller::tpe
