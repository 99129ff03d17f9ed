// ground_truth.json reader (src/format/ground_truth_reader.cc): round trip with the
// simulator's writer, and errors that name the file, the field and the byte offset.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "teller/format/ground_truth.h"

namespace teller::format {
namespace {

class GroundTruthReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller-gt-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string Write(const std::string& text) {
    const std::string path = dir_ + "/ground_truth.json";
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // Reads `text` and returns the error message ("" when it parsed).
  std::string ErrorOf(const std::string& text) {
    auto r = ReadGroundTruth(Write(text));
    return r.ok() ? std::string() : r.status().message();
  }

  std::string dir_;
};

NodeLocator Range(std::string host, int64_t pid, uint32_t tid, std::string name, uint32_t k) {
  NodeLocator n;
  n.kind = NodeLocator::Kind::kRange;
  n.host = std::move(host);
  n.pid = pid;
  n.tid = tid;
  n.name = std::move(name);
  n.occurrence = k;
  return n;
}
NodeLocator Call(std::string host, int64_t pid, uint64_t corr) {
  NodeLocator n;
  n.kind = NodeLocator::Kind::kCall;
  n.host = std::move(host);
  n.pid = pid;
  n.correlation = corr;
  return n;
}
NodeLocator Gpu(std::string host, int64_t pid, uint64_t corr, uint32_t k) {
  NodeLocator n = Call(std::move(host), pid, corr);
  n.kind = NodeLocator::Kind::kGpu;
  n.occurrence = k;
  return n;
}

GroundTruth Sample() {
  GroundTruth t;
  t.setting = "vllm-v1-online";
  t.profile = "vllm-v1-online";
  t.seed = 18446744073709551615ull;  // the full uint64 range survives
  t.nodes = 2;
  t.gpus_per_node = 3;
  t.tp = 3;
  t.pp = 2;
  t.processes = {{"node-0", 41000, 0, 0, 0}, {"node-1", 41003, 3, 0, 1}};
  FaultRecord f;
  f.id = 0;
  f.mechanism = "straggler_rank";
  f.category = "communication";
  f.onset_ns = 1795940421182842280;
  f.duration_ns = 2'000'000'000;
  f.magnitude = 3.5;
  f.target = "rank 4";
  f.description = "rank 4 \"arrives\" late\n\tat collectives \xC3\xA9";
  f.ranks = {4};
  t.faults.push_back(f);
  FaultRecord g;  // acts on every rank: no culprit rank
  g.id = 1;
  g.mechanism = "kernel_throttle";
  g.category = "cuda_kernel";
  t.faults.push_back(g);
  RequestTruth bad;
  bad.id = "chatcmpl-a,1 %";
  bad.is_fault = true;
  bad.fault_type = "communication";
  bad.mechanism = "straggler_rank";
  bad.fault = 0;
  bad.steps = {12, 13, 14};
  RequestTruth good;
  good.id = "chatcmpl-b";
  good.steps = {13};
  t.requests = {bad, good};
  StepTruth s12;
  s12.seq = 12;
  s12.kind = "prefill";
  s12.start_ns = 1795940421182842280;
  s12.end_ns = 1795940421183842280;
  s12.requests = {"chatcmpl-a,1 %"};
  s12.fault = 0;
  s12.affected_requests = {"chatcmpl-a,1 %"};
  s12.vertical.is_anomaly = false;
  s12.horizontal.is_anomaly = true;
  s12.horizontal.nodes = {Range("node-1", 41003, 41007, "teller.comm op=all_reduce", 3),
                          Call("node-1", 41003, 812), Gpu("node-1", 41003, 812, 17)};
  // Version 3 roles: the range waited (impact), the call was inflated (root); the GPU
  // record's role is left unknown, which a writer may do.
  s12.horizontal.nodes[0].role = NodeLocator::Role::kImpact;
  s12.horizontal.nodes[1].role = NodeLocator::Role::kRoot;
  s12.explanation = "rank 4 waited 3.1 ms in all_reduce";
  StepTruth s13;
  s13.seq = 13;
  s13.kind = "decode";
  s13.requests = {"chatcmpl-a,1 %", "chatcmpl-b"};
  t.steps = {s12, s13};
  return t;
}

void ExpectSameLocator(const NodeLocator& a, const NodeLocator& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.tid, b.tid);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.correlation, b.correlation);
  EXPECT_EQ(a.occurrence, b.occurrence);
  EXPECT_EQ(a.role, b.role);
}

