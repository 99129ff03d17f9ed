// `teller dataset build` on a synthetic two-rank trace whose answer is known by
// construction: locator resolution (ranges per thread, nested calls, graph launches),
// step records across ranks, labels, logs and the compact step records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <list>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simdjson.h"
#include "teller/dataset/build.h"
#include "teller/dataset/dataset_export.h"
#include "teller/dataset/log_text.h"
#include "teller/dataset/stats.h"
#include "teller/dataset/trace_file.h"
#include "teller/format/dataset_node_reader.h"
#include "teller/logs/template_miner.h"

namespace teller::dataset {
namespace {

using format::NodeLocator;

// A file's text; a dataset's trace.json.gz gunzipped.
std::string ReadText(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    Result<std::string> text = ReadTraceText(path);
    EXPECT_TRUE(text.ok()) << text.status().message();
    return text.ok() ? text.value() : std::string();
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Two processes on two hosts (ranks 0 and 1), each running engine steps seq=5 (requests
// a, b) and seq=6 (b, c) on thread = pid:
//   STEP > attention > cudaLaunchKernel [> cuLaunchKernel (rank 0, seq 5)] -> gemm
//        > attention > cudaGraphLaunch -> k1, k2
//        > teller.comm op=all_reduce > ncclAllReduce -> ncclDevKernel_AllReduce
// Correlation ids are 10*seq + rank*100 + {1,2,3}.
class SyntheticTrace {
 public:
  // `node1_offset`: node-1's clock runs ahead by this much (ns); clock alignment needs at
  // least three collectives per host to correct it, hence `third_step` (seq=7, request c).
  explicit SyntheticTrace(int64_t node1_offset = 0, bool third_step = false) {
    p0_ = trace_.ProcessIndex("node-0", 100);
    p1_ = trace_.ProcessIndex("node-1", 200);
    trace_.processes[p0_].rank = 0;
    trace_.processes[p1_].rank = 1;
    // A range of the same name on another thread, first in the table: occurrences count
    // per thread, so it must not shift the step's attention ranges.
    Add(p0_, 101, EventType::kPush, "attention", 10);
    Add(p0_, 101, EventType::kPop, "", 20);
    for (uint32_t p : {p0_, p1_}) {
      const int64_t offset = p == p1_ ? node1_offset : 0;
      Step(p, 5, "a,b", 1000 + offset, p == p0_);
      Step(p, 6, "b,c", 3000 + offset, false);
      if (third_step) Step(p, 7, "c", 5000 + offset, false);
    }
    Log(1500, "a", "request a did something");
    Log(1500, "b", "request b did something");
    Log(1050, "", "engine line without a request");  // aligned to both ranks' step 5
  }
  Trace& trace() { return trace_; }
  uint32_t p0_ = 0, p1_ = 0;
  std::vector<size_t> rows;  // every Add, in order

  size_t Add(uint32_t p, uint32_t thread, EventType type, std::string_view name, int64_t start,
             int64_t end = -1, uint64_t corr = 0, uint32_t flags = 0) {
    EventRow row;
    row.type = type;
    row.name = trace_.strings.Intern(name);
    row.category = trace_.strings.Intern(IsGpuWork(type)    ? "gpu"
                                         : IsHostCall(type) ? "cuda_runtime"
                                                            : "nvtx");
    row.process = p;
    row.thread = thread;
    row.start_ns = start;
    row.end_ns = end < 0 ? start : end;
    row.correlation = corr;
    row.flags = flags;
    if (IsGpuWork(type)) row.stream = 7;
    const size_t i = trace_.events.Append(row);
    rows.push_back(i);
    return i;
  }

 private:
  void Step(uint32_t p, int seq, const std::string& reqs, int64_t t, bool nested_driver) {
    const uint32_t tid = static_cast<uint32_t>(trace_.processes[p].pid);
    const uint64_t c = 10 * seq + 100 * trace_.processes[p].rank;
    Add(p, tid, EventType::kPush,
        "teller.step seq=" + std::to_string(seq) + " kind=decode n=2 reqs=" + reqs, t);
    Add(p, tid, EventType::kPush, "attention", t + 100);
    Add(p, tid, EventType::kRuntime, "cudaLaunchKernel", t + 110, t + 120, c + 1);
    if (nested_driver)
      Add(p, tid, EventType::kDriver, "cuLaunchKernel", t + 112, t + 118, c + 1, kEventNestedCall);
    Add(p, tid, EventType::kPop, "", t + 300);
    Add(p, tid, EventType::kPush, "attention", t + 400);
    Add(p, tid, EventType::kRuntime, "cudaGraphLaunch", t + 410, t + 420, c + 2);
    Add(p, tid, EventType::kPop, "", t + 500);
    Add(p, tid, EventType::kPush, "teller.comm op=all_reduce", t + 600);
    Add(p, tid, EventType::kRuntime, "ncclAllReduce", t + 610, t + 620, c + 3);
    Add(p, tid, EventType::kPop, "", t + 700);
    Add(p, tid, EventType::kPop, "", t + 1000);
    Add(p, 7, EventType::kKernel, "gemm", t + 130, t + 200, c + 1);
    Add(p, 7, EventType::kKernel, "k1", t + 430, t + 440, c + 2);
    Add(p, 7, EventType::kKernel, "k2", t + 440, t + 450, c + 2);
    Add(p, 7, EventType::kKernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", t + 630, t + 690,
        c + 3);
  }
  void Log(int64_t ts, std::string_view request, std::string_view message) {
    auto& l = trace_.logs;
    l.ts_ns.push_back(ts);
    l.request.push_back(request.empty() ? 0 : trace_.strings.Intern(request));
    l.level.push_back(LogLevel::kInfo);
    l.process.push_back(LogTable::kNoProcess);
    l.file.push_back(0);
    l.line.push_back(static_cast<uint32_t>(l.ts_ns.size()));
    l.message.push_back(trace_.strings.Intern(message));
  }
  Trace trace_;
};

NodeLocator Range(const char* host, int64_t pid, uint32_t tid, const char* name, uint32_t k) {
  NodeLocator n;
  n.kind = NodeLocator::Kind::kRange;
  n.host = host;
  n.pid = pid;
  n.tid = tid;
  n.name = name;
  n.occurrence = k;
  return n;
}
NodeLocator Call(const char* host, int64_t pid, uint64_t corr) {
  NodeLocator n;
  n.kind = NodeLocator::Kind::kCall;
  n.host = host;
  n.pid = pid;
  n.correlation = corr;
  return n;
}
NodeLocator Gpu(const char* host, int64_t pid, uint64_t corr, uint32_t k) {
  NodeLocator n = Call(host, pid, corr);
  n.kind = NodeLocator::Kind::kGpu;
  n.occurrence = k;
  return n;
}

format::GroundTruth Truth() {
  format::GroundTruth t;
  t.setting = "synthetic";
  format::FaultRecord f;
  f.id = 0;
  f.mechanism = "straggler_rank";
  f.category = "communication";
  t.faults = {f};
  format::RequestTruth a;
  a.id = "a";
  a.is_fault = true;
  a.fault_type = "communication";
  a.mechanism = "straggler_rank";
  a.fault = 0;
  a.steps = {5};
  format::RequestTruth b;
  b.id = "b";
  b.steps = {5, 6};
  format::RequestTruth c;
  c.id = "c";
  c.steps = {6};
  t.requests = {a, b, c};
  format::StepTruth s5;
  s5.seq = 5;
  s5.requests = {"a", "b"};
  s5.fault = 0;
  s5.affected_requests = {"a"};  // b shares the step but is not affected
  s5.vertical.is_anomaly = true;
  s5.vertical.nodes = {Range("node-0", 100, 100, "attention", 1), Call("node-0", 100, 51),
                       Gpu("node-0", 100, 52, 1)};
  s5.horizontal.is_anomaly = true;
  s5.horizontal.nodes = {Range("node-1", 200, 200, "teller.comm op=all_reduce", 0),
                         Gpu("node-1", 200, 153, 0)};
  s5.explanation = "rank 1 waited in all_reduce";
  format::StepTruth s6;
  s6.seq = 6;
  s6.requests = {"b", "c"};
  t.steps = {s5, s6};
  return t;
}

class DatasetBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller-ds-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  simdjson::dom::element Json(const std::string& path) {
    docs_.emplace_back(simdjson::padded_string(ReadText(path)));
    parsers_.emplace_back();
    simdjson::dom::element e;
    const auto err = parsers_.back().parse(docs_.back()).get(e);
    EXPECT_EQ(err, simdjson::SUCCESS) << path;
    return e;
  }
  std::vector<uint64_t> Ids(simdjson::dom::element view) {
    std::vector<uint64_t> ids;
    for (auto v : view["affected_nodes"].get_array()) ids.push_back(v.get_uint64().value());
    return ids;
  }

  std::string dir_;
  std::list<simdjson::padded_string> docs_;
  std::list<simdjson::dom::parser> parsers_;
};

TEST_F(DatasetBuildTest, ResolvesLocatorsInTableOrderPerThread) {
  SyntheticTrace s;
  const Trace& t = s.trace();
  const std::vector<NodeLocator> locators = {
      Range("node-0", 100, 100, "attention", 1),  // 0: second attention of thread 100
      Range("node-0", 100, 101, "attention", 0),  // 1: the other thread's
      Range("node-0", 100, 100, "attention", 4),  // 2: only 4 on that thread
      Call("node-0", 100, 51),                    // 3: the runtime call, not the nested driver call
      Gpu("node-0", 100, 52, 1),                  // 4: second kernel of the graph launch
      Gpu("node-0", 100, 52, 2),                  // 5: there are two
      Call("node-1", 100, 51),                    // 6: wrong host for that pid
      Range("node-0", 100, 100, "no such name", 0),  // 7
      Call("node-1", 200, 163),                      // 8: rank 1, seq 6, the collective
  };
  std::vector<const NodeLocator*> ptrs;
  for (const auto& n : locators) ptrs.push_back(&n);
  const std::vector<int64_t> rows = ResolveLocators(t, ptrs);
  ASSERT_EQ(rows.size(), locators.size());
  auto name = [&](int64_t row) { return std::string(t.strings.Get(t.events.name[row])); };
  // Thread 100's attention ranges are at rows 4 and 8 (rows 0-1 are thread 101's range).
  ASSERT_GE(rows[0], 0);
  EXPECT_EQ(name(rows[0]), "attention");
  EXPECT_EQ(t.events.thread[rows[0]], 100u);
  EXPECT_EQ(t.events.start_ns[rows[0]], 1400);
  EXPECT_EQ(rows[1], 0);
  EXPECT_EQ(rows[2], -1);
  ASSERT_GE(rows[3], 0);
  EXPECT_EQ(t.events.type[rows[3]], EventType::kRuntime);
  EXPECT_EQ(name(rows[3]), "cudaLaunchKernel");
  ASSERT_GE(rows[4], 0);
  EXPECT_EQ(name(rows[4]), "k2");
  EXPECT_EQ(rows[5], -1);
  EXPECT_EQ(rows[6], -1);
  EXPECT_EQ(rows[7], -1);
  ASSERT_GE(rows[8], 0);
  EXPECT_EQ(t.events.process[rows[8]], s.p1_);
  EXPECT_EQ(name(rows[8]), "ncclAllReduce");
  EXPECT_EQ(t.events.start_ns[rows[8]], 3610);
}

TEST_F(DatasetBuildTest, StepRecordsAcrossRanksWithLabels) {
  SyntheticTrace s;
  BuildOptions options;
  auto summary = BuildSetting(s.trace(), Truth(), "synthetic", dir_, options);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->requests, 3u);
  EXPECT_EQ(summary->faulty, 1u);
  EXPECT_EQ(summary->steps, 4u);  // (a,5) (b,5) (b,6) (c,6)
  EXPECT_EQ(summary->anomalous_steps, 1u);
  EXPECT_EQ(summary->Counter("locators"), 5u);
  EXPECT_EQ(summary->Counter("locators_unresolved"), 0u);
  EXPECT_EQ(summary->Counter("locators_outside_step"), 0u);
  EXPECT_EQ(summary->Counter("steps_without_seq"), 0u);
  EXPECT_EQ(summary->Counter("faulty_requests_without_anomalous_step"), 0u);
  EXPECT_EQ(summary->Counter("healthy_requests_with_anomalous_step"), 0u);
  EXPECT_EQ(summary->fault_mix.at("communication"), 1u);

  const std::string root = dir_ + "/synthetic";
  auto trace_a = Json(root + "/a/trace.json.gz");
  EXPECT_EQ(std::string_view(trace_a["format"]), "teller-dataset-trace");
  EXPECT_TRUE(bool(trace_a["is_fault"]));
  EXPECT_EQ(std::string_view(trace_a["fault_type"]), "communication");
  auto steps = trace_a["steps"].get_array();
  ASSERT_EQ(steps.size(), 1u);
  auto step = steps.at(0);
  EXPECT_EQ(uint64_t(step["seq"]), 5u);
  EXPECT_EQ(int64_t(step["start_ns"]), 1000);
  auto ranks = step["ranks"].get_array();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(int64_t(ranks.at(0)["rank"]), 0);
  EXPECT_EQ(int64_t(ranks.at(0)["node"]), 0);
  EXPECT_EQ(int64_t(ranks.at(1)["rank"]), 1);
  EXPECT_EQ(int64_t(ranks.at(1)["node"]), 12);  // rank 0 has 12 nodes (with the driver call)
  auto nodes = step["nodes"].get_array();
  ASSERT_EQ(nodes.size(), 23u);
  std::vector<std::string> names;
  std::vector<int64_t> node_rank;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto n = nodes.at(i);
    EXPECT_EQ(uint64_t(n["id"]), i);
    const int64_t parent = n["parent"];
    EXPECT_LT(parent, static_cast<int64_t>(i));
    if (i == 0 || i == 12) {
      EXPECT_EQ(parent, -1);
      EXPECT_EQ(std::string_view(n["layer"]), "STEP");
    } else {
      EXPECT_GE(parent, 0);
    }
    names.emplace_back(std::string_view(n["name"]));
    node_rank.push_back(n["rank"]);
  }
  EXPECT_EQ(names[3], "cuLaunchKernel");
  EXPECT_EQ(node_rank[11], 0);
  EXPECT_EQ(node_rank[12], 1);
  {
    // The same nodes through the schema's reader.
    const simdjson::padded_string text(ReadText(root + "/a/trace.json.gz"));
    simdjson::ondemand::parser od_parser;
    simdjson::ondemand::document doc;
    ASSERT_EQ(od_parser.iterate(text).get(doc), simdjson::SUCCESS);
    const JsonContext ctx(root + "/a/trace.json.gz", text, doc);
    simdjson::ondemand::array od_steps, od_nodes;
    ASSERT_EQ(doc["steps"].get_array().get(od_steps), simdjson::SUCCESS);
    for (auto od_step : od_steps) {
      ASSERT_EQ(od_step["nodes"].get_array().get(od_nodes), simdjson::SUCCESS);
      size_t i = 0;
      for (auto element : od_nodes) {
        simdjson::ondemand::value v;
        ASSERT_EQ(element.get(v), simdjson::SUCCESS);
        format::DatasetNode node;
        std::string name;
        const Status read = format::ReadDatasetNode(ctx, v, "nodes", &node, &name);
        ASSERT_TRUE(read.ok()) << read.message();
        ASSERT_LT(i, names.size());
        EXPECT_EQ(node.id, static_cast<int64_t>(i));
        EXPECT_EQ(name, names[i]);
        EXPECT_TRUE(node.has_rank);
        EXPECT_EQ(node.rank, node_rank[i]);
        ++i;
      }
      EXPECT_EQ(i, names.size());
      break;  // the one step
    }
  }

