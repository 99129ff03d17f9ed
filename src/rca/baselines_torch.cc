// The learned baselines' networks in libtorch (include/teller/rca/baselines.h; docs/rca.md,
// "Learned baselines"), part of the module that network_loader.cc opens on first use. Every
// libtorch call runs inside a try block: exceptions become Status errors.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "src/rca/baseline_network.h"
#include "src/rca/text.h"
#include "src/rca/torch_encoder.h"
#include "src/rca/torch_transformer.h"

namespace teller::rca::internal {
namespace {

constexpr int64_t kEventWidth = 32;  // event vectors (word embeddings), LSTM and GCN widths
constexpr int64_t kMaxEvents = 64;   // events per unit a sequence model reads (the first ones)
constexpr size_t kScoreBatch = 256;

const auto kI64 = torch::TensorOptions().dtype(torch::kInt64);
const auto kF32 = torch::TensorOptions().dtype(torch::kFloat32);

// The events' words as padded [E, W] ids (kPad) and weights (0 on padding).
struct EventWords {
  torch::Tensor ids, weights;
};
EventWords WordsOf(const EventTable& t) {
  size_t width = 1;
  for (const auto& w : t.words) width = std::max(width, w.size());
  std::vector<int64_t> ids(t.size() * width, TextVocabulary::kPad);
  std::vector<float> weights(t.size() * width, 0);
  for (size_t e = 0; e < t.size(); ++e) {
    std::copy(t.words[e].begin(), t.words[e].end(), ids.begin() + static_cast<long>(e * width));
    std::copy(t.weights[e].begin(), t.weights[e].end(),
              weights.begin() + static_cast<long>(e * width));
  }
  const auto e = static_cast<int64_t>(t.size()), w = static_cast<int64_t>(width);
  return {torch::from_blob(ids.data(), {e, w}, kI64).clone(),
          torch::from_blob(weights.data(), {e, w}, kF32).clone()};
}

// Per unit of `rows`, its first kMaxEvents ids mapped by `map`, padded with `pad`; `lengths`
// gets each row's length.
template <typename Map>
torch::Tensor Sequences(const std::vector<const BaselineExample*>& rows, Map&& map, int64_t pad,
                        std::vector<int64_t>* lengths) {
  std::vector<std::vector<int64_t>> ids;
  lengths->clear();
  for (const BaselineExample* x : rows) {
    const size_t n = std::min<size_t>(x->events.size(), kMaxEvents);
    std::vector<int64_t> r;
    for (size_t i = 0; i < n; ++i) r.push_back(map(x->events[i]));
    lengths->push_back(static_cast<int64_t>(std::max<size_t>(n, 1)));
    if (r.empty()) r.push_back(pad);
    ids.push_back(std::move(r));
  }
  return PaddedRows(ids, pad);
}

std::vector<const BaselineExample*> Pick(const std::vector<BaselineExample>& x, size_t begin,
                                         size_t end) {
  std::vector<const BaselineExample*> out;
  for (size_t i = begin; i < end; ++i) out.push_back(&x[i]);
  return out;
}
std::vector<const BaselineExample*> Pick(const std::vector<BaselineExample>& x,
                                         const std::vector<size_t>& indices) {
  std::vector<const BaselineExample*> out;
  for (size_t i : indices) out.push_back(&x[i]);
  return out;
}

// A baseline whose parameters are the module `Net` (a TORCH_MODULE holder), trained by
// TrainEpochs on the loss of each batch (after Prepare) and scored batch by batch. Every
// libtorch call runs inside Guarded.
template <typename Net>
class TrainedBaseline : public BaselineNetwork {
 public:
  Result<std::vector<double>> Train(const EventTable& events, const std::vector<BaselineExample>& x,
                                    const std::vector<Target>& y,
                                    const TrainOptions& options) override {
    return Guarded([&]() -> Result<std::vector<double>> {
      torch::manual_seed(options.seed);
      Prepare(events, x, y, options);
      net_->train();
      std::vector<double> losses =
          TrainEpochs(net_->parameters(), x.size(), options, [&](const std::vector<size_t>& batch) {
            std::vector<const Target*> targets;
            for (size_t i : batch) targets.push_back(&y[i]);
            return BatchLoss(events, Pick(x, batch), targets);
          });
      net_->eval();
      return losses;
    });
  }
  Result<std::vector<BaselineScore>> Score(const EventTable& events,
                                           const std::vector<BaselineExample>& x) const override {
    return Guarded([&]() -> Result<std::vector<BaselineScore>> {
      torch::NoGradGuard no_grad;
      net_->eval();
      BeginScoring(events);
      std::vector<BaselineScore> out;
      for (size_t begin = 0; begin < x.size(); begin += score_batch_) {
        const size_t end = std::min(x.size(), begin + score_batch_);
        ScoreBatch(events, Pick(x, begin, end), &out);
      }
      return out;
    });
  }
  uint64_t Parameters() const override { return ParameterCount(*net_); }