TEST_F(GroundTruthReaderTest, RoundTripsWhatTheSimulatorWrites) {
  const GroundTruth t = Sample();
  const std::string json = GroundTruthToJson(t);
  auto r = ReadGroundTruth(Write(json));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GroundTruth& u = r.value();
  EXPECT_EQ(u.setting, t.setting);
  EXPECT_EQ(u.profile, t.profile);
  EXPECT_EQ(u.seed, t.seed);
  EXPECT_EQ(u.nodes, 2);
  EXPECT_EQ(u.gpus_per_node, 3);
  EXPECT_EQ(u.tp, 3);
  EXPECT_EQ(u.pp, 2);
  ASSERT_EQ(u.processes.size(), 2u);
  EXPECT_EQ(u.processes[1].host, "node-1");
  EXPECT_EQ(u.processes[1].pid, 41003);
  EXPECT_EQ(u.processes[1].rank, 3);
  EXPECT_EQ(u.processes[1].pp_rank, 1);
  ASSERT_EQ(u.faults.size(), 2u);
  EXPECT_EQ(u.faults[0].ranks, std::vector<int>{4});
  EXPECT_TRUE(u.faults[1].ranks.empty());
  EXPECT_EQ(u.faults[0].mechanism, "straggler_rank");
  EXPECT_EQ(u.faults[0].category, "communication");
  EXPECT_EQ(u.faults[0].onset_ns, 1795940421182842280);
  EXPECT_EQ(u.faults[0].duration_ns, 2'000'000'000);
  EXPECT_DOUBLE_EQ(u.faults[0].magnitude, 3.5);
  EXPECT_EQ(u.faults[0].description, t.faults[0].description);
  ASSERT_EQ(u.requests.size(), 2u);
  EXPECT_EQ(u.requests[0].id, "chatcmpl-a,1 %");
  EXPECT_TRUE(u.requests[0].is_fault);
  EXPECT_EQ(u.requests[0].fault, 0);
  EXPECT_EQ(u.requests[0].steps, (std::vector<uint64_t>{12, 13, 14}));
  EXPECT_FALSE(u.requests[1].is_fault);
  EXPECT_EQ(u.requests[1].fault, -1);
  EXPECT_EQ(u.requests[1].fault_type, "");
  ASSERT_EQ(u.steps.size(), 2u);
  EXPECT_EQ(u.steps[0].seq, 12u);
  EXPECT_EQ(u.steps[0].kind, "prefill");
  EXPECT_EQ(u.steps[0].end_ns, 1795940421183842280);
  EXPECT_EQ(u.steps[0].affected_requests, t.steps[0].affected_requests);
  EXPECT_FALSE(u.steps[0].vertical.is_anomaly);
  EXPECT_TRUE(u.steps[0].horizontal.is_anomaly);
  ASSERT_EQ(u.steps[0].horizontal.nodes.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    ExpectSameLocator(u.steps[0].horizontal.nodes[i], t.steps[0].horizontal.nodes[i]);
  // The roles as written: "root":false, "root":true, and no key for the unknown one.
  EXPECT_EQ(u.steps[0].horizontal.nodes[0].role, NodeLocator::Role::kImpact);
  EXPECT_EQ(u.steps[0].horizontal.nodes[1].role, NodeLocator::Role::kRoot);
  EXPECT_EQ(u.steps[0].horizontal.nodes[2].role, NodeLocator::Role::kUnknown);
  EXPECT_NE(json.find("\"occurrence\":3,\"root\":false}"), std::string::npos);
  EXPECT_NE(json.find("\"correlation\":812,\"root\":true}"), std::string::npos);
  EXPECT_NE(json.find("\"occurrence\":17}"), std::string::npos);
  EXPECT_NE(json.find("\"version\":3,"), std::string::npos);
  EXPECT_EQ(u.steps[0].explanation, t.steps[0].explanation);
  EXPECT_EQ(u.steps[1].fault, -1);
  EXPECT_TRUE(u.steps[1].affected_requests.empty());
  // Byte-exact: reading and writing again gives the same file.
  EXPECT_EQ(GroundTruthToJson(u), json);
}

TEST_F(GroundTruthReaderTest, ConfoundersRoundTripAndAreOptional) {
  GroundTruth t = Sample();
  const std::string without = GroundTruthToJson(t);
  EXPECT_EQ(without.find("\"confounders\""), std::string::npos);  // none: the old bytes
  auto plain = ReadGroundTruth(Write(without));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_TRUE(plain->confounders.empty());
  ConfounderRecord gc;
  gc.kind = "gc_pause";
  gc.time_ns = 1795940421182842280;
  gc.steps = {13};
  gc.detail = "4.1 ms on rank 2";
  ConfounderRecord burst;
  burst.kind = "preemption_burst";
  burst.time_ns = 1795940421282842280;
  burst.steps = {12, 14};
  burst.requests = {"chatcmpl-a,1 %"};
  burst.detail = "1 requests preempted and recomputed";
  t.confounders = {gc, burst};
  const std::string json = GroundTruthToJson(t);
  auto r = ReadGroundTruth(Write(json));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->confounders.size(), 2u);
  EXPECT_EQ(r->confounders[0].kind, "gc_pause");
  EXPECT_EQ(r->confounders[0].time_ns, gc.time_ns);
  EXPECT_EQ(r->confounders[0].steps, std::vector<uint64_t>{13});
  EXPECT_TRUE(r->confounders[0].requests.empty());
  EXPECT_EQ(r->confounders[0].detail, gc.detail);
  EXPECT_EQ(r->confounders[1].steps, (std::vector<uint64_t>{12, 14}));
  EXPECT_EQ(r->confounders[1].requests, burst.requests);
  EXPECT_EQ(GroundTruthToJson(r.value()), json);
  // Confounders leave the version as it is; a confounder without its kind is refused by
  // name.
  EXPECT_NE(json.find("\"version\":3"), std::string::npos);
  std::string bad = json;
  bad.replace(bad.find("\"kind\":\"gc_pause\","), 18, "");
  auto refused = ReadGroundTruth(Write(bad));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("confounders[0]"), std::string::npos)
      << refused.status().message();
}

