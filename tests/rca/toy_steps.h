// The learned stage's toy set, shared by its tests: hand-built step records of one rank
// (four layers of launch/GEMM, launch/attention, all-reduce/NCCL kernel) whose labels follow
// from the construction; and the helpers the stage's tests share.
#ifndef TELLER_TESTS_RCA_TOY_STEPS_H_
#define TELLER_TESTS_RCA_TOY_STEPS_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "teller/rca/rca.h"

namespace teller::rca {

// Kinds of synthetic step: normal; a slowed GEMM (vertical view, CUDA kernel); a slowed
// all-reduce (horizontal view, communication). The labels follow from the construction.
enum class Kind { kNormal, kSlowGemm, kSlowAllReduce };

// names.json of the one setting.
inline const std::vector<std::string> kNames = {
    "teller.step seq=1 kind=decode",  // 0
    "model.layers.0",                 // 1
    "cudaLaunchKernel",               // 2
    "gemm_bf16_kernel",               // 3
    "flash_attn_fwd",                 // 4
    "ncclAllReduce",                  // 5
    "ncclDevKernel_AllReduce",        // 6
};

// The node ids of layer l's GEMM and NCCL kernel in MakeStep's tree.
inline uint32_t GemmNode(int layer) { return 3 + 7 * static_cast<uint32_t>(layer); }
inline uint32_t NcclKernelNode(int layer) { return 7 + 7 * static_cast<uint32_t>(layer); }
constexpr int kSlowAllReduceLayer = 1;

// One rank's tree: STEP > 4 layers > (launch > gemm, launch > attn, allreduce > nccl kernel).
// A slowed GEMM is layer `slow_layer`'s.
inline format::DatasetColumns MakeStep(Kind kind, std::mt19937_64& rng, int slow_layer = 2) {
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  format::DatasetColumns c;
  auto add = [&](uint8_t type, uint8_t layer, uint32_t name, int32_t parent, double dur) {
    c.type.push_back(type);
    c.layer.push_back(layer);
    c.name.push_back(name);
    c.parent.push_back(parent);
    c.depth.push_back(parent < 0 ? 0 : static_cast<uint16_t>(c.depth[parent] + 1));
    c.rank.push_back(0);
    c.offset_ns.push_back(0);
    c.dur_ns.push_back(static_cast<int64_t>(dur * jitter(rng)));
    return static_cast<int32_t>(c.type.size() - 1);
  };
  const int32_t root = add(0, 0, 0, -1, 4e6);
  for (int l = 0; l < 4; ++l) {
    const int32_t layer = add(2, 2, 1, root, 9e5);
    const int32_t l1 = add(4, 4, 2, layer, 5e3);
    add(6, 5, 3, l1, kind == Kind::kSlowGemm && l == slow_layer ? 2e6 : 2e5);
    const int32_t l2 = add(4, 4, 2, layer, 5e3);
    add(6, 5, 4, l2, 3e5);
    const int32_t ar = add(3, 3, 5, layer, 1e5);
    add(6, 5, 6, ar, kind == Kind::kSlowAllReduce && l == kSlowAllReduceLayer ? 3e6 : 8e4);
  }
  return c;
}

struct Toy {
  std::vector<format::DatasetColumns> records;
  std::vector<Kind> kinds;
  std::vector<int> slow_layers;  // per step: the slowed GEMM's layer
  Corpus corpus;
  std::vector<Sample> samples;
};

// `n` steps: every fifth a slowed GEMM (of layer 2, or with `any_layer` of a layer drawn
// per step), every fifth (shifted) a slowed all-reduce. Samples name the slowed kernel as
// their evidence node.
inline void MakeToy(Toy& toy, int n, uint64_t seed, bool any_layer = false) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    const Kind k = i % 5 == 1 ? Kind::kSlowGemm : i % 5 == 3 ? Kind::kSlowAllReduce : Kind::kNormal;
    const int layer = any_layer ? static_cast<int>(rng() % 4) : 2;
    toy.records.push_back(MakeStep(k, rng, layer));
    toy.kinds.push_back(k);
    toy.slow_layers.push_back(layer);
  }
  toy.corpus.names = {&kNames};
  for (const auto& r : toy.records) toy.corpus.steps.push_back({0, &r});
  for (int i = 0; i < n; ++i) {
    Sample s;
    s.step = static_cast<uint32_t>(i);
    s.abnormal = {toy.kinds[i] == Kind::kSlowGemm, toy.kinds[i] == Kind::kSlowAllReduce};
    if (toy.kinds[i] == Kind::kSlowGemm) {
      s.fault = static_cast<int>(FaultCategory::kCudaKernel);
      s.nodes[0] = {GemmNode(toy.slow_layers[i])};
    }
    if (toy.kinds[i] == Kind::kSlowAllReduce) {
      s.fault = static_cast<int>(FaultCategory::kCommunication);
      s.nodes[1] = {NcclKernelNode(kSlowAllReduceLayer)};
    }
    toy.samples.push_back(s);
  }
}