 protected:
  // `make` builds the module once the seed is set (its weights are drawn then).
  template <typename Make>
  TrainedBaseline(Make&& make, uint64_t seed, size_t score_batch) : score_batch_(score_batch) {
    OneThread();
    torch::manual_seed(seed);
    net_ = make();
  }
  // What training needs computed once, before the first batch (in training's seeded state).
  virtual void Prepare(const EventTable&, const std::vector<BaselineExample>&,
                       const std::vector<Target>&, const TrainOptions&) {}
  virtual torch::Tensor BatchLoss(const EventTable& events,
                                  const std::vector<const BaselineExample*>& rows,
                                  const std::vector<const Target*>& targets) = 0;
  // What scoring needs computed once per Score call, before its first batch.
  virtual void BeginScoring(const EventTable&) const {}
  // Appends the scores of `rows` to `out`.
  virtual void ScoreBatch(const EventTable& events, const std::vector<const BaselineExample*>& rows,
                          std::vector<BaselineScore>* out) const = 0;
  mutable Net net_{nullptr};  // eval() and forward are not const in libtorch

 private:
  size_t score_batch_;
};

// ---- LogRobust ----------------------------------------------------------------------------

struct LogRobustImpl : torch::nn::Module {
  explicit LogRobustImpl(int64_t words) {
    embed = register_module("embed", torch::nn::Embedding(words, kEventWidth));
    lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(kEventWidth, kEventWidth)
                                                       .batch_first(true)
                                                       .bidirectional(true)));
    attention = register_module("attention", torch::nn::Linear(2 * kEventWidth, kEventWidth));
    context = register_module(
        "context", torch::nn::Linear(torch::nn::LinearOptions(kEventWidth, 1).bias(false)));
    abnormal = register_module("abnormal", torch::nn::Linear(2 * kEventWidth, kViewsCount));
    fault = register_module("fault", torch::nn::Linear(2 * kEventWidth, kFaultCategoryCount));
  }
  // Per unit, the attention-pooled LSTM states [B, 2 * width].
  torch::Tensor forward(const EventWords& w, const std::vector<const BaselineExample*>& rows) {
    // Semantic vectors: the TF-IDF-weighted mean of each event's word embeddings.
    const torch::Tensor events = (embed(w.ids) * w.weights.unsqueeze(2)).sum(1);
    std::vector<int64_t> lengths;
    const torch::Tensor ids = Sequences(
        rows, [](int64_t e) { return e; }, 0, &lengths);
    const torch::Tensor x =
        events.index_select(0, ids.reshape({-1})).reshape({ids.size(0), ids.size(1), kEventWidth});
    const torch::Tensor len = torch::from_blob(lengths.data(), {ids.size(0)}, kI64).clone();
    auto packed = torch::nn::utils::rnn::pack_padded_sequence(x, len, true, false);
    auto [out, state] = lstm->forward_with_packed_input(packed);
    const torch::Tensor h =
        std::get<0>(torch::nn::utils::rnn::pad_packed_sequence(out, true, 0.0, ids.size(1)));
    torch::Tensor a = context(torch::tanh(attention(h))).squeeze(2);
    const torch::Tensor pad = torch::arange(ids.size(1), kI64).unsqueeze(0).ge(len.unsqueeze(1));
    a = torch::softmax(a.masked_fill(pad, -1e9), 1);
    return (a.unsqueeze(2) * h).sum(1);
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear attention{nullptr}, context{nullptr}, abnormal{nullptr}, fault{nullptr};
};
TORCH_MODULE(LogRobust);

class LogRobustNetwork final : public TrainedBaseline<LogRobust> {
 public:
  LogRobustNetwork(const BaselineShape& s, uint64_t seed)
      : TrainedBaseline([&] { return LogRobust(s.words); }, seed, kScoreBatch) {}