  // a's step: exactly the labelled nodes.
  auto ann_a = Json(root + "/a/annotation.json");
  EXPECT_EQ(uint64_t(ann_a["version"]), 2u);
  EXPECT_EQ(std::string_view(ann_a["mechanism"]), "straggler_rank");
  auto a0 = ann_a["steps"].get_array().at(0);
  EXPECT_TRUE(bool(a0["is_anomaly"]));
  EXPECT_EQ(std::string_view(a0["fault_type"]), "communication");
  EXPECT_EQ(std::string_view(a0["explanation"]), "rank 1 waited in all_reduce");
  const std::vector<uint64_t> vertical = Ids(a0["vertical"]), horizontal = Ids(a0["horizontal"]);
  EXPECT_EQ(vertical, (std::vector<uint64_t>{2, 5, 8}));
  EXPECT_EQ(horizontal, (std::vector<uint64_t>{20, 22}));
  EXPECT_EQ(names[2], "cudaLaunchKernel");  // the outer call, not the nested driver call
  EXPECT_EQ(names[5], "attention");
  EXPECT_EQ(names[8], "k2");
  EXPECT_EQ(names[20], "teller.comm op=all_reduce");
  EXPECT_EQ(node_rank[20], 1);
  EXPECT_EQ(names[22], "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");

