// The transformer layer of the networks that read text (docs/rca.md, "MoT", "Single
// stream"): one self-attention over the whole sequence, then a layer norm and feed-forward
// block per modality. The MoT has two modalities (its trace stream, then text); the single
// stream one (everything is one sequence). Includes torch/torch.h: private to the module's
// own files (mot_torch.cc, single_torch.cc). Also what those two networks share around
// their own loss and decoding (TextNetwork).
#ifndef TELLER_SRC_RCA_TORCH_TRANSFORMER_H_
#define TELLER_SRC_RCA_TORCH_TRANSFORMER_H_

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "src/rca/torch_encoder.h"

namespace teller::rca::internal {

// One layer: shared attention, layer norms and feed-forward blocks per modality. With two
// modalities the first `trace` positions of the sequence are the trace stream, the rest
// text; with one, `trace` must be 0 and every position is the one modality. Parameter names
// (the model file's archive): qkv, out, then norm1_M, norm2_M, up_M, down_M for M in
// "trace", "text" (two modalities) or "text" (one).
struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t width, int64_t heads, int modalities) : heads_(heads) {
    qkv = register_module("qkv", torch::nn::Linear(width, 3 * width));
    out = register_module("out", torch::nn::Linear(width, width));
    const auto ln = torch::nn::LayerNormOptions({width});
    const std::vector<const char*> names = modalities == 2
                                               ? std::vector<const char*>{"trace", "text"}
                                               : std::vector<const char*>{"text"};
    for (const char* m : names) {
      norm1.push_back(register_module(std::string("norm1_") + m, torch::nn::LayerNorm(ln)));
      norm2.push_back(register_module(std::string("norm2_") + m, torch::nn::LayerNorm(ln)));
      up.push_back(register_module(std::string("up_") + m, torch::nn::Linear(width, 4 * width)));
      down.push_back(
          register_module(std::string("down_") + m, torch::nn::Linear(4 * width, width)));
    }
  }
  // x [B, S, W]; allowed [B, 1, S, S] (true: query i may attend key j).
  torch::Tensor forward(const torch::Tensor& x, int64_t trace, const torch::Tensor& allowed) {
    return Run(x, trace, allowed, {}, {}, nullptr, nullptr);
  }
  // The same for positions that follow earlier ones whose keys and values (`past_k`,
  // `past_v` [B, H, P, D]; undefined: none) are kept from an earlier call: greedy decoding
  // then runs each new word through the layer alone (the earlier positions' outputs never
  // depend on later ones). allowed [B, 1, S, P + S]; *k_all, *v_all (when not null) get the
  // keys and values of [past; x].
  torch::Tensor Run(const torch::Tensor& x, int64_t trace, const torch::Tensor& allowed,
                    const torch::Tensor& past_k, const torch::Tensor& past_v, torch::Tensor* k_all,
                    torch::Tensor* v_all) {
    const int64_t b = x.size(0), s = x.size(1), w = x.size(2), d = w / heads_;
    const size_t text = norm1.size() - 1;  // the text modality's index
    // Per modality: the first `trace` positions, the rest.
    auto by_modality = [&](const torch::Tensor& t, auto&& f0, auto&& f1) {
      if (trace == 0) return f1(t);
      if (trace == s) return f0(t);
      return torch::cat({f0(t.narrow(1, 0, trace)), f1(t.narrow(1, trace, s - trace))}, 1);
    };
    const torch::Tensor h = by_modality(
        x, [&](const torch::Tensor& t) { return norm1[0](t); },
        [&](const torch::Tensor& t) { return norm1[text](t); });
    const std::vector<torch::Tensor> qkv_ = qkv(h).chunk(3, 2);
    auto heads = [&](const torch::Tensor& t) {
      return t.reshape({b, s, heads_, d}).transpose(1, 2);
    };
    const torch::Tensor q = heads(qkv_[0]);
    torch::Tensor k = heads(qkv_[1]), v = heads(qkv_[2]);
    if (past_k.defined()) {
      k = torch::cat({past_k, k}, 2);
      v = torch::cat({past_v, v}, 2);
    }
    if (k_all != nullptr) *k_all = k;
    if (v_all != nullptr) *v_all = v;
    torch::Tensor score = q.matmul(k.transpose(2, 3)) / std::sqrt(static_cast<double>(d));
    // A large negative rather than -inf: a row with no allowed key would give NaN with -inf.
    score = score.masked_fill(allowed.logical_not(), -1e9);
    const torch::Tensor a = torch::softmax(score, 3).matmul(v).transpose(1, 2).reshape({b, s, w});
    const torch::Tensor y = x + out(a);
    return by_modality(
        y, [&](const torch::Tensor& p) { return p + down[0](torch::gelu(up[0](norm2[0](p)))); },
        [&](const torch::Tensor& p) {
          return p + down[text](torch::gelu(up[text](norm2[text](p))));
        });
  }
  int64_t heads_;
  torch::nn::Linear qkv{nullptr}, out{nullptr};
  std::vector<torch::nn::LayerNorm> norm1, norm2;
  std::vector<torch::nn::Linear> up, down;
};
TORCH_MODULE(Block);

