// The trace encoder's network in libtorch (docs/method.md §6 trace encoder; docs/rca.md) and
// the module's entry point. With mot_torch.cc, single_torch.cc and the torch_*.h headers
// the only files of the stage that include torch/torch.h; built as a module
// (libteller_rca_torch.so) that network_loader.cc opens on first use, so that programs linking the
// stage do not load libtorch (about 1 s of CPU at every start) unless they train or predict. Every
// libtorch call runs inside a try block: exceptions become Status errors and never leave the stage.
#include <chrono>
#include <random>
#include <sstream>

#include "src/rca/torch_encoder.h"

namespace teller::rca::internal {
namespace {

// The heads on the backbone width: abnormal per view (logits) and fault type (logits).
struct HeadsImpl : torch::nn::Module {
  explicit HeadsImpl(const ModelConfig& c) {
    abnormal = register_module("abnormal", torch::nn::Linear(c.width, kViewsCount));
    fault = register_module("fault", torch::nn::Linear(c.width, kFaultCategoryCount));
  }
  torch::nn::Linear abnormal{nullptr}, fault{nullptr};
};
TORCH_MODULE(Heads);

struct NetImpl : torch::nn::Module {
  NetImpl(const ModelConfig& c, int64_t vocab) {
    encoder = register_module("encoder", TraceEncoder(c, vocab));
    heads = register_module("heads", Heads(c));
    // The evidence head (docs/rca.md, "Evidence head"): per token after the graph
    // convolutions, P(evidence) per view.
    if (c.evidence_head)
      evidence = register_module("evidence", torch::nn::Linear(c.hidden, kViewsCount));
  }
  TraceEncoder encoder{nullptr};
  Heads heads{nullptr};
  torch::nn::Linear evidence{nullptr};
};
TORCH_MODULE(Net);

class TorchNetwork final : public ArchivedNetwork<Net> {
 public:
  TorchNetwork(const ModelConfig& c, uint32_t vocab, uint64_t seed) : config_(c) {
    OneThread();
    torch::manual_seed(seed);
    net_ = Net(c, static_cast<int64_t>(vocab));
  }

  Result<std::vector<double>> Train(const std::vector<Example>& x, const std::vector<Target>& y,
                                    const TrainOptions& options) override {
    return Guarded([&]() -> Result<std::vector<double>> {
      torch::manual_seed(options.seed);
      net_->train();
      const torch::Tensor pw = PositiveWeights(y);
      const torch::Tensor evidence_pw = EvidencePositiveWeight(y);
      std::vector<double> losses =
          TrainEpochs(net_->parameters(), x.size(), options, [&](const std::vector<size_t>& batch) {
            std::vector<const EncodedStep*> bx;
            std::vector<float> labels;
            std::vector<int64_t> fault;
            for (const size_t i : batch) {
              bx.push_back(x[i].step);
              for (int v = 0; v < kViewsCount; ++v) labels.push_back(y[i].abnormal[v]);
              fault.push_back(y[i].fault);
            }
            const Batch b = MakeBatch(bx, 0, bx.size());
            const torch::Tensor h = net_->encoder->Tokens(b);
            const torch::Tensor z = net_->encoder->Pool(b, h);
            const auto rows = static_cast<int64_t>(bx.size());
            const torch::Tensor target =
                torch::from_blob(labels.data(), {rows, kViewsCount}).clone();
            torch::Tensor loss =
                torch::binary_cross_entropy_with_logits(net_->heads->abnormal(z), target, {}, pw);
            const torch::Tensor f = torch::from_blob(fault.data(), {rows}, torch::kInt64).clone();
            const torch::Tensor has = f.ge(0);
            if (has.any().item<bool>()) {
              const torch::Tensor idx = has.nonzero().squeeze(1);
              loss = loss + torch::nn::functional::cross_entropy(
                                net_->heads->fault(z.index_select(0, idx)), f.index_select(0, idx));
            }
            if (net_->evidence) {
              std::vector<const Target*> targets;
              for (const size_t k : batch) targets.push_back(&y[k]);
              const torch::Tensor e =
                  EvidenceLoss(net_->evidence(h), b.sizes, targets, evidence_pw);
              if (e.defined()) loss = loss + options.evidence_weight * e;
            }
            return loss;
          });
      net_->eval();
      return losses;
    });
  }

  Result<std::vector<Output>> Predict(const std::vector<Example>& examples) const override {
    return Guarded([&]() -> Result<std::vector<Output>> {
      torch::NoGradGuard no_grad;
      net_->eval();
      std::vector<const EncodedStep*> x;
      for (const Example& e : examples) x.push_back(e.step);
      std::vector<Output> out;
      constexpr size_t kBatch = 64;
      for (size_t begin = 0; begin < x.size(); begin += kBatch) {
        const size_t end = std::min(x.size(), begin + kBatch);
        const Batch b = MakeBatch(x, begin, end);
        const torch::Tensor h = net_->encoder->Tokens(b);
        const torch::Tensor z = net_->encoder->Pool(b, h);
        const torch::Tensor a = torch::sigmoid(net_->heads->abnormal(z)).contiguous();
        const torch::Tensor f = torch::softmax(net_->heads->fault(z), 1).contiguous();
        const float* pa = a.data_ptr<float>();
        const float* pf = f.data_ptr<float>();
        const size_t first = out.size();
        for (size_t i = 0; i < end - begin; ++i) {
          Output o;
          for (int v = 0; v < kViewsCount; ++v) o.heads.abnormal[v] = pa[i * kViewsCount + v];
          for (int c = 0; c < kFaultCategoryCount; ++c)
            o.heads.fault[c] = pf[i * kFaultCategoryCount + c];
          out.push_back(std::move(o));
        }
        if (net_->evidence)
          AppendEvidence(torch::sigmoid(net_->evidence(h)).contiguous(), b.sizes, &out, first);
      }
      return out;
    });
  }

 private:
  ModelConfig config_;
};

}  // namespace

}  // namespace teller::rca::internal

// The module's one entry point (src/rca/network_loader.cc looks it up): a fresh network, or
// null with *error set. Never throws.
extern "C" __attribute__((visibility("default"))) teller::rca::internal::Network*
TellerRcaMakeTorchNetwork(const teller::rca::ModelConfig* config, uint32_t vocab,
                          uint32_t text_vocab, uint64_t seed, std::string* error) {
  try {
    if (config->variant == teller::rca::Variant::kMot) {
      return teller::rca::internal::NewMotNetwork(*config, vocab, text_vocab, seed);
    }
    if (config->variant == teller::rca::Variant::kSingle) {
      return teller::rca::internal::NewSingleNetwork(*config, vocab, text_vocab, seed);
    }
    return new teller::rca::internal::TorchNetwork(*config, vocab, seed);
  } catch (const std::exception& e) {
    *error = std::string("libtorch: ") + e.what();
    return nullptr;
  }
}