  // b shares step 5 but is not affected: both views normal and empty; c is healthy.
  for (const char* q : {"b", "c"}) {
    auto ann = Json(root + "/" + q + "/annotation.json");
    EXPECT_FALSE(bool(ann["is_fault"])) << q;
    EXPECT_TRUE(ann["fault_type"].is_null()) << q;
    for (auto st : ann["steps"].get_array()) {
      EXPECT_FALSE(bool(st["is_anomaly"])) << q;
      EXPECT_TRUE(st["fault_type"].is_null()) << q;
      EXPECT_FALSE(bool(st["vertical"]["is_anomaly"])) << q;
      EXPECT_TRUE(Ids(st["vertical"]).empty()) << q;
      EXPECT_TRUE(Ids(st["horizontal"]).empty()) << q;
      EXPECT_EQ(std::string_view(st["explanation"]), "") << q;
    }
  }
  EXPECT_EQ(Json(root + "/b/annotation.json")["steps"].get_array().size(), 2u);

  // log.txt: a's own line and the unnamed one (once, though both ranks' steps hold it),
  // not b's.
  // Each line carries its template id in the setting's templates.txt: rows are mined once,
  // when first written (seq 5 writes a's lines, then b's), so the unnamed line is template
  // 0 and a's line starts template 1; b's line leads with other tokens ("request b"), so
  // the miner's tree (routed by the first two tokens) gives it a template of its own, 2.
  const std::string log_a = ReadText(root + "/a/log.txt");
  EXPECT_EQ(log_a,
            "1050 step=0 template=0 scope=batch INFO engine line without a request\n"
            "1500 step=0 template=1 scope=request INFO request a did something\n");
  const std::string log_b = ReadText(root + "/b/log.txt");
  EXPECT_EQ(log_b.substr(0, log_b.find("\n1050 step=1")),
            "1050 step=0 template=0 scope=batch INFO engine line without a request\n"
            "1500 step=0 template=2 scope=request INFO request b did something");
  {
    auto miner = logs::TemplateMiner::Load(root + "/templates.txt");
    ASSERT_TRUE(miner.ok()) << miner.status().message();
    ASSERT_EQ(miner->size(), 3u);
    EXPECT_EQ(miner->Text(0), "engine line without a request");
    EXPECT_EQ(miner->Text(1), "request a did something");
    EXPECT_EQ(miner->Text(2), "request b did something");
    // Rows count once, though the unnamed line is in both requests' log.txt.
    EXPECT_EQ(miner->Count(0), 1u);
    EXPECT_EQ(miner->Count(1), 1u);
    EXPECT_EQ(miner->Count(2), 1u);
  }

