// The mixture of transformers, MoT (docs/method.md §6 "dual-head log-trace model";
// docs/rca.md, "MoT"), in libtorch; part of the module libteller_rca_torch.so.
//
// One sequence per unit: [trace; log; explanation]. The trace stream is 1 + max_ranks
// tokens from the trace encoder (the step's pooled vector, then one pooled vector per rank's
// subtree, each projected to the width); the log and explanation streams are word tokens of
// the text vocabulary (text.h) through one embedding. Every layer has one self-attention
// over the whole sequence, shared by the modalities, and a layer norm and feed-forward block
// per modality (trace; text). The mask: the trace and log tokens (the condition) see each
// other whole, an explanation token sees the condition and the explanation tokens up to
// itself (causal). Heads: abnormal per view and fault type on the mean of the trace stream's
// outputs, the LM head on the explanation positions. Loss: BCE(abnormal) + lambda_f CE(fault)
// + lambda_r NLL(explanation). Every libtorch call runs inside a try block.
#include <chrono>
#include <random>
#include <sstream>

#include "src/rca/text.h"
#include "src/rca/torch_encoder.h"
#include "src/rca/torch_transformer.h"

namespace teller::rca::internal {
namespace {

struct MotImpl : torch::nn::Module {
  MotImpl(const ModelConfig& c, int64_t vocab, int64_t text_vocab) {
    encoder = register_module("encoder", TraceEncoder(c, vocab));
    rank_projection =
        register_module("rank_projection", torch::nn::Linear(2 * c.hidden + 4, c.width));
    slot = register_module("slot", torch::nn::Embedding(1 + c.max_ranks, c.width));
    text = register_module("text", torch::nn::Embedding(text_vocab, c.width));
    position = register_module(
        "position", torch::nn::Embedding(c.max_log_tokens + c.max_explanation_tokens + 2, c.width));
    for (int l = 0; l < c.mot_layers; ++l) {
      blocks.push_back(
          register_module("block" + std::to_string(l), Block(c.width, c.heads, /*modalities=*/2)));
    }
    const auto ln = torch::nn::LayerNormOptions({static_cast<int64_t>(c.width)});
    final_trace = register_module("final_trace", torch::nn::LayerNorm(ln));
    final_text = register_module("final_text", torch::nn::LayerNorm(ln));
    abnormal = register_module("abnormal", torch::nn::Linear(c.width, kViewsCount));
    fault = register_module("fault", torch::nn::Linear(c.width, kFaultCategoryCount));
    lm = register_module("lm", torch::nn::Linear(c.width, text_vocab));
    // The evidence head (docs/rca.md, "Evidence head"), on the encoder's token vectors.
    if (c.evidence_head)
      evidence = register_module("evidence", torch::nn::Linear(c.hidden, kViewsCount));
    // Small embeddings, as in the encoder: the residual stream starts near the trace vectors.
    torch::NoGradGuard no_grad;
    for (auto* e : {&slot, &text, &position}) torch::nn::init::normal_((*e)->weight, 0, 0.02);
  }
  TraceEncoder encoder{nullptr};
  torch::nn::Linear rank_projection{nullptr};
  torch::nn::Embedding slot{nullptr}, text{nullptr}, position{nullptr};
  std::vector<Block> blocks;
  torch::nn::LayerNorm final_trace{nullptr}, final_text{nullptr};
  torch::nn::Linear abnormal{nullptr}, fault{nullptr}, lm{nullptr}, evidence{nullptr};
};
TORCH_MODULE(Mot);

// The trace stream of a batch: [B, 1 + ranks, W] and which slots hold a rank ([B, 1 + ranks]);
// the encoder's token vectors [N, hidden] and tokens per step (the evidence head's input).
struct TraceStream {
  torch::Tensor x, present;
  torch::Tensor tokens;
  std::vector<int64_t> sizes;
};

class MotNetwork final : public TextNetwork<Mot> {
 public:
  MotNetwork(const ModelConfig& c, uint32_t vocab, uint32_t text_vocab, uint64_t seed)
      : TextNetwork(/*predict_batch=*/64, /*clip_norm=*/0), config_(c) {
    OneThread();
    torch::manual_seed(seed);
    net_ = Mot(c, static_cast<int64_t>(vocab), static_cast<int64_t>(text_vocab));
  }

