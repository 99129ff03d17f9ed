// The network in libtorch (docs/method.md §6 trace encoder; docs/rca.md). The one file of
// the stage that includes torch/torch.h; built as a module (libteller_rca_torch.so) that
// network_loader.cc opens on first use, so that programs linking the stage do not load
// libtorch (about 1 s of CPU at every start) unless they train or predict. Every libtorch call runs
// inside a try block: exceptions become Status errors and never leave the stage.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <sstream>

#include "src/rca/network.h"

namespace teller::rca::internal {
namespace {

// One torch thread: the machine's cores go to the callers' own threads (and OpenBLAS keeps
// its own). The inter-op pool can only be sized before its first use, hence once, guarded.
void OneThread() {
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
};

Batch MakeBatch(const std::vector<const EncodedStep*>& x, size_t begin, size_t end) {
  std::vector<int64_t> token, depth, step, src, dst;
  std::vector<float> duration, count;
  std::vector<int64_t> sizes;
  for (size_t b = begin; b < end; ++b) {
    const EncodedStep& e = *x[b];
    const auto offset = static_cast<int64_t>(token.size());
    token.insert(token.end(), e.token.begin(), e.token.end());
    depth.insert(depth.end(), e.depth.begin(), e.depth.end());
    for (size_t i = 0; i < e.size(); ++i) {
      duration.push_back(e.log_duration[i]);
      duration.push_back(e.relative[i]);
      step.push_back(static_cast<int64_t>(b - begin));
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
  return out;
}

// The trace encoder (method.md §6): h_i = E_tok(w_i) + E_depth(d_i) + MLP(duration
// channels); L graph-convolution layers H' = H + relu(A_hat H W) (the residual keeps a
// token's own signal over deep stacks); mean and max pooling per step; projection to the
// backbone width. Registered as "encoder" so that later modules (log stream, MoT blocks)
// sit beside it in the same archive.
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
  torch::Tensor forward(const Batch& b) {
    torch::Tensor h =
        token(b.token) + depth(b.depth) + duration2(torch::relu(duration1(b.duration)));
    const torch::Tensor w = b.weight.unsqueeze(1);
    for (auto& layer : gcn) {
      const torch::Tensor agg =
          torch::zeros_like(h).index_add_(0, b.dst, h.index_select(0, b.src) * w);
      h = h + torch::relu(layer(agg));
    }
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
  torch::nn::Embedding token{nullptr}, depth{nullptr};
  torch::nn::Linear duration1{nullptr}, duration2{nullptr}, projection{nullptr};
  std::vector<torch::nn::Linear> gcn;
};
TORCH_MODULE(TraceEncoder);

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
  }
  TraceEncoder encoder{nullptr};
  Heads heads{nullptr};
};
TORCH_MODULE(Net);

std::string Seconds(double s) {
  char buf[32];
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  }
  return buf;
}

class TorchNetwork final : public Network {
 public:
  TorchNetwork(const ModelConfig& c, uint32_t vocab, uint64_t seed) : config_(c) {
    OneThread();
    torch::manual_seed(seed);
    net_ = Net(c, static_cast<int64_t>(vocab));
  }