TEST_F(GroundTruthReaderTest, MalformedJsonNamesFileAndOffset) {
  const std::string json = GroundTruthToJson(Sample());
  // Cut inside the steps array: the error is at (or after) the cut, never before the
  // last complete value.
  const std::string cut = json.substr(0, json.find("\"explanation\""));
  const std::string err = ErrorOf(cut);
  ASSERT_FALSE(err.empty());
  EXPECT_NE(err.find(dir_ + "/ground_truth.json"), std::string::npos) << err;
  EXPECT_NE(err.find("byte "), std::string::npos) << err;

  // A wrong type: the offset is exactly the bad value's.
  std::string bad = json;
  const size_t seq = bad.find("\"seq\":12") + 6;
  bad.replace(seq, 2, "\"x\"");
  const std::string e2 = ErrorOf(bad);
  EXPECT_NE(e2.find("byte " + std::to_string(seq) + ":"), std::string::npos) << e2;
  EXPECT_NE(e2.find("steps[0].seq"), std::string::npos) << e2;

  // A missing comma between fields.
  std::string comma = json;
  const size_t at = comma.find(",\"profile\"");
  comma.erase(at, 1);
  const std::string e3 = ErrorOf(comma);
  ASSERT_FALSE(e3.empty());
  EXPECT_NE(e3.find("byte "), std::string::npos) << e3;

  // Content after the object.
  const std::string e4 = ErrorOf(json + "{}");
  EXPECT_NE(e4.find("byte " + std::to_string(json.size()) + ":"), std::string::npos) << e4;
  EXPECT_NE(e4.find("after the top-level object"), std::string::npos) << e4;

  // Unclosed string: located by the scan, at its opening quote.
  const std::string e5 = ErrorOf("{\"format\":\"teller-ground-truth");
  EXPECT_NE(e5.find("byte 10"), std::string::npos) << e5;

  EXPECT_NE(ErrorOf("").find("empty file"), std::string::npos);
  auto missing = ReadGroundTruth(dir_ + "/none.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            dir_ + "/none.json: cannot read (" + std::strerror(ENOENT) + ")");
  auto directory = ReadGroundTruth(dir_);
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().message(), dir_ + ": cannot read (not a regular file)");
}

