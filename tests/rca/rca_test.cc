// The learned stage (include/teller/rca/rca.h) on small hand-built step records: a tiny
// model learns a separable set, is deterministic for a seed, survives its model file, and
// refuses a damaged or foreign one. Without libtorch: every use is a clear error.
#include "teller/rca/rca.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/rca/toy_steps.h"

namespace teller::rca {
namespace {

TrainOptions SmallOptions(uint64_t seed) {
  TrainOptions o = ToyOptions(seed);
  o.epochs = 25;
  return o;
}

std::vector<uint32_t> AllSteps(const Toy& toy) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < toy.records.size(); ++i) out.push_back(i);
  return out;
}

TEST(RcaWithoutTorch, EveryUseIsAClearError) {
  if (Available()) GTEST_SKIP() << "built with libtorch";
  Toy toy;
  MakeToy(toy, 10, 1);
  auto m = Model::Train(toy.corpus, toy.samples, SmallOptions(1));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("libtorch"), std::string::npos) << m.status().message();
}

class RcaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Available()) GTEST_SKIP() << "built without libtorch";
  }
};

// Trained on 60 steps, the model's loss falls, and it classifies 40 fresh steps (other
// jitter): the step decision per view and the fault type of the abnormal ones.
TEST_F(RcaTest, TinyModelLearnsASeparableSet) {
  Toy train, test;
  MakeToy(train, 60, 1);
  MakeToy(test, 40, 2);
  auto m = Model::Train(train.corpus, train.samples, SmallOptions(7));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::vector<double>& loss = m->training().epoch_loss;
  ASSERT_EQ(loss.size(), 25u);
  EXPECT_LT(loss.back(), 0.25 * loss.front()) << "loss " << loss.front() << " -> " << loss.back();
  EXPECT_EQ(m->fault_classes(),
            (std::vector<int>{static_cast<int>(FaultCategory::kCudaKernel),
                              static_cast<int>(FaultCategory::kCommunication)}));

  auto out = m->Predict(test.corpus, AllSteps(test));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 40u);
  int right = 0, faults_right = 0, faults = 0;
  for (size_t i = 0; i < out->size(); ++i) {
    const Sample& s = test.samples[i];
    const StepOutput& o = (*out)[i];
    right += (o.abnormal[0] > 0.5f) == s.abnormal[0] && (o.abnormal[1] > 0.5f) == s.abnormal[1];
    if (s.fault >= 0) {
      ++faults;
      faults_right += static_cast<int>(o.Fault(m->fault_classes())) == s.fault;
    }
  }
  EXPECT_EQ(right, 40);
  EXPECT_EQ(faults, 16);
  EXPECT_EQ(faults_right, 16);
}

// Same seed: the same weights (byte for byte) and outputs; another seed: other outputs.
// The evidence head: the slowed GEMM is in a layer drawn per step, so only the token's own
// duration tells it from the other layers' GEMMs (the same token, the same depth). On fresh
// steps the token that covers the slowed kernel is the one the head ranks first, at
// P >= 0.5, and no other layer's GEMM reaches 0.5. With the evidence loss
// weighed 0 the head learns nothing, and the test fails.
TEST_F(RcaTest, TheEvidenceHeadFindsTheSlowedKernel) {
  Toy train, test;
  MakeToy(train, 80, 5, true);
  MakeToy(test, 40, 6, true);
  TrainOptions o = ToyOptions(9);
  o.epochs = 40;
  auto m = Model::Train(train.corpus, train.samples, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->config().evidence_head);
  auto out = m->Predict(test.corpus, AllSteps(test));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectEvidenceOnTheSlowedKernels(test, *out);
}