  // steps.jsonl: one line per (request, step); columns agree with trace.json.
  std::istringstream lines(ReadText(root + "/steps.jsonl"));
  auto names_json = Json(root + "/names.json");
  auto name_table = names_json["names"].get_array();
  std::string line;
  std::vector<std::string> seen;
  while (std::getline(lines, line)) {
    simdjson::dom::parser p;
    simdjson::dom::element e;
    ASSERT_EQ(p.parse(line).get(e), simdjson::SUCCESS) << line;
    const std::string request{std::string_view(e["request"])};
    seen.push_back(request + "@" + std::to_string(uint64_t(e["seq"])));
    const uint64_t n = e["n"];
    // The columns as every reader reads them: all of n entries, names inside names.json,
    // parents before their nodes.
    format::DatasetColumns columns;
    {
      const simdjson::padded_string padded(line);
      simdjson::ondemand::parser od_parser;
      simdjson::ondemand::document doc;
      ASSERT_EQ(od_parser.iterate(padded).get(doc), simdjson::SUCCESS);
      const Status read = format::ReadDatasetColumns(JsonContext("steps.jsonl", padded, doc), doc,
                                                     name_table.size(), &columns);
      ASSERT_TRUE(read.ok()) << read.message();
    }
    EXPECT_EQ(columns.size(), n);
    EXPECT_EQ(bool(e["is_anomaly"]), request == "a");
    if (request == "a") {
      EXPECT_EQ(n, 23u);
      // Names resolve through names.json; type tags: STEP 0, RT 4, DRV 5, K 6, COMM 3.
      const std::vector<uint8_t>& type = columns.type;
      const std::vector<uint32_t>& name = columns.name;
      EXPECT_EQ(columns.parent[12], -1) << "rank 1's step is a root";
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(std::string_view(name_table.at(name[i])), names[i]) << i;
      EXPECT_EQ(type[0], 0u);
      EXPECT_EQ(type[2], 4u);
      EXPECT_EQ(type[3], 5u);
      EXPECT_EQ(type[4], 6u);
      EXPECT_EQ(type[9], 3u);
      EXPECT_EQ(Ids(e["horizontal"]), horizontal);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"a@5", "b@5", "b@6", "c@6"}));
}