  Result<std::vector<double>> Train(const std::vector<const EncodedStep*>& x,
                                    const std::vector<Target>& y,
                                    const TrainOptions& options) override {
    try {
      OneThread();
      torch::manual_seed(options.seed);
      net_->train();
      torch::optim::Adam optimizer(net_->parameters(),
                                   torch::optim::AdamOptions(options.learning_rate));
      // Abnormal steps are the minority: weigh positives by negatives / positives per view
      // (at most 20), so the head does not settle on "normal".
      std::vector<float> pos_weight(kViewsCount);
      for (int v = 0; v < kViewsCount; ++v) {
        double pos = 0;
        for (const Target& t : y) pos += t.abnormal[v];
        const double neg = static_cast<double>(y.size()) - pos;
        pos_weight[v] = static_cast<float>(pos > 0 ? std::clamp(neg / pos, 1.0, 20.0) : 1.0);
      }
      const torch::Tensor pw = torch::tensor(pos_weight);
      std::mt19937_64 rng(options.seed);
      std::vector<size_t> order(x.size());
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
          std::vector<const EncodedStep*> bx;
          std::vector<float> labels;
          std::vector<int64_t> fault;
          for (size_t i = begin; i < end; ++i) {
            bx.push_back(x[order[i]]);
            for (int v = 0; v < kViewsCount; ++v) labels.push_back(y[order[i]].abnormal[v]);
            fault.push_back(y[order[i]].fault);
          }
          const Batch b = MakeBatch(bx, 0, bx.size());
          const torch::Tensor z = net_->encoder->forward(b);
          const auto rows = static_cast<int64_t>(bx.size());
          const torch::Tensor target = torch::from_blob(labels.data(), {rows, kViewsCount}).clone();
          torch::Tensor loss =
              torch::binary_cross_entropy_with_logits(net_->heads->abnormal(z), target, {}, pw);
          const torch::Tensor f = torch::from_blob(fault.data(), {rows}, torch::kInt64).clone();
          const torch::Tensor has = f.ge(0);
          if (has.any().item<bool>()) {
            const torch::Tensor idx = has.nonzero().squeeze(1);
            loss = loss + torch::nn::functional::cross_entropy(
                              net_->heads->fault(z.index_select(0, idx)), f.index_select(0, idx));
          }
          optimizer.zero_grad();
          loss.backward();
          optimizer.step();
          total += loss.item<double>() * static_cast<double>(rows);
        }
        losses.push_back(order.empty() ? 0 : total / static_cast<double>(order.size()));
        if (options.progress) {
          const double elapsed =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          const double done = static_cast<double>(epoch + 1);
          const double rate = done * static_cast<double>(order.size()) / std::max(elapsed, 1e-9);
          char buf[160];
          std::snprintf(buf, sizeof buf, "epoch %d/%d: loss %.4f, %.0f steps/s, ETA %s", epoch + 1,
                        options.epochs, losses.back(), rate,
                        Seconds(elapsed / done * (options.epochs - done)).c_str());
          options.progress(buf);
        }
      }
      net_->eval();
      return losses;
    } catch (const std::exception& e) {
      return Status::Error(std::string("libtorch: ") + e.what());
    }
  }

  Result<std::vector<StepOutput>> Predict(const std::vector<const EncodedStep*>& x) const override {
    try {
      OneThread();
      torch::NoGradGuard no_grad;
      net_->eval();
      std::vector<StepOutput> out;
      constexpr size_t kBatch = 64;
      for (size_t begin = 0; begin < x.size(); begin += kBatch) {
        const size_t end = std::min(x.size(), begin + kBatch);
        const Batch b = MakeBatch(x, begin, end);
        const torch::Tensor z = net_->encoder->forward(b);
        const torch::Tensor a = torch::sigmoid(net_->heads->abnormal(z)).contiguous();
        const torch::Tensor f = torch::softmax(net_->heads->fault(z), 1).contiguous();
        const float* pa = a.data_ptr<float>();
        const float* pf = f.data_ptr<float>();
        for (size_t i = 0; i < end - begin; ++i) {
          StepOutput o;
          for (int v = 0; v < kViewsCount; ++v) o.abnormal[v] = pa[i * kViewsCount + v];
          for (int c = 0; c < kFaultCategoryCount; ++c)
            o.fault[c] = pf[i * kFaultCategoryCount + c];
          out.push_back(o);
        }
      }
      return out;
    } catch (const std::exception& e) {
      return Status::Error(std::string("libtorch: ") + e.what());
    }
  }

  Result<std::string> SaveWeights() const override {
    try {
      torch::serialize::OutputArchive archive;
      net_->save(archive);
      std::ostringstream os;
      archive.save_to(os);
      return std::move(os).str();
    } catch (const std::exception& e) {
      return Status::Error(std::string("libtorch: ") + e.what());
    }
  }

  Status LoadWeights(std::string_view bytes) override {
    try {
      torch::serialize::InputArchive archive;
      std::istringstream is{std::string(bytes)};
      archive.load_from(is);
      net_->load(archive);
      net_->eval();
      return Status::Ok();
    } catch (const std::exception& e) {
      // libtorch's messages carry a C++ backtrace; the first line says what was wrong.
      std::string what = e.what();
      what = what.substr(0, what.find('\n'));
      return Status::Error("cannot read the weights (" + what + ")");
    }
  }

  uint64_t Parameters() const override {
    uint64_t n = 0;
    for (const auto& p : net_->parameters()) n += static_cast<uint64_t>(p.numel());
    return n;
  }

 private:
  ModelConfig config_;
  mutable Net net_{nullptr};  // eval() and forward are not const in libtorch
};

}  // namespace

}  // namespace teller::rca::internal

// The module's one entry point (src/rca/network_loader.cc looks it up): a fresh network, or
// null with *error set. Never throws.
extern "C" __attribute__((visibility("default"))) teller::rca::internal::Network*
TellerRcaMakeTorchNetwork(const teller::rca::ModelConfig* config, uint32_t vocab, uint64_t seed,
                          std::string* error) {
  try {
    return new teller::rca::internal::TorchNetwork(*config, vocab, seed);
  } catch (const std::exception& e) {
    *error = std::string("libtorch: ") + e.what();
    return nullptr;
  }
}
