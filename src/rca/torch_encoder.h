// What the module's networks share (docs/rca.md, "Network"): one torch thread, a batch of
// steps as one graph, the trace encoder. Includes torch/torch.h, so only the module's own
// files (network_torch.cc, mot_torch.cc) include it. Private to src/rca.
#ifndef TELLER_SRC_RCA_TORCH_ENCODER_H_
#define TELLER_SRC_RCA_TORCH_ENCODER_H_

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "src/rca/network.h"

namespace teller::rca::internal {

// One torch thread: the machine's cores go to the callers' own threads (and OpenBLAS keeps
// its own). The inter-op pool can only be sized before its first use, hence once, guarded.
inline void OneThread() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      at::set_num_interop_threads(1);
    } catch (const std::exception&) {
      // Already started elsewhere in the process: its size stays.
    }
  });
  torch::set_num_threads(1);
}

// A batch of steps as one graph: the tokens of all steps concatenated, edges of every step's
// parent graph in both directions plus self-loops, with the symmetric normalization
// D^-1/2 (A + I) D^-1/2 of graph convolution as edge weights.
struct Batch {
  torch::Tensor token, depth, duration;  // [N], [N], [N, 2]
  torch::Tensor src, dst, weight;        // [E]
  torch::Tensor step;                    // [N]: the step of each token
  torch::Tensor count;                   // [B, 1]: tokens per step (at least 1)
  std::vector<int64_t> sizes;            // tokens per step
  int64_t steps = 0;
  // Rank segments (the MoT's trace stream): a step's tokens from one root (one rank's STEP
  // node) to the next, the ranks from the `ranks`-th on sharing the last segment. Tokens are
  // in depth-first order per rank, so a segment is contiguous and segments follow steps.
  int64_t ranks = 1;
  torch::Tensor segment;               // [N]: step * ranks + slot of each token
  std::vector<int64_t> segment_sizes;  // tokens per non-empty segment, in token order
  torch::Tensor segment_slot;          // [non-empty segments]: step * ranks + slot
};

inline Batch MakeBatch(const std::vector<const EncodedStep*>& x, size_t begin, size_t end,
                       int64_t ranks = 1) {
  std::vector<int64_t> token, depth, step, src, dst, segment, segment_sizes, segment_slot;
  std::vector<float> duration, count;
  std::vector<int64_t> sizes;
  for (size_t b = begin; b < end; ++b) {
    const EncodedStep& e = *x[b];
    const auto offset = static_cast<int64_t>(token.size());
    token.insert(token.end(), e.token.begin(), e.token.end());
    depth.insert(depth.end(), e.depth.begin(), e.depth.end());
    int64_t roots = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      duration.push_back(e.log_duration[i]);
      duration.push_back(e.relative[i]);
      step.push_back(static_cast<int64_t>(b - begin));
      if (e.parent[i] < 0) ++roots;
      const int64_t slot =
          static_cast<int64_t>(b - begin) * ranks + std::clamp<int64_t>(roots - 1, 0, ranks - 1);
      if (segment_slot.empty() || segment_slot.back() != slot) {
        segment_slot.push_back(slot);
        segment_sizes.push_back(0);
      }
      ++segment_sizes.back();
      segment.push_back(slot);
      const int64_t me = offset + static_cast<int64_t>(i);
      src.push_back(me);
      dst.push_back(me);
      if (e.parent[i] >= 0) {
        const int64_t p = offset + e.parent[i];
        src.push_back(me);
        dst.push_back(p);
        src.push_back(p);
        dst.push_back(me);
      }
    }
    count.push_back(static_cast<float>(std::max<size_t>(1, e.size())));
    sizes.push_back(static_cast<int64_t>(e.size()));
  }
  std::vector<float> degree(token.size(), 0);
  for (int64_t d : dst) degree[d] += 1;
  std::vector<float> weight(src.size());
  for (size_t i = 0; i < src.size(); ++i)
    weight[i] = 1.0f / std::sqrt(degree[src[i]] * degree[dst[i]]);
  const auto n = static_cast<int64_t>(token.size());
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  Batch out;
  out.steps = static_cast<int64_t>(end - begin);
  out.token = torch::from_blob(token.data(), {n}, i64).clone();
  out.depth = torch::from_blob(depth.data(), {n}, i64).clone();
  out.duration = torch::from_blob(duration.data(), {n, 2}, f32).clone();
  out.step = torch::from_blob(step.data(), {n}, i64).clone();
  const auto e = static_cast<int64_t>(src.size());
  out.src = torch::from_blob(src.data(), {e}, i64).clone();
  out.dst = torch::from_blob(dst.data(), {e}, i64).clone();
  out.weight = torch::from_blob(weight.data(), {e}, f32).clone();
  out.count = torch::from_blob(count.data(), {out.steps, 1}, f32).clone();
  out.sizes = std::move(sizes);
  out.ranks = ranks;
  out.segment = torch::from_blob(segment.data(), {n}, i64).clone();
  out.segment_slot =
      torch::from_blob(segment_slot.data(), {static_cast<int64_t>(segment_slot.size())}, i64)
          .clone();
  out.segment_sizes = std::move(segment_sizes);
  return out;
}