// Ground truth version 3 roles become each view's root_nodes in annotation.json and
// steps.jsonl. The local ids of Truth()'s locators are those of
// StepRecordsAcrossRanksWithLabels: vertical attention range 5, launch call 2, kernel k2
// 8; horizontal all_reduce range 20, NCCL kernel 22. Roles given: vertical call and
// kernel root, range impact -> root_nodes [2, 8]; horizontal range impact, the kernel
// named twice, impact then root -> root_nodes [22] (either locator's root counts).
// A view with one locator of unknown role gets no root_nodes (roles unknown), nor do
// requests whose views have no nodes.
TEST_F(DatasetBuildTest, RolesBecomeRootNodes) {
  using Role = NodeLocator::Role;
  for (bool all_known : {true, false}) {
    SCOPED_TRACE(all_known ? "every role known" : "one role unknown");
    SyntheticTrace s;
    format::GroundTruth truth = Truth();
    format::StepTruth& s5 = truth.steps[0];
    s5.vertical.nodes[0].role = Role::kImpact;
    s5.vertical.nodes[1].role = Role::kRoot;
    s5.vertical.nodes[2].role = all_known ? Role::kRoot : Role::kUnknown;
    s5.horizontal.nodes[0].role = Role::kImpact;
    s5.horizontal.nodes[1].role = Role::kImpact;
    s5.horizontal.nodes.push_back(s5.horizontal.nodes[1]);
    s5.horizontal.nodes[2].role = Role::kRoot;
    const std::string out = dir_ + (all_known ? "/known" : "/unknown");
    auto summary = BuildSetting(s.trace(), truth, "synthetic", out, BuildOptions{});
    ASSERT_TRUE(summary.ok()) << summary.status().message();
    const std::string root = out + "/synthetic";
    auto roots = [](simdjson::dom::element view) {
      std::vector<uint64_t> ids;
      simdjson::dom::array list;
      if (view["root_nodes"].get_array().get(list) != simdjson::SUCCESS) return ids;
      for (auto v : list) ids.push_back(v.get_uint64().value());
      return ids;
    };
    auto has_roots = [](simdjson::dom::element view) {
      return view["root_nodes"].error() == simdjson::SUCCESS;
    };
    auto a0 = Json(root + "/a/annotation.json")["steps"].get_array().at(0);
    EXPECT_EQ(Ids(a0["vertical"]), (std::vector<uint64_t>{2, 5, 8}));
    EXPECT_EQ(Ids(a0["horizontal"]), (std::vector<uint64_t>{20, 22}));
    EXPECT_EQ(has_roots(a0["vertical"]), all_known);
    if (all_known) EXPECT_EQ(roots(a0["vertical"]), (std::vector<uint64_t>{2, 8}));
    EXPECT_TRUE(has_roots(a0["horizontal"]));
    EXPECT_EQ(roots(a0["horizontal"]), std::vector<uint64_t>{22});
    // b shares step 5 without being affected: no nodes, no roots.
    auto b0 = Json(root + "/b/annotation.json")["steps"].get_array().at(0);
    EXPECT_FALSE(has_roots(b0["vertical"]));
    EXPECT_FALSE(has_roots(b0["horizontal"]));
    // steps.jsonl carries the same.
    std::istringstream lines(ReadText(root + "/steps.jsonl"));
    std::string line;
    int checked = 0;
    while (std::getline(lines, line)) {
      simdjson::dom::parser p;
      simdjson::dom::element e;
      ASSERT_EQ(p.parse(line).get(e), simdjson::SUCCESS);
      const bool is_a = std::string_view(e["request"]) == "a";
      EXPECT_EQ(has_roots(e["vertical"]), is_a && all_known);
      EXPECT_EQ(has_roots(e["horizontal"]), is_a);
      if (is_a) {
        if (all_known) EXPECT_EQ(roots(e["vertical"]), (std::vector<uint64_t>{2, 8}));
        EXPECT_EQ(roots(e["horizontal"]), std::vector<uint64_t>{22});
      }
      ++checked;
    }
    EXPECT_EQ(checked, 4);
  }
}

