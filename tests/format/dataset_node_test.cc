// The dataset node schema: what AppendDatasetNode writes, ReadDatasetNode reads back; the
// steps.jsonl columns reader checks what the evaluation relies on.
#include "teller/format/dataset_node.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "teller/core/json_writer.h"
#include "teller/format/dataset_node_reader.h"

namespace teller::format {
namespace {

namespace od = simdjson::ondemand;

struct Sample {
  DatasetNode node;
  std::string name;
};

std::vector<Sample> Samples() {
  std::vector<Sample> out(3);
  // A host range of a version-2 (built) dataset: with its rank.
  out[0].name = "teller.step seq=1 \"quoted\"\tand\\more";
  out[0].node.id = 0;
  out[0].node.parent = -1;
  out[0].node.has_rank = true;
  out[0].node.rank = 3;
  out[0].node.layer = Layer::kStep;
  out[0].node.type = EventType::kPush;
  out[0].node.start_ns = 0;
  out[0].node.dur_ns = 1'500'000;
  out[0].node.thread = 4242;
  // A launch call with its correlation, no rank (an exported trace).
  out[1].name = "cudaLaunchKernel";
  out[1].node.id = 1;
  out[1].node.parent = 0;
  out[1].node.depth = 1;
  out[1].node.layer = Layer::kHostCall;
  out[1].node.type = EventType::kRuntime;
  out[1].node.start_ns = 10;
  out[1].node.dur_ns = 5;
  out[1].node.thread = 4242;
  out[1].node.correlation = 77;
  // A copy on a GPU stream: device and stream, bytes, no thread.
  out[2].name = "Memcpy DtoH (Device -> Pinned)";
  out[2].node.id = 2;
  out[2].node.parent = 1;
  out[2].node.depth = 2;
  out[2].node.has_rank = true;
  out[2].node.rank = 0;
  out[2].node.layer = Layer::kGpu;
  out[2].node.type = EventType::kMemcpy;
  out[2].node.start_ns = -20;  // offsets may precede the step's start
  out[2].node.dur_ns = 900;
  out[2].node.device = 1;
  out[2].node.stream = 7;
  out[2].node.correlation = 77;
  out[2].node.bytes = uint64_t{1} << 40;
  return out;
}

TEST(DatasetNodeTest, WrittenNodesReadBack) {
  const std::vector<Sample> samples = Samples();
  std::vector<std::string> names_json(samples.size());
  std::string text = "[";
  for (size_t i = 0; i < samples.size(); ++i) {
    AppendJsonString(names_json[i], samples[i].name);
    DatasetNode n = samples[i].node;
    n.name_json = names_json[i];
    if (i) text += ',';
    AppendDatasetNode(text, n);
  }
  text += ']';
  const simdjson::padded_string json(text);
  od::parser parser;
  od::document doc;
  ASSERT_EQ(parser.iterate(json).get(doc), simdjson::SUCCESS);
  const JsonContext ctx("trace.json", json, doc);
  od::array nodes;
  ASSERT_EQ(doc.get_array().get(nodes), simdjson::SUCCESS);
  size_t i = 0;
  for (auto element : nodes) {
    ASSERT_LT(i, samples.size());
    od::value v;
    ASSERT_EQ(element.get(v), simdjson::SUCCESS);
    DatasetNode got;
    std::string name;
    const Status s = ReadDatasetNode(ctx, v, "nodes[" + std::to_string(i) + "]", &got, &name);
    ASSERT_TRUE(s.ok()) << s.message();
    const DatasetNode& want = samples[i].node;
    EXPECT_EQ(name, samples[i].name);
    EXPECT_TRUE(got.name_json.empty());
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.parent, want.parent);
    EXPECT_EQ(got.depth, want.depth);
    EXPECT_EQ(got.has_rank, want.has_rank) << i;
    EXPECT_EQ(got.rank, want.rank);
    EXPECT_EQ(got.layer, want.layer);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.start_ns, want.start_ns);
    EXPECT_EQ(got.dur_ns, want.dur_ns);
    EXPECT_EQ(got.thread, want.thread);
    EXPECT_EQ(got.device, want.device);
    EXPECT_EQ(got.stream, want.stream);
    EXPECT_EQ(got.correlation, want.correlation);
    EXPECT_EQ(got.bytes, want.bytes);
    ++i;
  }
  EXPECT_EQ(i, samples.size());
}

// The error of reading `node` (one object) with ReadDatasetNode, "" when it reads.
std::string NodeError(const std::string& node) {
  const simdjson::padded_string json(node);
  od::parser parser;
  od::document doc;
  if (parser.iterate(json).get(doc) != simdjson::SUCCESS) return "not JSON";
  const JsonContext ctx("trace.json", json, doc);
  od::value v;
  if (doc.get_value().get(v) != simdjson::SUCCESS) return "no value";
  DatasetNode n;
  std::string name;
  return ReadDatasetNode(ctx, v, "nodes[0]", &n, &name).message();
}