// The trace encoder (method.md §6): h_i = E_tok(w_i) + E_depth(d_i) + MLP(duration
// channels); L graph-convolution layers H' = H + relu(A_hat H W) (the residual keeps a
// token's own signal over deep stacks); mean and max pooling per step; projection to the
// backbone width. Registered as "encoder" beside the networks' other parts in one archive.
struct TraceEncoderImpl : torch::nn::Module {
  TraceEncoderImpl(const ModelConfig& c, int64_t vocab) {
    token = register_module("token", torch::nn::Embedding(vocab, c.hidden));
    depth = register_module("depth", torch::nn::Embedding(c.max_depth, c.hidden));
    duration1 = register_module("duration1", torch::nn::Linear(2, c.hidden));
    duration2 = register_module("duration2", torch::nn::Linear(c.hidden, c.hidden));
    for (int l = 0; l < c.layers; ++l) {
      gcn.push_back(
          register_module("gcn" + std::to_string(l), torch::nn::Linear(c.hidden, c.hidden)));
    }
    // Embeddings start small beside the duration channels: with N(0, 1) rows (libtorch's
    // default) a slowed operator's few units of relative log-duration drown in the token
    // identities, and training takes far longer to find them.
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(token->weight, 0, 0.1);
    torch::nn::init::normal_(depth->weight, 0, 0.1);
    projection = register_module("projection", torch::nn::Linear(2 * c.hidden + 4, c.width));
  }
  // The token vectors after the graph convolutions, [N, hidden].
  torch::Tensor Tokens(const Batch& b) {
    torch::Tensor h =
        token(b.token) + depth(b.depth) + duration2(torch::relu(duration1(b.duration)));
    const torch::Tensor w = b.weight.unsqueeze(1);
    for (auto& layer : gcn) {
      const torch::Tensor agg =
          torch::zeros_like(h).index_add_(0, b.dst, h.index_select(0, b.src) * w);
      h = h + torch::relu(layer(agg));
    }
    return h;
  }
  // Per step: the projection of [mean of h, mean of the duration channels, max of both].
  torch::Tensor Pool(const Batch& b, const torch::Tensor& h) {
    const int64_t hidden = h.size(1);
    const torch::Tensor mean = torch::zeros({b.steps, hidden}).index_add_(0, b.step, h) / b.count;
    // Max pooling per step: the steps' tokens are contiguous, so one max per chunk.
    // The duration channels are pooled too (mean and max per step), a direct path from
    // "some operator ran long" to the heads beside the one through the convolutions.
    const torch::Tensor hd = torch::cat({h, b.duration}, 1);
    std::vector<torch::Tensor> maxima;
    for (const torch::Tensor& chunk : hd.split_with_sizes(b.sizes)) {
      maxima.push_back(std::get<0>(chunk.max(0)));
    }
    const torch::Tensor max = torch::stack(maxima);
    const torch::Tensor mean_d =
        torch::zeros({b.steps, 2}).index_add_(0, b.step, b.duration) / b.count;
    return torch::relu(projection(torch::cat({mean, mean_d, max}, 1)));
  }
  torch::Tensor forward(const Batch& b) { return Pool(b, Tokens(b)); }
  torch::nn::Embedding token{nullptr}, depth{nullptr};
  torch::nn::Linear duration1{nullptr}, duration2{nullptr}, projection{nullptr};
  std::vector<torch::nn::Linear> gcn;
};
TORCH_MODULE(TraceEncoder);

inline std::string Seconds(double s) {
  char buf[32];
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  }
  return buf;
}