// Locators are resolved before reconstruction, whose clock alignment then moves node-1's
// events by its offset: rows must keep their order so that the labels still hold.
TEST_F(DatasetBuildTest, ExportWritesTemplateIdsOfItsTemplatesFile) {
  SyntheticTrace s;
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(s.trace());
  ExportOptions options;
  options.setting = "exported";
  auto exported = ExportDataset(s.trace(), r, dir_, options);
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  auto miner = logs::TemplateMiner::Load(dir_ + "/exported/templates.txt");
  ASSERT_TRUE(miner.ok()) << miner.status().message();
  size_t lines = 0;
  for (const char* q : {"a", "b", "c"}) {
    std::istringstream in(ReadText(dir_ + "/exported/" + q + "/log.txt"));
    std::string text;
    while (std::getline(in, text)) {
      DatasetLogLine line;
      ASSERT_TRUE(ParseDatasetLogLine(text, &line).ok()) << text;
      ++lines;
      // The id is the template the reloaded miner puts the message in.
      EXPECT_EQ(miner->Match(line.message), line.template_id) << text;
      // L_q(s): the request's own lines and lines naming none, never another's.
      const std::string own = std::string("request ") + q + " did something";
      if (line.message == "engine line without a request") {
        EXPECT_FALSE(line.names_request) << text;
      } else {
        EXPECT_EQ(line.message, own) << q;
        EXPECT_TRUE(line.names_request) << text;
      }
    }
  }
  EXPECT_EQ(lines, exported->log_lines);
  EXPECT_GE(lines, 3u);  // a's and b's lines and at least one copy of the unnamed one
}