 private:
  int64_t TraceLength() const { return 1 + config_.max_ranks; }

  TraceStream Trace(const std::vector<const Example*>& bx) const {
    std::vector<const EncodedStep*> steps;
    for (const Example* e : bx) steps.push_back(e->step);
    const int64_t ranks = config_.max_ranks;
    const Batch b = MakeBatch(steps, 0, steps.size(), ranks);
    const torch::Tensor h = net_->encoder->Tokens(b);
    const torch::Tensor pooled = net_->encoder->Pool(b, h);  // [B, W]
    // Per rank segment: mean of h and of the durations, max of both (as the step's pooling).
    const int64_t slots = b.steps * ranks;
    const torch::Tensor hd = torch::cat({h, b.duration}, 1);
    const torch::Tensor ones = torch::ones({h.size(0), 1});
    const torch::Tensor count =
        torch::zeros({slots, 1}).index_add_(0, b.segment, ones).clamp_min(1);
    const torch::Tensor mean =
        torch::zeros({slots, hd.size(1)}).index_add_(0, b.segment, hd) / count;
    std::vector<torch::Tensor> maxima;
    for (const torch::Tensor& chunk : hd.split_with_sizes(b.segment_sizes)) {
      maxima.push_back(std::get<0>(chunk.max(0)));
    }
    const torch::Tensor max =
        torch::zeros({slots, hd.size(1)}).index_copy(0, b.segment_slot, torch::stack(maxima));
    const int64_t hidden = h.size(1);
    const torch::Tensor features =
        torch::cat({mean.narrow(1, 0, hidden), mean.narrow(1, hidden, 2), max}, 1);
    const torch::Tensor rank =
        torch::relu(net_->rank_projection(features)).reshape({b.steps, ranks, -1});
    torch::Tensor present = torch::zeros({slots}, torch::kBool);
    present.index_fill_(0, b.segment_slot, true);
    present =
        torch::cat({torch::ones({b.steps, 1}, torch::kBool), present.reshape({b.steps, ranks})}, 1);
    const torch::Tensor x =
        torch::cat({pooled.unsqueeze(1), rank}, 1) + net_->slot->weight.unsqueeze(0);
    return {x, present, h, b.sizes};
  }

  // The whole sequence through the blocks: trace stream, log words, explanation inputs
  // (`explanation` [B, E], starting with <bos>, kPad after the end). Returns the final
  // trace stream [B, T, W] and the explanation positions' LM logits [B, E, V].
  std::pair<torch::Tensor, torch::Tensor> Forward(const TraceStream& trace,
                                                  const torch::Tensor& log,
                                                  const torch::Tensor& explanation) const {
    const int64_t t = trace.x.size(1), l = log.size(1), e = explanation.size(1);
    const int64_t s = t + l + e;
    const torch::Tensor log_pos = torch::arange(l, torch::kInt64);
    const torch::Tensor exp_pos = torch::arange(e, torch::kInt64) + config_.max_log_tokens;
    const torch::Tensor x =
        torch::cat({trace.x, net_->text(log) + net_->position(log_pos).unsqueeze(0),
                    net_->text(explanation) + net_->position(exp_pos).unsqueeze(0)},
                   1);
    // Keys that exist: the present trace slots, the words (not padding).
    const torch::Tensor key = torch::cat(
        {trace.present, log.ne(TextVocabulary::kPad), explanation.ne(TextVocabulary::kPad)}, 1);
    const torch::Tensor i = torch::arange(s, torch::kInt64).unsqueeze(1);
    const torch::Tensor j = torch::arange(s, torch::kInt64).unsqueeze(0);
    const torch::Tensor visible = j.lt(t + l).logical_or(j.le(i));  // [S, S]
    const torch::Tensor allowed =
        visible.unsqueeze(0).logical_and(key.unsqueeze(1)).unsqueeze(1);  // [B, 1, S, S]
    torch::Tensor y = x;
    for (Block& block : net_->blocks) y = block->forward(y, t, allowed);
    const torch::Tensor trace_out = net_->final_trace(y.narrow(1, 0, t));
    const torch::Tensor text_out = net_->final_text(y.narrow(1, t + l, e));
    return {trace_out, net_->lm(text_out)};
  }