// One progress line per epoch: loss, units per second, the time left at that rate.
inline std::string EpochLine(int epoch, int epochs, double loss, size_t units, double elapsed) {
  const double done = static_cast<double>(epoch + 1);
  const double rate = done * static_cast<double>(units) / std::max(elapsed, 1e-9);
  char buf[160];
  std::snprintf(buf, sizeof buf, "epoch %d/%d: loss %.4f, %.0f steps/s, ETA %s", epoch + 1, epochs,
                loss, rate, Seconds(elapsed / done * (epochs - done)).c_str());
  return buf;
}

// The epochs the networks share: the examples in an order shuffled each epoch (seeded by
// options.seed), batches of options.batch, `step` run on each batch's example indices and
// returning its mean loss, the mean loss per epoch (returned) and one progress line per
// epoch. Throws libtorch's exceptions.
template <typename Step>
std::vector<double> EpochLoop(size_t examples, const TrainOptions& options, Step&& step) {
  std::mt19937_64 rng(options.seed);
  std::vector<size_t> order(examples);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<double> losses;
  const auto t0 = std::chrono::steady_clock::now();
  const auto batch = static_cast<size_t>(options.batch);
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    // Fisher-Yates with our own draws, so every platform shuffles alike.
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    double total = 0;
    for (size_t begin = 0; begin < order.size(); begin += batch) {
      const size_t end = std::min(order.size(), begin + batch);
      const std::vector<size_t> indices(order.begin() + static_cast<std::ptrdiff_t>(begin),
                                        order.begin() + static_cast<std::ptrdiff_t>(end));
      total += step(indices) * static_cast<double>(indices.size());
    }
    losses.push_back(order.empty() ? 0 : total / static_cast<double>(order.size()));
    if (options.progress) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      options.progress(EpochLine(epoch, options.epochs, losses.back(), order.size(), elapsed));
    }
  }
  return losses;
}

// The training loop of one optimizer: Adam over `parameters`, EpochLoop's epochs and
// batches; `batch_loss` gets the example indices of one batch and returns its mean loss.
// With `clip_norm` > 0 the gradients' global norm is clipped to it before each step.
// Throws libtorch's exceptions.
template <typename BatchLoss>
std::vector<double> TrainEpochs(std::vector<torch::Tensor> parameters, size_t examples,
                                const TrainOptions& options, BatchLoss&& batch_loss,
                                double clip_norm = 0) {
  const std::vector<torch::Tensor> clipped = parameters;
  torch::optim::Adam optimizer(std::move(parameters),
                               torch::optim::AdamOptions(options.learning_rate));
  return EpochLoop(examples, options, [&](const std::vector<size_t>& indices) {
    torch::Tensor loss = batch_loss(indices);
    optimizer.zero_grad();
    loss.backward();
    if (clip_norm > 0) torch::nn::utils::clip_grad_norm_(clipped, clip_norm);
    optimizer.step();
    return loss.item<double>();
  });
}

// The first line of a libtorch message (the rest is a C++ backtrace).
inline std::string TorchError(const std::exception& e) {
  std::string what = e.what();
  return "libtorch: " + what.substr(0, what.find('\n'));
}

// Runs `f` on one torch thread; libtorch's exceptions become errors of f's result type
// (a Status or a Result). Every entry from outside the module into libtorch goes through it.
template <typename F>
auto Guarded(F&& f) -> decltype(f()) {
  try {
    OneThread();
    return f();
  } catch (const std::exception& e) {
    return Status::Error(TorchError(e));
  }
}

// A module's parameters as a libtorch archive, and back (then in eval mode). Throw
// libtorch's exceptions.
inline std::string SaveArchive(torch::nn::Module& module) {
  torch::serialize::OutputArchive archive;
  module.save(archive);
  std::ostringstream os;
  archive.save_to(os);
  return std::move(os).str();
}
inline void LoadArchive(torch::nn::Module& module, std::string_view bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream is{std::string(bytes)};
  archive.load_from(is);
  module.load(archive);
  module.eval();
}
inline uint64_t ParameterCount(const torch::nn::Module& module) {
  uint64_t n = 0;
  for (const auto& p : module.parameters()) n += static_cast<uint64_t>(p.numel());
  return n;
}

// A network whose parameters are the module `Net` (a TORCH_MODULE holder): its weights as
// a libtorch archive and its size. libtorch's exceptions become errors.
template <typename Net>
class ArchivedNetwork : public Network {
 public:
  Result<std::string> SaveWeights() const override {
    return Guarded([&]() -> Result<std::string> { return SaveArchive(*net_); });
  }