TEST_F(DatasetBuildTest, ClockAlignmentMovesTimesNotRows) {
  const int64_t offset = 1'000'000;
  SyntheticTrace s(offset, /*third_step=*/true);
  const std::vector<EventType> types = s.trace().events.type;
  const std::vector<StringId> names = s.trace().events.name;
  const std::vector<int64_t> starts = s.trace().events.start_ns;
  format::GroundTruth truth = Truth();
  truth.requests[2].steps = {6, 7};
  format::StepTruth s7;
  s7.seq = 7;
  s7.requests = {"c"};
  truth.steps.push_back(s7);
  auto built = BuildSetting(s.trace(), truth, "aligned", dir_, BuildOptions{});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Trace& t = s.trace();
  EXPECT_EQ(t.events.type, types);
  EXPECT_EQ(t.events.name, names);
  EXPECT_EQ(t.processes[s.p1_].clock_offset_ns, -offset);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t shift = t.events.process[i] == s.p1_ ? -offset : 0;
    ASSERT_EQ(t.events.start_ns[i], starts[i] + shift) << i;
  }
  EXPECT_EQ(built->Counter("locators_unresolved"), 0u);
  auto trace_a = Json(dir_ + "/aligned/a/trace.json.gz");
  auto step = trace_a["steps"].get_array().at(0);
  EXPECT_EQ(int64_t(step["start_ns"]), 1000);
  EXPECT_EQ(int64_t(step["end_ns"]), 2000);  // both ranks on one clock
  auto a0 = Json(dir_ + "/aligned/a/annotation.json")["steps"].get_array().at(0);
  EXPECT_EQ(Ids(a0["vertical"]), (std::vector<uint64_t>{2, 5, 8}));
  EXPECT_EQ(Ids(a0["horizontal"]), (std::vector<uint64_t>{20, 22}));
}

TEST_F(DatasetBuildTest, UnresolvableLocatorsFailTheBuildAboveTheLimit) {
  SyntheticTrace s;
  format::GroundTruth truth = Truth();
  truth.steps[0].vertical.nodes.push_back(Gpu("node-0", 100, 999, 0));  // 1 of 6
  auto failed = BuildSetting(s.trace(), truth, "synthetic", dir_, BuildOptions{});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("1 of 6 ground-truth node locators"), std::string::npos)
      << failed.status().message();
  EXPECT_NE(failed.status().message().find("gpu node-0/100 correlation 999 #0"), std::string::npos)
      << failed.status().message();

  // Under a looser limit it is built, counted, and the other labels stay.
  BuildOptions loose;
  loose.max_unresolved_fraction = 0.5;
  SyntheticTrace s2;
  auto built = BuildSetting(s2.trace(), truth, "synthetic", dir_, loose);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->Counter("locators_unresolved"), 1u);
  auto ann = Json(dir_ + "/synthetic/a/annotation.json");
  EXPECT_EQ(Ids(ann["steps"].get_array().at(0)["vertical"]), (std::vector<uint64_t>{2, 5, 8}));

  // The setting directory now exists: building into it again is refused.
  SyntheticTrace s3;
  auto again = BuildSetting(s3.trace(), truth, "synthetic", dir_, loose);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
}