 private:
  void Prepare(const EventTable& events, const std::vector<BaselineExample>&,
               const std::vector<Target>& y, const TrainOptions&) override {
    words_ = WordsOf(events);
    positive_weights_ = PositiveWeights(y);
  }
  torch::Tensor BatchLoss(const EventTable&, const std::vector<const BaselineExample*>& rows,
                          const std::vector<const Target*>& targets) override {
    const torch::Tensor z = net_->forward(words_, rows);
    std::vector<float> labels;
    std::vector<int64_t> fault;
    for (const Target* t : targets) {
      for (int v = 0; v < kViewsCount; ++v) labels.push_back(t->abnormal[v]);
      fault.push_back(t->fault);
    }
    const auto n = static_cast<int64_t>(rows.size());
    torch::Tensor loss = torch::binary_cross_entropy_with_logits(
        net_->abnormal(z), torch::from_blob(labels.data(), {n, kViewsCount}).clone(), {},
        positive_weights_);
    const torch::Tensor f = torch::from_blob(fault.data(), {n}, kI64).clone();
    const torch::Tensor has = f.ge(0);
    if (has.any().item<bool>()) {
      const torch::Tensor idx = has.nonzero().squeeze(1);
      loss = loss + torch::nn::functional::cross_entropy(net_->fault(z.index_select(0, idx)),
                                                         f.index_select(0, idx));
    }
    return loss;
  }
  // The events' words once per Score, not per batch (the table may not be training's).
  void BeginScoring(const EventTable& events) const override { scoring_words_ = WordsOf(events); }
  void ScoreBatch(const EventTable&, const std::vector<const BaselineExample*>& rows,
                  std::vector<BaselineScore>* out) const override {
    const torch::Tensor z = net_->forward(scoring_words_, rows);
    const torch::Tensor a = torch::sigmoid(net_->abnormal(z)).contiguous();
    const torch::Tensor f = torch::softmax(net_->fault(z), 1).contiguous();
    for (int64_t i = 0; i < a.size(0); ++i) {
      BaselineScore s;
      for (int v = 0; v < kViewsCount; ++v) s.score[v] = a[i][v].item<float>();
      for (int c = 0; c < kFaultCategoryCount; ++c) s.fault[c] = f[i][c].item<float>();
      out->push_back(s);
    }
  }
  EventWords words_;
  mutable EventWords scoring_words_;
  torch::Tensor positive_weights_;
};

// ---- LAnoBERT -----------------------------------------------------------------------------

// Tokens: padding, the mask, an event never seen in training, then the training events.
constexpr int64_t kTokPad = 0, kTokMask = 1, kTokUnseen = 2, kTokEvents = 3;
constexpr double kMaskRate = 0.15;  // BERT's masking rate
constexpr size_t kTopLosses = 5;    // a unit's score: the mean of its largest losses

struct LanoBertImpl : torch::nn::Module {
  explicit LanoBertImpl(int64_t known) {
    constexpr int64_t kWidth = 64;
    const int64_t vocab = kTokEvents + known;
    embed = register_module("embed", torch::nn::Embedding(vocab, kWidth));
    position = register_module("position", torch::nn::Embedding(kMaxEvents, kWidth));
    for (int l = 0; l < 2; ++l)
      blocks.push_back(register_module("block" + std::to_string(l), Block(kWidth, 4, 1)));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kWidth})));
    out = register_module("out", torch::nn::Linear(kWidth, vocab));
  }
  // Logits [B, T, vocab] of tokens [B, T]: every position attends to every real one.
  torch::Tensor forward(const torch::Tensor& tokens) {
    const int64_t t = tokens.size(1);
    torch::Tensor h = embed(tokens) + position(torch::arange(t, kI64)).unsqueeze(0);
    const torch::Tensor allowed =
        tokens.ne(kTokPad).unsqueeze(1).unsqueeze(1).expand({tokens.size(0), 1, t, t});
    for (auto& b : blocks) h = b->forward(h, 0, allowed);
    return out(norm(h));
  }
  torch::nn::Embedding embed{nullptr}, position{nullptr};
  std::vector<Block> blocks;
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear out{nullptr};
};
TORCH_MODULE(LanoBert);