// The BLAS under libtorch (Debian's OpenBLAS) runs one thread once the module is loaded, as
// torch does: its own pool, sized from the cores, spun beside other busy processes and made
// training 8x slower. Skips where the BLAS is not OpenBLAS or the user chose a size.
TEST_F(RcaTest, TheBlasRunsOneThread) {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr &&
      std::string(std::getenv("OPENBLAS_NUM_THREADS")) != "1")
    GTEST_SKIP() << "OPENBLAS_NUM_THREADS set by the caller";
  Toy toy;
  MakeToy(toy, 10, 1);
  TrainOptions o = ToyOptions(1);
  o.epochs = 1;
  ASSERT_TRUE(Model::Train(toy.corpus, toy.samples, o).ok());  // loads the module
  void* blas = dlopen("libopenblas.so.0", RTLD_NOLOAD | RTLD_LAZY);
  if (blas == nullptr) GTEST_SKIP() << "libtorch's BLAS is not OpenBLAS";
  using Threads = int (*)();
  const auto threads = reinterpret_cast<Threads>(dlsym(blas, "openblas_get_num_threads"));
  ASSERT_NE(threads, nullptr);
  EXPECT_EQ(threads(), 1);
  dlclose(blas);
}

TEST_F(RcaTest, SameSeedSameModel) {
  Toy toy;
  MakeToy(toy, 30, 3);
  TrainOptions o = SmallOptions(11);
  o.epochs = 4;
  auto a = Model::Train(toy.corpus, toy.samples, o);
  auto b = Model::Train(toy.corpus, toy.samples, o);
  o.seed = 12;
  auto c = Model::Train(toy.corpus, toy.samples, o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto pa = a->Predict(toy.corpus, AllSteps(toy));
  auto pb = b->Predict(toy.corpus, AllSteps(toy));
  auto pc = c->Predict(toy.corpus, AllSteps(toy));
  ASSERT_TRUE(pa.ok() && pb.ok() && pc.ok());
  bool differs = false;
  for (size_t i = 0; i < pa->size(); ++i) {
    EXPECT_EQ((*pa)[i].abnormal, (*pb)[i].abnormal) << i;
    EXPECT_EQ((*pa)[i].fault, (*pb)[i].fault) << i;
    differs |= (*pa)[i].abnormal != (*pc)[i].abnormal;
  }
  EXPECT_TRUE(differs) << "another seed gave the same outputs";
  const std::string dir = TempDir();
  ASSERT_TRUE(a->Save(dir + "/a", {}).ok());
  ASSERT_TRUE(b->Save(dir + "/b", {}).ok());
  EXPECT_EQ(Slurp(dir + "/a/weights.pt"), Slurp(dir + "/b/weights.pt"));
  EXPECT_EQ(a->training().epoch_loss, b->training().epoch_loss);
  std::system(("rm -rf '" + dir + "'").c_str());
}

class RcaFileTest : public RcaTest {
 protected:
  void SetUp() override {
    RcaTest::SetUp();
    if (IsSkipped()) return;
    MakeToy(toy_, 20, 4);
    TrainOptions o = SmallOptions(5);
    o.epochs = 3;
    auto m = Model::Train(toy_.corpus, toy_.samples, o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::make_unique<Model>(std::move(m).value());
    dir_ = TempDir();
    TrainedOn on;
    on.data = "/data/toy";
    on.split = "all";
    on.units = 20;
    ASSERT_TRUE(model_->Save(dir_ + "/m", on).ok());
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string Load() {
    auto m = Model::Load(dir_ + "/m");
    return m.ok() ? "" : m.status().message();
  }
  Toy toy_;
  std::unique_ptr<Model> model_;
  std::string dir_;
};

TEST_F(RcaFileTest, RoundTripGivesIdenticalPredictions) {
  auto loaded = Model::Load(dir_ + "/m");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->config().tpe_vocab, 24u);
  EXPECT_EQ(loaded->config().width, 16);
  EXPECT_EQ(loaded->training().epoch_loss, model_->training().epoch_loss);
  EXPECT_EQ(loaded->fault_classes(), model_->fault_classes());
  auto a = model_->Predict(toy_.corpus, AllSteps(toy_));
  auto b = loaded->Predict(toy_.corpus, AllSteps(toy_));
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].abnormal, (*b)[i].abnormal) << i;
    EXPECT_EQ((*a)[i].fault, (*b)[i].fault) << i;
    EXPECT_EQ((*a)[i].evidence, (*b)[i].evidence) << i;
  }
  const std::string json = Slurp(dir_ + "/m/model.json");
  EXPECT_NE(json.find("\"data\":\"/data/toy\""), std::string::npos) << json;
}