// A tiny trace encoder's options for the toy set: TPE vocabulary 24, width and hidden 16,
// two graph-convolution layers, batches of 8 at 1e-2, 30 epochs. Progress lines on stderr
// when TELLER_RCA_TEST_PROGRESS is set.
inline TrainOptions ToyOptions(uint64_t seed) {
  TrainOptions o;
  o.config.tpe_vocab = 24;
  o.config.width = 16;
  o.config.hidden = 16;
  o.config.layers = 2;
  o.epochs = 30;
  o.batch = 8;
  o.learning_rate = 1e-2;
  o.seed = seed;
  if (std::getenv("TELLER_RCA_TEST_PROGRESS") != nullptr) {
    o.progress = [](std::string_view line) {
      std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
    };
  }
  return o;
}

// The evidence head's check on fresh steps of a toy made with `any_layer`: on every abnormal
// step the token that covers the slowed kernel (TPE may have merged it with neighbours,
// which then share its probability) is the one the head ranks first, at P >= 0.5; in the
// vertical view no other layer's GEMM reaches 0.5; the list runs highest first.
inline void ExpectEvidenceOnTheSlowedKernels(const Toy& test, const std::vector<StepOutput>& out) {
  int checked = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const StepOutput& o2 = out[i];
    for (int v = 0; v < kViewsCount; ++v) ASSERT_FALSE(o2.evidence[v].empty()) << i;
    uint32_t want = 0;
    int view = 0;
    if (test.kinds[i] == Kind::kSlowGemm) {
      want = GemmNode(test.slow_layers[i]);
    } else if (test.kinds[i] == Kind::kSlowAllReduce) {
      want = NcclKernelNode(kSlowAllReduceLayer);
      view = 1;
    } else {
      continue;
    }
    const auto& ev = o2.evidence[view];
    bool found = false;
    for (const auto& [node, p] : ev) {
      if (node == want) {
        found = true;
        EXPECT_EQ(p, ev[0].second) << "step " << i << ": node " << want << " below the top";
        EXPECT_GE(p, 0.5f) << "step " << i;
      }
      for (int l = 0; l < 4; ++l) {
        if (view == 0 && node == GemmNode(l) && node != want) {
          EXPECT_LT(p, 0.5f) << "step " << i << " layer " << l;
        }
      }
    }
    EXPECT_TRUE(found) << "step " << i << ": node " << want << " not listed";
    for (size_t j = 1; j < ev.size(); ++j) EXPECT_GE(ev[j - 1].second, ev[j].second);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(std::count_if(test.kinds.begin(), test.kinds.end(),
                                                    [](Kind k) { return k != Kind::kNormal; })));
}

inline std::string TempDir() {
  char tmpl[] = "/tmp/teller-rca-XXXXXX";
  EXPECT_NE(mkdtemp(tmpl), nullptr);
  return tmpl;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace teller::rca

#endif  // TELLER_TESTS_RCA_TOY_STEPS_H_