  // Mean of the present trace slots' outputs: what the abnormal and fault heads read.
  static torch::Tensor Pooled(const torch::Tensor& trace_out, const torch::Tensor& present) {
    const torch::Tensor m = present.to(torch::kFloat32).unsqueeze(2);
    return (trace_out * m).sum(1) / m.sum(1).clamp_min(1);
  }

  static torch::Tensor Padded(const std::vector<std::vector<int64_t>>& rows) {
    return PaddedRows(rows, TextVocabulary::kPad);
  }

  std::vector<int64_t> LogOf(const Example& e) const {
    std::vector<int64_t> log = e.log;
    if (log.size() > static_cast<size_t>(config_.max_log_tokens))
      log.resize(config_.max_log_tokens);
    return log;
  }

  torch::Tensor Loss(const std::vector<const Example*>& bx, const std::vector<const Target*>& by,
                     const torch::Tensor& pw, const TrainOptions& options) const override {
    const auto rows = static_cast<int64_t>(bx.size());
    const TraceStream trace = Trace(bx);
    std::vector<std::vector<int64_t>> logs, inputs, targets;
    std::vector<float> labels;
    std::vector<int64_t> fault;
    const auto cap = static_cast<size_t>(config_.max_explanation_tokens);
    for (size_t k = 0; k < bx.size(); ++k) {
      logs.push_back(LogOf(*bx[k]));
      const Target& t = *by[k];
      for (int v = 0; v < kViewsCount; ++v) labels.push_back(t.abnormal[v]);
      fault.push_back(t.fault);
      // Teacher forcing: inputs <bos> w1..wn, targets w1..wn <eos>; none without a reference.
      std::vector<int64_t> in{TextVocabulary::kBos}, out;
      if (!t.explanation.empty()) {
        const size_t n = std::min(cap, t.explanation.size());
        in.insert(in.end(), t.explanation.begin(), t.explanation.begin() + static_cast<long>(n));
        out.assign(t.explanation.begin(), t.explanation.begin() + static_cast<long>(n));
        out.push_back(TextVocabulary::kEos);
      } else {
        out.push_back(-100);  // ignored
      }
      inputs.push_back(std::move(in));
      targets.push_back(std::move(out));
    }
    const torch::Tensor input = Padded(inputs);
    torch::Tensor target = Padded(targets);
    // Positions past a row's end are padding in `input`; in `target` they are ignored.
    target = target.masked_fill(input.eq(TextVocabulary::kPad), -100);
    const auto [trace_out, logits] = Forward(trace, Padded(logs), input);
    const torch::Tensor z = Pooled(trace_out, trace.present);
    const torch::Tensor label = torch::from_blob(labels.data(), {rows, kViewsCount}).clone();
    torch::Tensor loss = torch::binary_cross_entropy_with_logits(net_->abnormal(z), label, {}, pw);
    const torch::Tensor f = torch::from_blob(fault.data(), {rows}, torch::kInt64).clone();
    const torch::Tensor has = f.ge(0);
    if (has.any().item<bool>()) {
      const torch::Tensor idx = has.nonzero().squeeze(1);
      loss = loss + options.fault_weight *
                        torch::nn::functional::cross_entropy(net_->fault(z.index_select(0, idx)),
                                                             f.index_select(0, idx));
    }
    if (target.ne(-100).any().item<bool>()) {
      loss = loss + options.explanation_weight *
                        torch::nn::functional::cross_entropy(
                            logits.reshape({-1, logits.size(2)}), target.reshape({-1}),
                            torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
    }
    if (net_->evidence) {
      const torch::Tensor e =
          EvidenceLoss(net_->evidence(trace.tokens), trace.sizes, by, evidence_pw_);
      if (e.defined()) loss = loss + options.evidence_weight * e;
    }
    return loss;
  }

  // Heads and greedy explanations of one batch, appended to `out`. Decoding never picks
  // <pad>, <bos> or the line end; it stops at <eos> or after max_explanation_tokens words.
  // The condition (trace and log tokens) runs through the layers once, keeping every
  // layer's keys and values; then each word runs alone against them (a key/value cache),
  // which is what Forward computes for the same words, without redoing the condition.
  void Generate(const std::vector<const Example*>& bx, std::vector<Output>* out) const override {
    const auto rows = static_cast<int64_t>(bx.size());
    const TraceStream trace = Trace(bx);
    std::vector<std::vector<int64_t>> logs;
    for (const Example* e : bx) logs.push_back(LogOf(*e));
    const torch::Tensor log = Padded(logs);
    const int64_t t = trace.x.size(1), l = log.size(1);
    const torch::Tensor log_pos = torch::arange(l, torch::kInt64);
    torch::Tensor y =
        torch::cat({trace.x, net_->text(log) + net_->position(log_pos).unsqueeze(0)}, 1);
    const torch::Tensor key = torch::cat({trace.present, log.ne(TextVocabulary::kPad)}, 1);
    // The condition sees itself whole: every existing key, for every query.
    torch::Tensor allowed = key.unsqueeze(1).expand({rows, t + l, t + l}).unsqueeze(1);
    const size_t layers = net_->blocks.size();
    std::vector<torch::Tensor> cache_k(layers), cache_v(layers);
    for (size_t n = 0; n < layers; ++n) {
      y = net_->blocks[n]->Run(y, t, allowed, {}, {}, &cache_k[n], &cache_v[n]);
    }
    const torch::Tensor trace_out = net_->final_trace(y.narrow(1, 0, t));
    // Keys a word may attend to: the condition's existing ones, then every earlier word.
    torch::Tensor word_keys = key;
    std::vector<std::vector<int64_t>> words(bx.size());
    std::vector<uint8_t> done(bx.size(), 0);
    std::vector<int64_t> current(bx.size(), TextVocabulary::kBos);
    for (int step = 0; step < config_.max_explanation_tokens; ++step) {
      const torch::Tensor token =
          torch::from_blob(current.data(), {rows, 1}, torch::kInt64).clone();
      const torch::Tensor position = torch::full({1}, config_.max_log_tokens + step, torch::kInt64);
      torch::Tensor x = net_->text(token) + net_->position(position).unsqueeze(0);
      word_keys = torch::cat({word_keys, torch::ones({rows, 1}, torch::kBool)}, 1);
      const torch::Tensor word_allowed = word_keys.unsqueeze(1).unsqueeze(1);  // [B, 1, 1, K]
      for (size_t n = 0; n < layers; ++n) {
        x = net_->blocks[n]->Run(x, 0, word_allowed, cache_k[n], cache_v[n], &cache_k[n],
                                 &cache_v[n]);
      }
      torch::Tensor next = net_->lm(net_->final_text(x)).select(1, 0).clone();  // [B, V]
      for (int64_t banned : {TextVocabulary::kPad, TextVocabulary::kBos, TextVocabulary::kLine}) {
        next.select(1, banned).fill_(-1e9);
      }
      const torch::Tensor pick = next.argmax(1).contiguous();
      const int64_t* p = pick.data_ptr<int64_t>();
      bool all = true;
      for (size_t k = 0; k < bx.size(); ++k) {
        // A finished row goes on being fed its picks (cheaper than reshaping the batch);
        // they are not kept.
        current[k] = p[k];
        if (!done[k]) {
          if (p[k] == TextVocabulary::kEos) {
            done[k] = 1;
          } else {
            words[k].push_back(p[k]);
          }
        }
        all = all && done[k];
      }
      if (all) break;
    }
    const torch::Tensor z = Pooled(trace_out, trace.present);
    const torch::Tensor a = torch::sigmoid(net_->abnormal(z)).contiguous();
    const torch::Tensor f = torch::softmax(net_->fault(z), 1).contiguous();
    const float* pa = a.data_ptr<float>();
    const float* pf = f.data_ptr<float>();
    const size_t first = out->size();
    for (size_t k = 0; k < bx.size(); ++k) {
      Output o;
      for (int v = 0; v < kViewsCount; ++v) o.heads.abnormal[v] = pa[k * kViewsCount + v];
      for (int c = 0; c < kFaultCategoryCount; ++c)
        o.heads.fault[c] = pf[k * kFaultCategoryCount + c];
      o.explanation = std::move(words[k]);
      out->push_back(std::move(o));
    }
    if (net_->evidence) {
      AppendEvidence(torch::sigmoid(net_->evidence(trace.tokens)).contiguous(), trace.sizes, out,
                     first);
    }
  }

  ModelConfig config_;
};

}  // namespace

Network* NewMotNetwork(const ModelConfig& config, uint32_t vocab, uint32_t text_vocab,
                       uint64_t seed) {
  return new MotNetwork(config, vocab, text_vocab, seed);
}

}  // namespace teller::rca::internal