TEST_F(DatasetBuildTest, LabelsOutsideTheStepAndTruncationAreCounted) {
  SyntheticTrace s;
  format::GroundTruth truth = Truth();
  // The other thread's attention range is in no STEP subtree.
  truth.steps[0].vertical.nodes.push_back(Range("node-0", 100, 101, "attention", 0));
  BuildOptions options;
  options.max_nodes_per_step = 10;  // keeps rank 0's ids 0..9 (k2 is 8), none of rank 1
  auto built = BuildSetting(s.trace(), truth, "synthetic", dir_, options);
  ASSERT_TRUE(built.ok()) << built.status().message();
  // Outside: the thread-101 range, and rank 1's two horizontal nodes (cut away).
  EXPECT_EQ(built->Counter("locators_outside_step"), 3u);
  EXPECT_EQ(built->Counter("truncated_steps"), 2u);  // seq 5 and seq 6 records
  auto trace_a = Json(dir_ + "/synthetic/a/trace.json.gz");
  auto step = trace_a["steps"].get_array().at(0);
  EXPECT_TRUE(bool(step["truncated"]));
  EXPECT_EQ(step["nodes"].get_array().size(), 10u);
  EXPECT_EQ(int64_t(step["ranks"].get_array().at(1)["node"]), -1);
  auto ann = Json(dir_ + "/synthetic/a/annotation.json");
  auto a0 = ann["steps"].get_array().at(0);
  EXPECT_EQ(Ids(a0["vertical"]), (std::vector<uint64_t>{2, 5, 8}));
  EXPECT_TRUE(Ids(a0["horizontal"]).empty());
}

TEST_F(DatasetBuildTest, StatsFromIndexAndRecount) {
  // Without index.json the numbers are recounted from the request files.
  {
    SyntheticTrace s;
    auto built = BuildSetting(s.trace(), Truth(), "one", dir_, BuildOptions{});
    ASSERT_TRUE(built.ok()) << built.status().message();
  }
  auto recount = ReadDatasetStats(dir_);  // no index.json yet
  ASSERT_TRUE(recount.ok()) << recount.status().message();
  EXPECT_FALSE(recount->from_index);
  ASSERT_EQ(recount->settings.size(), 1u);
  EXPECT_EQ(recount->settings[0].name, "one");
  EXPECT_EQ(recount->settings[0].requests, 3u);
  EXPECT_EQ(recount->settings[0].faulty, 1u);
  EXPECT_EQ(recount->settings[0].steps, 4u);
  EXPECT_EQ(recount->settings[0].nodes, 23u * 2 + 22u * 2);  // a@5, b@5, b@6, c@6
  EXPECT_DOUBLE_EQ(recount->fault_mix.at("communication"), 1.0);
  EXPECT_DOUBLE_EQ(recount->fault_mix.at("cuda_kernel"), 0.0);
  EXPECT_EQ(recount->fault_mix.size(), 5u);

  auto bad = ReadDatasetStats(dir_ + "/one/a");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a Teller dataset"), std::string::npos)
      << bad.status().message();
  auto none = ReadDatasetStats(dir_ + "/nothing");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(dir_ + "/nothing"), std::string::npos);

  const std::string json = DatasetStatsJson(recount.value());
  simdjson::dom::parser p;
  simdjson::dom::element e;
  ASSERT_EQ(p.parse(json).get(e), simdjson::SUCCESS) << json;
  EXPECT_EQ(uint64_t(e["total"]["nodes"]), recount->settings[0].nodes);
  EXPECT_EQ(std::string_view(e["settings"].get_array().at(0)["name"]), "one");
  EXPECT_DOUBLE_EQ(double(e["fault_mix"]["communication"]), 1.0);
  const std::string table = DatasetStatsTable(recount.value());
  EXPECT_NE(table.find("total"), std::string::npos);
  EXPECT_NE(table.find("communication"), std::string::npos);
}

}  // namespace
}  // namespace teller::dataset