TEST(DatasetNodeTest, NodeErrorsNameTheField) {
  const std::string ok =
      R"({"id":0,"parent":-1,"depth":0,"layer":"STEP","type":"push","name":"s","start_ns":0,)"
      R"("dur_ns":1,"thread":1})";
  EXPECT_EQ(NodeError(ok), "");
  std::string no_name = ok;
  no_name.replace(no_name.find(R"("name":"s",)"), 11, "");
  EXPECT_NE(NodeError(no_name).find("missing field \"nodes[0].name\""), std::string::npos)
      << NodeError(no_name);
  std::string layer = ok;
  layer.replace(layer.find("STEP"), 4, "LAYER9");
  EXPECT_NE(NodeError(layer).find("\"nodes[0].layer\": unknown layer \"LAYER9\""),
            std::string::npos)
      << NodeError(layer);
  std::string type = ok;
  type.replace(type.find("push"), 4, "warp");
  EXPECT_NE(NodeError(type).find("unknown event type \"warp\""), std::string::npos);
  std::string gpu = ok;
  gpu.replace(gpu.find("push"), 4, "kernel");  // a GPU node needs device and stream
  EXPECT_NE(NodeError(gpu).find("missing field \"nodes[0].device\""), std::string::npos);
}

// The error of reading the columns of one steps.jsonl line, "" when they read.
std::string ColumnsError(const std::string& line, DatasetColumns* c, size_t names = 3) {
  const simdjson::padded_string json(line);
  od::parser parser;
  od::document doc;
  if (parser.iterate(json).get(doc) != simdjson::SUCCESS) return "not JSON";
  const JsonContext ctx("steps.jsonl:4", json, doc);
  return ReadDatasetColumns(ctx, doc, names, c).message();
}

TEST(DatasetNodeTest, ColumnsAreCheckedAsTheEvaluationNeedsThem) {
  const std::string line =
      R"({"request":"a","n":3,"type":[0,4,6],"layer":[0,4,5],"name":[0,1,2],"parent":[-1,0,1],)"
      R"("depth":[0,1,2],"rank":[0,0,0],"offset_ns":[0,10,-5],"dur_ns":[100,5,50]})";
  DatasetColumns c;
  ASSERT_EQ(ColumnsError(line, &c), "");
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.type, (std::vector<uint8_t>{0, 4, 6}));
  EXPECT_EQ(c.layer, (std::vector<uint8_t>{0, 4, 5}));
  EXPECT_EQ(c.name, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(c.parent, (std::vector<int32_t>{-1, 0, 1}));
  EXPECT_EQ(c.depth, (std::vector<uint16_t>{0, 1, 2}));
  EXPECT_EQ(c.offset_ns, (std::vector<int64_t>{0, 10, -5}));
  EXPECT_EQ(c.dur_ns, (std::vector<int64_t>{100, 5, 50}));

  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = line;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_NE(
      ColumnsError(with("\"rank\":[0,0,0]", "\"rank\":[0,0]"), &c).find("steps.jsonl:4: byte "),
      std::string::npos);
  EXPECT_NE(ColumnsError(with("\"rank\":[0,0,0]", "\"rank\":[0,0]"), &c)
                .find("column \"rank\" has 2 entries, not n = 3"),
            std::string::npos);
  EXPECT_NE(ColumnsError(with("\"name\":[0,1,2]", "\"name\":[0,1,3]"), &c)
                .find("name index 3 of node 2 is outside names.json (3 names)"),
            std::string::npos);
  EXPECT_NE(ColumnsError(with("\"parent\":[-1,0,1]", "\"parent\":[-1,2,1]"), &c)
                .find("node 1 has parent 2 (parents precede their children)"),
            std::string::npos);
  EXPECT_NE(ColumnsError(with("\"type\":[0,4,6]", "\"type\":[0,4,300]"), &c)
                .find("\"type[2]\": 300 is out of range"),
            std::string::npos);
  EXPECT_NE(ColumnsError(with("\"dur_ns\":[100,5,50]", "\"dur_ns\":[100,\"x\",50]"), &c)
                .find("\"dur_ns[1]\": expected an integer"),
            std::string::npos);
  EXPECT_NE(ColumnsError(with("\"depth\":[0,1,2],", ""), &c).find("missing field \"depth\""),
            std::string::npos);
  // A reader that does not want the depth does without it.
  const simdjson::padded_string no_depth(with("\"depth\":[0,1,2],", ""));
  od::parser parser;
  od::document doc;
  ASSERT_EQ(parser.iterate(no_depth).get(doc), simdjson::SUCCESS);
  DatasetColumnsWanted wanted;
  wanted.depth = false;
  EXPECT_TRUE(ReadDatasetColumns(JsonContext("s", no_depth, doc), doc, 3, &c, wanted).ok());
  EXPECT_TRUE(c.depth.empty());
}

}  // namespace
}  // namespace teller::format