class LanoBertNetwork final : public TrainedBaseline<LanoBert> {
 public:
  LanoBertNetwork(const BaselineShape& s, uint64_t seed)
      : TrainedBaseline([&] { return LanoBert(s.known_events); }, seed, kScoreBatch / 8) {}

 private:
  static torch::Tensor Tokens(const EventTable& events,
                              const std::vector<const BaselineExample*>& rows,
                              std::vector<int64_t>* lengths) {
    return Sequences(
        rows,
        [&](int64_t e) {
          const int64_t k = events.known[static_cast<size_t>(e)];
          return k > 0 ? kTokEvents + k - 1 : kTokUnseen;
        },
        kTokPad, lengths);
  }
  void Prepare(const EventTable&, const std::vector<BaselineExample>&, const std::vector<Target>&,
               const TrainOptions& options) override {
    rng_.seed(options.seed ^ 0x6d61736bULL);  // the masks' own draws
  }
  torch::Tensor BatchLoss(const EventTable& events, const std::vector<const BaselineExample*>& rows,
                          const std::vector<const Target*>&) override {
    std::vector<int64_t> lengths;
    const torch::Tensor tokens = Tokens(events, rows, &lengths);
    // Each position masked with kMaskRate, at least one per unit.
    std::vector<uint8_t> mask(static_cast<size_t>(tokens.numel()), 0);
    const auto t = static_cast<size_t>(tokens.size(1));
    for (size_t b = 0; b < rows.size(); ++b) {
      bool any = false;
      for (int64_t p = 0; p < lengths[b]; ++p) {
        if (std::uniform_real_distribution<double>(0, 1)(rng_) < kMaskRate) {
          mask[b * t + static_cast<size_t>(p)] = 1;
          any = true;
        }
      }
      if (!any) mask[b * t + static_cast<size_t>(rng_() % static_cast<uint64_t>(lengths[b]))] = 1;
    }
    const torch::Tensor m =
        torch::from_blob(mask.data(), tokens.sizes(), torch::kUInt8).clone().to(torch::kBool);
    const torch::Tensor logits = net_->forward(tokens.masked_fill(m, kTokMask));
    return torch::nn::functional::cross_entropy(logits.index({m}), tokens.index({m}));
  }
  void ScoreBatch(const EventTable& events, const std::vector<const BaselineExample*>& rows,
                  std::vector<BaselineScore>* out) const override {
    std::vector<int64_t> lengths;
    const torch::Tensor tokens = Tokens(events, rows, &lengths);
    // One copy of each unit per position, that position masked.
    std::vector<int64_t> unit, pos;
    for (size_t b = 0; b < lengths.size(); ++b) {
      for (int64_t p = 0; p < lengths[b]; ++p) {
        unit.push_back(static_cast<int64_t>(b));
        pos.push_back(p);
      }
    }
    const auto n = static_cast<int64_t>(unit.size());
    const torch::Tensor u = torch::from_blob(unit.data(), {n}, kI64).clone();
    const torch::Tensor p = torch::from_blob(pos.data(), {n}, kI64).clone();
    torch::Tensor copies = tokens.index_select(0, u).clone();
    const torch::Tensor all = torch::arange(n, kI64);
    const torch::Tensor target = copies.index({all, p});
    copies.index_put_({all, p}, kTokMask);
    const torch::Tensor logp = torch::log_softmax(net_->forward(copies), 2);
    const torch::Tensor loss = -logp.index({all, p, target}).contiguous();
    const float* l = loss.data_ptr<float>();
    size_t at = 0;
    for (int64_t length : lengths) {
      std::vector<float> mine(l + at, l + at + length);
      at += static_cast<size_t>(length);
      const size_t k = std::min(kTopLosses, mine.size());
      std::partial_sort(mine.begin(), mine.begin() + static_cast<long>(k), mine.end(),
                        std::greater<float>());
      double sum = 0;
      for (size_t i = 0; i < k; ++i) sum += mine[i];
      BaselineScore s;
      s.score.fill(static_cast<float>(sum / static_cast<double>(k)));
      out->push_back(s);
    }
  }
  std::mt19937_64 rng_;
};

// ---- Logs2Graphs --------------------------------------------------------------------------