  Status LoadWeights(std::string_view bytes) override {
    try {
      LoadArchive(*net_, bytes);
      return Status::Ok();
    } catch (const std::exception& e) {
      return Status::Error("cannot read the weights (" + TorchError(e).substr(10) + ")");
    }
  }

  uint64_t Parameters() const override { return ParameterCount(*net_); }

 protected:
  mutable Net net_{nullptr};  // eval() and forward are not const in libtorch
};

// Abnormal steps are the minority: positives weighed by negatives / positives per view (at
// most 20), so the head does not settle on "normal".
inline torch::Tensor PositiveWeights(const std::vector<Target>& y) {
  std::vector<float> pos_weight(kViewsCount);
  for (int v = 0; v < kViewsCount; ++v) {
    double pos = 0;
    for (const Target& t : y) pos += t.abnormal[v];
    const double neg = static_cast<double>(y.size()) - pos;
    pos_weight[v] = static_cast<float>(pos > 0 ? std::clamp(neg / pos, 1.0, 20.0) : 1.0);
  }
  return torch::tensor(pos_weight);
}

// The evidence head's positives are few among a step's tokens: weighed by negatives /
// positives over all training targets (at least 1, at most 100).
inline torch::Tensor EvidencePositiveWeight(const std::vector<Target>& y) {
  double pos = 0, all = 0;
  for (const Target& t : y) {
    for (const std::vector<float>& e : t.evidence) {
      for (float f : e) pos += f;
      all += static_cast<double>(e.size());
    }
  }
  return torch::tensor(
      static_cast<float>(pos > 0 ? std::clamp((all - pos) / pos, 1.0, 100.0) : 1.0));
}

// The evidence head's loss on one batch: `logits` [N, views] over the batch's tokens (steps
// of `sizes` tokens each, in order), the targets of each step's views that have them
// (Target::evidence), BCE with `pos_weight`, the mean over the targeted tokens. Undefined
// when no token of the batch has a target.
inline torch::Tensor EvidenceLoss(const torch::Tensor& logits, const std::vector<int64_t>& sizes,
                                  const std::vector<const Target*>& targets,
                                  const torch::Tensor& pos_weight) {
  const int64_t n = logits.size(0);
  std::vector<float> target(static_cast<size_t>(n) * kViewsCount, 0),
      mask(static_cast<size_t>(n) * kViewsCount, 0);
  size_t at = 0;
  for (size_t j = 0; j < sizes.size(); ++j) {
    const auto tokens = static_cast<size_t>(sizes[j]);
    for (int v = 0; v < kViewsCount; ++v) {
      const std::vector<float>& t = targets[j]->evidence[v];
      if (t.size() != tokens) continue;
      for (size_t i = 0; i < tokens; ++i) {
        target[(at + i) * kViewsCount + v] = t[i];
        mask[(at + i) * kViewsCount + v] = 1;
      }
    }
    at += tokens;
  }
  const torch::Tensor m = torch::from_blob(mask.data(), {n, kViewsCount}).clone();
  const double masked = m.sum().item<double>();
  if (masked == 0) return {};
  return torch::binary_cross_entropy_with_logits(
             logits, torch::from_blob(target.data(), {n, kViewsCount}).clone(), m, pos_weight,
             at::Reduction::Sum) /
         masked;
}

// The evidence head's probabilities `probs` [N, views] (contiguous) of a batch's tokens
// (steps of `sizes` tokens each) into the outputs of those steps, out[first..].
inline void AppendEvidence(const torch::Tensor& probs, const std::vector<int64_t>& sizes,
                           std::vector<Output>* out, size_t first) {
  const float* pe = probs.data_ptr<float>();
  size_t at = 0;
  for (size_t j = 0; j < sizes.size(); ++j) {
    const auto tokens = static_cast<size_t>(sizes[j]);
    for (int v = 0; v < kViewsCount; ++v) {
      std::vector<float>& e = (*out)[first + j].evidence[v];
      for (size_t t = 0; t < tokens; ++t) e.push_back(pe[(at + t) * kViewsCount + v]);
    }
    at += tokens;
  }
}

// The MoT (mot_torch.cc) and the single stream (single_torch.cc); throw libtorch's
// exceptions.
Network* NewMotNetwork(const ModelConfig& config, uint32_t vocab, uint32_t text_vocab,
                       uint64_t seed);
Network* NewSingleNetwork(const ModelConfig& config, uint32_t vocab, uint32_t text_vocab,
                          uint64_t seed);

}  // namespace teller::rca::internal

#endif  // TELLER_SRC_RCA_TORCH_ENCODER_H_