TEST_F(GroundTruthReaderTest, MissingFieldsAreNamed) {
  const std::string json = GroundTruthToJson(Sample());
  auto without = [&](const std::string& needle, const std::string& replacement = "") {
    std::string s = json;
    const size_t at = s.find(needle);
    EXPECT_NE(at, std::string::npos) << needle;
    s.replace(at, needle.size(), replacement);
    return ErrorOf(s);
  };
  std::string e = without("\"seq\":13,");
  EXPECT_NE(e.find("steps[1]: missing field \"seq\""), std::string::npos) << e;
  // The offset given is the step object's.
  EXPECT_NE(e.find("byte " + std::to_string(json.find("{\"seq\":13"))), std::string::npos) << e;

  e = without(",\"occurrence\":17");
  EXPECT_NE(e.find("steps[0].horizontal.nodes[2] (gpu): missing field \"occurrence\""),
            std::string::npos)
      << e;
  e = without("\"tid\":41007,");
  EXPECT_NE(e.find("steps[0].horizontal.nodes[0] (range): missing field \"tid\""),
            std::string::npos)
      << e;
  e = without("\"kind\":\"call\"", "\"kind\":\"thread\"");
  EXPECT_NE(e.find("unknown locator kind \"thread\""), std::string::npos) << e;
  e = without("\"is_fault\":true,");
  EXPECT_NE(e.find("requests[0]: missing field \"is_fault\""), std::string::npos) << e;
  e = without("\"affected_requests\":[\"chatcmpl-a,1 %\"],");
  EXPECT_NE(e.find("steps[0]: missing field \"affected_requests\""), std::string::npos) << e;
  e = without("{\"format\":\"teller-ground-truth\",", "{");
  EXPECT_NE(e.find("missing field \"format\""), std::string::npos) << e;
  e = without("\"teller-ground-truth\"", "\"teller-raw\"");
  EXPECT_NE(e.find("expected \"teller-ground-truth\""), std::string::npos) << e;
  e = without("\"version\":3", "\"version\":4");
  EXPECT_NE(e.find("unsupported version 4 (this Teller reads versions 1 to 3)"), std::string::npos)
      << e;
  e = without("\"version\":3", "\"version\":0");
  EXPECT_NE(e.find("unsupported version 0"), std::string::npos) << e;
  e = without("\"root\":true", "\"root\":1");
  EXPECT_NE(e.find("steps[0].horizontal.nodes[1].root"), std::string::npos) << e;
  e = without("\"ranks\":[4]", "\"ranks\":[\"4\"]");
  EXPECT_NE(e.find("faults[0].ranks[0]"), std::string::npos) << e;
  // A step naming a fault that does not exist.
  e = without("\"fault\":0,\"affected", "\"fault\":4,\"affected");
  EXPECT_NE(e.find("steps[0].fault: fault 4 is not in \"faults\""), std::string::npos) << e;
  // Out of range for the field's type.
  e = without("\"tid\":41007", "\"tid\":-1");
  EXPECT_NE(e.find("steps[0].horizontal.nodes[0].tid"), std::string::npos) << e;
}

TEST_F(GroundTruthReaderTest, NullNoneStringsAndUnknownKeysAreAccepted) {
  const std::string text =
      "{\"format\":\"teller-ground-truth\",\"version\":1,\"future\":{\"x\":[1,2]},"
      "\"faults\":[{\"id\":0,\"mechanism\":\"sync_stall\",\"category\":\"runtime_driver\"}],"
      "\"requests\":[{\"id\":\"r\",\"is_fault\":false,\"fault_type\":null,\"mechanism\":null}],"
      "\"steps\":[{\"seq\":0,\"requests\":[\"r\"],\"fault\":-1,\"affected_requests\":[],"
      "\"vertical\":{\"is_anomaly\":false,\"nodes\":[]},\"horizontal\":{\"is_anomaly\":false,"
      "\"nodes\":[]},"
      "\"explanation\":null}]}";
  auto r = ReadGroundTruth(Write(text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->requests.size(), 1u);
  EXPECT_EQ(r->requests[0].fault_type, "");
  EXPECT_EQ(r->steps.size(), 1u);
  EXPECT_EQ(r->steps[0].explanation, "");
  // Version 1 had no culprit ranks: they read as empty.
  ASSERT_EQ(r->faults.size(), 1u);
  EXPECT_TRUE(r->faults[0].ranks.empty());
}

TEST_F(GroundTruthReaderTest, Version2LocatorsReadWithUnknownRoles) {
  // A version 2 file as the simulator wrote it before roles: a straggler step whose
  // horizontal view lists a waiting collective kernel and the late rank's range, no
  // "root" key anywhere. Both read, with the role unknown (not impact), and a rewrite
  // leaves the key out again.
  const std::string text =
      "{\"format\":\"teller-ground-truth\",\"version\":2,"
      "\"faults\":[{\"id\":0,\"mechanism\":\"straggler_rank\",\"category\":"
      "\"communication\",\"ranks\":[1]}],"
      "\"requests\":[{\"id\":\"r\",\"is_fault\":true,\"fault\":0,\"steps\":[5]}],"
      "\"steps\":[{\"seq\":5,\"requests\":[\"r\"],\"fault\":0,\"affected_requests\":[\"r\"],"
      "\"vertical\":{\"is_anomaly\":false,\"nodes\":[]},\"horizontal\":{\"is_anomaly\":true,"
      "\"nodes\":[{\"kind\":\"gpu\",\"host\":\"node-0\",\"pid\":40,\"correlation\":9,"
      "\"occurrence\":0},{\"kind\":\"range\",\"host\":\"node-0\",\"pid\":41,\"tid\":41,"
      "\"name\":\"aten::add\",\"occurrence\":2}]}}]}";
  auto r = ReadGroundTruth(Write(text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->steps.size(), 1u);
  const std::vector<NodeLocator>& nodes = r->steps[0].horizontal.nodes;
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].role, NodeLocator::Role::kUnknown);
  EXPECT_EQ(nodes[1].role, NodeLocator::Role::kUnknown);
  EXPECT_EQ(r->faults[0].ranks, std::vector<int>{1});
  EXPECT_EQ(GroundTruthToJson(r.value()).find("\"root\""), std::string::npos);
}

}  // namespace
}  // namespace teller::format