// A batch of units as one graph: a node per distinct event of each unit, attributes the
// event's TF-IDF word vector, edges per transition (weights: counts, normalized per node
// over its incoming edges for the forward pass and its outgoing ones for the backward).
struct EventGraphs {
  torch::Tensor features;  // [N, words]
  torch::Tensor graph;     // [N]: the unit of each node
  torch::Tensor src, dst, forward_weight, backward_weight;
  int64_t units = 0;
  std::vector<int64_t> sizes;
};
EventGraphs MakeGraphs(const EventTable& events, const std::vector<const BaselineExample*>& rows,
                       int64_t words) {
  std::vector<float> features;
  std::vector<int64_t> graph, src, dst;
  std::vector<float> count;
  EventGraphs g;
  for (size_t b = 0; b < rows.size(); ++b) {
    const auto offset = static_cast<int64_t>(graph.size());
    std::vector<int64_t> nodes;  // event of each node
    std::vector<int64_t> node_of;
    for (int64_t e : rows[b]->events) {
      auto it = std::find(nodes.begin(), nodes.end(), e);
      if (it == nodes.end()) {
        nodes.push_back(e);
        it = nodes.end() - 1;
      }
      node_of.push_back(offset + (it - nodes.begin()));
    }
    for (int64_t e : nodes) {
      std::vector<float> f(static_cast<size_t>(words), 0);
      const auto& w = events.words[static_cast<size_t>(e)];
      for (size_t i = 0; i < w.size(); ++i)
        f[static_cast<size_t>(w[i])] += events.weights[static_cast<size_t>(e)][i];
      features.insert(features.end(), f.begin(), f.end());
      graph.push_back(static_cast<int64_t>(b));
    }
    for (size_t i = 1; i < node_of.size(); ++i) {
      src.push_back(node_of[i - 1]);
      dst.push_back(node_of[i]);
      count.push_back(1);
    }
    g.sizes.push_back(static_cast<int64_t>(nodes.size()));
  }
  const auto n = static_cast<int64_t>(graph.size());
  std::vector<float> in(static_cast<size_t>(n), 0), out(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < src.size(); ++i) {
    out[static_cast<size_t>(src[i])] += count[i];
    in[static_cast<size_t>(dst[i])] += count[i];
  }
  std::vector<float> fw(src.size()), bw(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    fw[i] = count[i] / in[static_cast<size_t>(dst[i])];
    bw[i] = count[i] / out[static_cast<size_t>(src[i])];
  }
  const auto e = static_cast<int64_t>(src.size());
  g.units = static_cast<int64_t>(rows.size());
  g.features = torch::from_blob(features.data(), {n, words}, kF32).clone();
  g.graph = torch::from_blob(graph.data(), {n}, kI64).clone();
  g.src = torch::from_blob(src.data(), {e}, kI64).clone();
  g.dst = torch::from_blob(dst.data(), {e}, kI64).clone();
  g.forward_weight = torch::from_blob(fw.data(), {e}, kF32).clone();
  g.backward_weight = torch::from_blob(bw.data(), {e}, kF32).clone();
  return g;
}

struct Logs2GraphsImpl : torch::nn::Module {
  explicit Logs2GraphsImpl(int64_t words) {
    // No bias anywhere: with one, the one-class objective is met by mapping everything to
    // the centre (Deep SVDD's argument).
    auto linear = [](int64_t in, int64_t out) {
      return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
    };
    int64_t in = words;
    for (int l = 0; l < 2; ++l) {
      const std::string s = std::to_string(l);
      self.push_back(register_module("self" + s, linear(in, kEventWidth)));
      forward_.push_back(register_module("forward" + s, linear(in, kEventWidth)));
      backward_.push_back(register_module("backward" + s, linear(in, kEventWidth)));
      in = kEventWidth;
    }
    centre = register_buffer("centre", torch::zeros({2 * kEventWidth}));
  }
  // Per unit [B, 2 * width]: mean and max of its nodes after the directed convolutions.
  torch::Tensor forward(const EventGraphs& g) {
    torch::Tensor h = g.features;
    for (size_t l = 0; l < self.size(); ++l) {
      const torch::Tensor from_pred =
          torch::zeros({h.size(0), h.size(1)})
              .index_add_(0, g.dst, h.index_select(0, g.src) * g.forward_weight.unsqueeze(1));
      const torch::Tensor from_succ =
          torch::zeros({h.size(0), h.size(1)})
              .index_add_(0, g.src, h.index_select(0, g.dst) * g.backward_weight.unsqueeze(1));
      h = torch::leaky_relu(self[l](h) + forward_[l](from_pred) + backward_[l](from_succ), 0.1);
    }
    const torch::Tensor count = torch::tensor(g.sizes, kI64).to(torch::kFloat32).unsqueeze(1);
    const torch::Tensor mean = torch::zeros({g.units, h.size(1)}).index_add_(0, g.graph, h) / count;
    std::vector<torch::Tensor> maxima;
    for (const torch::Tensor& chunk : h.split_with_sizes(g.sizes))
      maxima.push_back(std::get<0>(chunk.max(0)));
    return torch::cat({mean, torch::stack(maxima)}, 1);
  }
  std::vector<torch::nn::Linear> self, forward_, backward_;
  torch::Tensor centre;
};
TORCH_MODULE(Logs2Graphs);