TEST_F(RcaFileTest, DamagedWeightsAreRefusedNamingTheFile) {
  std::string w = Slurp(dir_ + "/m/weights.pt");
  ASSERT_GT(w.size(), 100u);
  w[w.size() / 2] = static_cast<char>(w[w.size() / 2] ^ 0x5a);
  Spit(dir_ + "/m/weights.pt", w);
  const std::string e = Load();
  EXPECT_NE(e.find("weights.pt"), std::string::npos) << e;
  EXPECT_NE(e.find("checksum"), std::string::npos) << e;

  Spit(dir_ + "/m/weights.pt", w.substr(0, w.size() - 10));
  const std::string t = Load();
  EXPECT_NE(t.find("weights.pt"), std::string::npos) << t;
  EXPECT_NE(t.find(std::to_string(w.size() - 10) + " bytes"), std::string::npos) << t;
}

TEST_F(RcaFileTest, WrongVersionOrFormatIsRefused) {
  const std::string json = Slurp(dir_ + "/m/model.json");
  std::string v3 = json;
  const size_t at = v3.find("\"version\":2");
  ASSERT_NE(at, std::string::npos);
  v3.replace(at, 11, "\"version\":3");
  Spit(dir_ + "/m/model.json", v3);
  std::string e = Load();
  EXPECT_NE(e.find("model.json"), std::string::npos) << e;
  EXPECT_NE(e.find("model version 3"), std::string::npos) << e;

  Spit(dir_ + "/m/model.json", json.substr(0, json.size() / 2));
  e = Load();
  EXPECT_NE(e.find("model.json"), std::string::npos) << e;

  std::string other = json;
  other.replace(other.find("teller-rca-model"), 16, "teller-tpe-vocab");
  Spit(dir_ + "/m/model.json", other);
  e = Load();
  EXPECT_NE(e.find("format \"teller-tpe-vocab\""), std::string::npos) << e;

  Spit(dir_ + "/m/model.json", json);
  EXPECT_EQ(Load(), "");
  std::remove((dir_ + "/m/tpe/merges.json").c_str());
  e = Load();
  EXPECT_NE(e.find("merges.json"), std::string::npos) << e;
}

// A model written before the evidence head (no "evidence_head" in its config) loads without
// one: the same verdicts, no evidence. This one's archive still holds the head's weights,
// which the loaded network does not read.
TEST_F(RcaFileTest, AModelWithoutTheEvidenceHeadLoadsWithoutIt) {
  std::string json = Slurp(dir_ + "/m/model.json");
  const std::string field = ",\"evidence_head\":true";
  const size_t at = json.find(field);
  ASSERT_NE(at, std::string::npos) << json;
  json.erase(at, field.size());
  Spit(dir_ + "/m/model.json", json);
  auto loaded = Model::Load(dir_ + "/m");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_FALSE(loaded->config().evidence_head);
  auto a = model_->Predict(toy_.corpus, AllSteps(toy_));
  auto b = loaded->Predict(toy_.corpus, AllSteps(toy_));
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].abnormal, (*b)[i].abnormal) << i;
    EXPECT_FALSE((*a)[i].evidence[0].empty()) << i;
    EXPECT_TRUE((*b)[i].evidence[0].empty()) << i;
  }
}

// A model written before the MoT (model.json version 1, the same trace encoder) still loads
// and predicts as before.
TEST_F(RcaFileTest, VersionOneTraceEncoderStillLoads) {
  std::string json = Slurp(dir_ + "/m/model.json");
  const size_t at = json.find("\"version\":2");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 11, "\"version\":1");
  ASSERT_NE(json.find("\"network\":\"trace-encoder-gcn\""), std::string::npos) << json;
  Spit(dir_ + "/m/model.json", json);
  auto loaded = Model::Load(dir_ + "/m");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->config().variant, Variant::kGcn);
  auto a = model_->Predict(toy_.corpus, AllSteps(toy_));
  auto b = loaded->Predict(toy_.corpus, AllSteps(toy_));
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].abnormal, (*b)[i].abnormal) << i;
}

}  // namespace
}  // namespace teller::rca