// Word ids per row into [B, max(len, 1)] padded with `pad`.
inline torch::Tensor PaddedRows(const std::vector<std::vector<int64_t>>& rows, int64_t pad) {
  size_t n = 1;
  for (const auto& r : rows) n = std::max(n, r.size());
  std::vector<int64_t> flat(rows.size() * n, pad);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy(rows[i].begin(), rows[i].end(), flat.begin() + static_cast<std::ptrdiff_t>(i * n));
  return torch::from_blob(flat.data(), {static_cast<int64_t>(rows.size()), static_cast<int64_t>(n)},
                          torch::kInt64)
      .clone();
}

// A network that reads log words and writes explanations (the MoT, the single stream): its
// module `Net` (a TORCH_MODULE holder), trained by TrainEpochs on the mean of Loss over
// each batch (gradients clipped to `clip_norm` when above 0), predicting by Generate over
// batches of `predict_batch` examples. Every libtorch call runs inside Guarded.
template <typename Net>
class TextNetwork : public ArchivedNetwork<Net> {
 public:
  Result<std::vector<double>> Train(const std::vector<Example>& x, const std::vector<Target>& y,
                                    const TrainOptions& options) override {
    return Guarded([&]() -> Result<std::vector<double>> {
      torch::manual_seed(options.seed);
      net_->train();
      const torch::Tensor pw = PositiveWeights(y);
      evidence_pw_ = EvidencePositiveWeight(y);
      std::vector<double> losses = TrainEpochs(
          net_->parameters(), x.size(), options,
          [&](const std::vector<size_t>& batch) {
            std::vector<const Example*> bx;
            std::vector<const Target*> by;
            for (const size_t i : batch) {
              bx.push_back(&x[i]);
              by.push_back(&y[i]);
            }
            return Loss(bx, by, pw, options);
          },
          clip_norm_);
      net_->eval();
      return losses;
    });
  }

  Result<std::vector<Output>> Predict(const std::vector<Example>& x) const override {
    return Guarded([&]() -> Result<std::vector<Output>> {
      torch::NoGradGuard no_grad;
      net_->eval();
      std::vector<Output> out;
      for (size_t begin = 0; begin < x.size(); begin += predict_batch_) {
        const size_t end = std::min(x.size(), begin + predict_batch_);
        std::vector<const Example*> bx;
        for (size_t i = begin; i < end; ++i) bx.push_back(&x[i]);
        Generate(bx, &out);
      }
      return out;
    });
  }

 protected:
  // clip_norm: TrainEpochs' gradient clipping (0: none).
  TextNetwork(size_t predict_batch, double clip_norm)
      : predict_batch_(predict_batch), clip_norm_(clip_norm) {}
  // The mean loss of one batch (pw: the positive weights per view of PositiveWeights).
  virtual torch::Tensor Loss(const std::vector<const Example*>& bx,
                             const std::vector<const Target*>& by, const torch::Tensor& pw,
                             const TrainOptions& options) const = 0;
  // The outputs of one batch, appended to `out`.
  virtual void Generate(const std::vector<const Example*>& bx, std::vector<Output>* out) const = 0;

  using ArchivedNetwork<Net>::net_;
  // The evidence head's positive weight over the training targets (EvidencePositiveWeight).
  torch::Tensor evidence_pw_;

 private:
  size_t predict_batch_;
  double clip_norm_;
};

}  // namespace teller::rca::internal

#endif  // TELLER_SRC_RCA_TORCH_TRANSFORMER_H_