class Logs2GraphsNetwork final : public TrainedBaseline<Logs2Graphs> {
 public:
  Logs2GraphsNetwork(const BaselineShape& s, uint64_t seed)
      : TrainedBaseline([&] { return Logs2Graphs(s.words); }, seed, kScoreBatch), words_(s.words) {}

 private:
  // The centre: the mean embedding of the training units before training, each coordinate
  // kept at least 0.1 away from 0 (a coordinate at 0 is met trivially by a dead unit).
  void Prepare(const EventTable& events, const std::vector<BaselineExample>& x,
               const std::vector<Target>&, const TrainOptions&) override {
    torch::NoGradGuard no_grad;
    torch::Tensor sum = torch::zeros({2 * kEventWidth});
    for (size_t begin = 0; begin < x.size(); begin += kScoreBatch) {
      const size_t end = std::min(x.size(), begin + kScoreBatch);
      sum += net_->forward(MakeGraphs(events, Pick(x, begin, end), words_)).sum(0);
    }
    torch::Tensor c = sum / static_cast<double>(x.size());
    c = torch::where(c.abs().lt(0.1),
                     torch::where(c.lt(0), torch::full_like(c, -0.1), torch::full_like(c, 0.1)), c);
    net_->centre.copy_(c);
  }
  torch::Tensor BatchLoss(const EventTable& events, const std::vector<const BaselineExample*>& rows,
                          const std::vector<const Target*>&) override {
    return (net_->forward(MakeGraphs(events, rows, words_)) - net_->centre).pow(2).sum(1).mean();
  }
  void ScoreBatch(const EventTable& events, const std::vector<const BaselineExample*>& rows,
                  std::vector<BaselineScore>* out) const override {
    const torch::Tensor d =
        (net_->forward(MakeGraphs(events, rows, words_)) - net_->centre).pow(2).sum(1).contiguous();
    for (int64_t i = 0; i < d.size(0); ++i) {
      BaselineScore s;
      s.score.fill(d[i].item<float>());
      out->push_back(s);
    }
  }
  int64_t words_;
};

// ---- MAD-GAN ------------------------------------------------------------------------------

constexpr int64_t kLatent = 8;
constexpr double kSpreads = 3, kClip = 2;  // feature scaling (MadGanNetwork::Windows)
constexpr int kInversionSteps = 50;        // gradient steps that find a window's latent
constexpr double kResidualWeight = 0.5;    // lambda of the DR score

struct MadGanImpl : torch::nn::Module {
  explicit MadGanImpl(int64_t cols) {
    g_lstm = register_module(
        "g_lstm", torch::nn::LSTM(torch::nn::LSTMOptions(kLatent, kEventWidth).batch_first(true)));
    g_out = register_module("g_out", torch::nn::Linear(kEventWidth, cols));
    d_lstm = register_module(
        "d_lstm", torch::nn::LSTM(torch::nn::LSTMOptions(cols, kEventWidth).batch_first(true)));
    d_out = register_module("d_out", torch::nn::Linear(kEventWidth, 1));
  }
  // One latent per window [B, latent], read at every step -> [B, W, cols]. (A latent per
  // step lets the inversion below rebuild almost any series, spikes included, and the
  // residual then tells nothing.)
  torch::Tensor Generate(const torch::Tensor& z, int64_t rows) {
    return torch::tanh(g_out(std::get<0>(g_lstm->forward(z.unsqueeze(1).expand({-1, rows, -1})))));
  }
  torch::Tensor Discriminate(const torch::Tensor& x) {  // [B, W, cols] -> logits [B, W]
    return d_out(std::get<0>(d_lstm->forward(x))).squeeze(2);
  }
  std::vector<torch::Tensor> GeneratorParameters() {
    auto a = g_lstm->parameters(), b = g_out->parameters();
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  std::vector<torch::Tensor> DiscriminatorParameters() {
    auto a = d_lstm->parameters(), b = d_out->parameters();
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  torch::nn::LSTM g_lstm{nullptr}, d_lstm{nullptr};
  torch::nn::Linear g_out{nullptr}, d_out{nullptr};
};
TORCH_MODULE(MadGan);

class MadGanNetwork final : public BaselineNetwork {
 public:
  MadGanNetwork(const BaselineShape& s, uint64_t seed)
      : rows_(s.window_rows), cols_(s.window_cols) {
    OneThread();
    torch::manual_seed(seed);
    net_ = MadGan(cols_);
  }
  // Windows scaled into the generator's range, as published (min-max to [-1, 1]): per
  // feature, the training windows' mean and kSpreads standard deviations map to 0 and 1, and
  // values beyond kClip are cut (a value past the tanh's range is a residual by itself).
  torch::Tensor Windows(const std::vector<const BaselineExample*>& rows) const {
    std::vector<float> v;
    for (const BaselineExample* x : rows)
      v.insert(v.end(), x->window->values.begin(), x->window->values.end());
    const torch::Tensor t =
        torch::from_blob(v.data(), {static_cast<int64_t>(rows.size()), rows_, cols_}, kF32).clone();
    if (!mean_.defined()) return t;
    return ((t - mean_) / scale_).clamp(-kClip, kClip);
  }
  void FitScale(const std::vector<BaselineExample>& x) {
    const torch::Tensor t = Windows(Pick(x, 0, x.size())).reshape({-1, cols_});
    mean_ = t.mean(0);
    scale_ = kSpreads * t.std(0, false).clamp_min(1e-3);
  }
  Result<std::vector<double>> Train(const EventTable&, const std::vector<BaselineExample>& x,
                                    const std::vector<Target>&,
                                    const TrainOptions& options) override {
    return Guarded([&]() -> Result<std::vector<double>> {
      torch::manual_seed(options.seed);
      FitScale(x);
      net_->train();
      // Two players, two optimizers (the GAN's usual Adam with beta1 0.5).
      const auto adam = torch::optim::AdamOptions(options.learning_rate).betas({0.5, 0.999});
      torch::optim::Adam opt_d(net_->DiscriminatorParameters(), adam);
      torch::optim::Adam opt_g(net_->GeneratorParameters(), adam);
      std::vector<double> losses =
          EpochLoop(x.size(), options, [&](const std::vector<size_t>& batch) {
            const torch::Tensor real = Windows(Pick(x, batch));
            const auto b = static_cast<int64_t>(batch.size());
            const torch::Tensor ones = torch::ones({b, rows_}), zeros = torch::zeros({b, rows_});
            torch::Tensor fake = net_->Generate(torch::randn({b, kLatent}), rows_);
            const torch::Tensor loss_d =
                torch::binary_cross_entropy_with_logits(net_->Discriminate(real), ones) +
                torch::binary_cross_entropy_with_logits(net_->Discriminate(fake.detach()), zeros);
            opt_d.zero_grad();
            loss_d.backward();
            opt_d.step();
            fake = net_->Generate(torch::randn({b, kLatent}), rows_);
            const torch::Tensor loss_g =
                torch::binary_cross_entropy_with_logits(net_->Discriminate(fake), ones);
            opt_g.zero_grad();
            loss_g.backward();
            opt_g.step();
            return loss_d.item<double>();
          });
      net_->eval();
      // The scales of the two parts of the score, from the training windows.
      std::vector<double> residual, discrimination;
      Raw(Pick(x, 0, x.size()), &residual, &discrimination);
      residual_ = Robust(residual);
      discrimination_ = Robust(discrimination);
      return losses;
    });
  }
  Result<std::vector<BaselineScore>> Score(const EventTable&,
                                           const std::vector<BaselineExample>& x) const override {
    return Guarded([&]() -> Result<std::vector<BaselineScore>> {
      std::vector<double> residual, discrimination;
      Raw(Pick(x, 0, x.size()), &residual, &discrimination);
      std::vector<BaselineScore> out;
      for (size_t i = 0; i < x.size(); ++i) {
        BaselineScore s;
        s.score.fill(static_cast<float>(
            kResidualWeight * (residual[i] - residual_.first) / residual_.second +
            (1 - kResidualWeight) * (discrimination[i] - discrimination_.first) /
                discrimination_.second));
        out.push_back(s);
      }
      return out;
    });
  }
  uint64_t Parameters() const override { return ParameterCount(*net_); }

 private:
  // Per window, the residual of its last row (the unit's step) under the generator's best
  // reconstruction of the whole window (the latent found by kInversionSteps of Adam from a
  // seeded draw), and the discriminator's loss on that row as real (-log D).
  void Raw(const std::vector<const BaselineExample*>& rows, std::vector<double>* residual,
           std::vector<double>* discrimination) const {
    torch::manual_seed(0x6d616467ULL);  // the same draws whatever was asked before
    for (size_t begin = 0; begin < rows.size(); begin += kScoreBatch) {
      const size_t end = std::min(rows.size(), begin + kScoreBatch);
      const std::vector<const BaselineExample*> part(rows.begin() + static_cast<long>(begin),
                                                     rows.begin() + static_cast<long>(end));
      const torch::Tensor real = Windows(part);
      const auto b = static_cast<int64_t>(part.size());
      torch::Tensor z = torch::randn({b, kLatent}).requires_grad_(true);
      torch::optim::Adam opt({z}, torch::optim::AdamOptions(0.05));
      for (int s = 0; s < kInversionSteps; ++s) {
        const torch::Tensor loss =
            (net_->Generate(z, rows_) - real).pow(2).mean(std::vector<int64_t>{1, 2}).sum();
        // Gradients for the latent alone (the networks' own stay untouched).
        z.mutable_grad() = torch::autograd::grad({loss}, {z})[0].clone();
        opt.step();
      }
      torch::NoGradGuard no_grad;
      const torch::Tensor r =
          (net_->Generate(z, rows_) - real).select(1, rows_ - 1).pow(2).mean(1).contiguous();
      const torch::Tensor d =
          torch::softplus(-net_->Discriminate(real).select(1, rows_ - 1)).contiguous();
      for (int64_t i = 0; i < b; ++i) {
        residual->push_back(r[i].item<double>());
        discrimination->push_back(d[i].item<double>());
      }
    }
  }
  // Median and median absolute deviation (at least 1e-6).
  static std::pair<double, double> Robust(std::vector<double> v) {
    if (v.empty()) return {0, 1};
    auto median = [](std::vector<double>& a) {
      std::nth_element(a.begin(), a.begin() + static_cast<long>(a.size() / 2), a.end());
      return a[a.size() / 2];
    };
    const double m = median(v);
    for (double& d : v) d = std::abs(d - m);
    return {m, std::max(1e-6, median(v))};
  }

  int64_t rows_, cols_;
  torch::Tensor mean_, scale_;  // per feature, from the training windows
  std::pair<double, double> residual_{0, 1}, discrimination_{0, 1};
  mutable MadGan net_{nullptr};
};

}  // namespace
}  // namespace teller::rca::internal

// The module's entry point for the learned baselines (src/rca/network_loader.cc looks it
// up): a fresh network, or null with *error set. Never throws.
extern "C" __attribute__((visibility("default"))) teller::rca::internal::BaselineNetwork*
TellerRcaMakeTorchBaseline(teller::rca::BaselineKind kind,
                           const teller::rca::internal::BaselineShape* shape, uint64_t seed,
                           std::string* error) {
  using namespace teller::rca::internal;
  try {
    switch (kind) {
      case teller::rca::BaselineKind::kLogRobust:
        return new LogRobustNetwork(*shape, seed);
      case teller::rca::BaselineKind::kLanoBert:
        return new LanoBertNetwork(*shape, seed);
      case teller::rca::BaselineKind::kLogs2Graphs:
        return new Logs2GraphsNetwork(*shape, seed);
      case teller::rca::BaselineKind::kMadGan:
        return new MadGanNetwork(*shape, seed);
    }
    *error = "unknown baseline";
    return nullptr;
  } catch (const std::exception& e) {
    *error = TorchError(e);
    return nullptr;
  }
}
