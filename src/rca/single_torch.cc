// The single-stream model (docs/method.md §6 "single-stream variant"; docs/rca.md, "Single
// stream"), in libtorch; part of the module libteller_rca_torch.so.
//
// One causal transformer reads one sequence per unit: the step's TPE tokens, its log words,
// then what it generates:
//
//   [trace tokens] [log words] <bos> V H <fault_type> Y </fault_type> w1 .. wn <eos>
//
// V and H are <yes> or <no> (the step abnormal in the vertical and the horizontal view), Y
// one fault-type token, w1..wn the explanation. A unit whose step is normal ends after H.
// Every position sees itself and the positions before it (causal, as a language model);
// no modality has a path of its own, unlike the MoT. Trace tokens are embedded from what
// the TPE gives them (token, depth, the two log-duration channels) plus the rank they
// belong to; log words and answers share one embedding. At inference the answers are
// projected onto the schema by decoding under constraints: V and H only <yes>/<no> (their
// probability is P(abnormal)), <fault_type> and </fault_type> forced, Y only a fault type
// (their distribution is the fault head), words only vocabulary words. Loss: BCE on V and H
// (positives weighed as the other networks do) + lambda_f CE(Y) + lambda_r NLL(the rest).
// Every libtorch call runs inside a try block.
#include <algorithm>
#include <numeric>
#include <sstream>

#include "src/rca/text.h"
#include "src/rca/torch_encoder.h"
#include "src/rca/torch_transformer.h"

namespace teller::rca::internal {
namespace {

// Answer tokens follow the text vocabulary's ids: <no>, <yes>, <fault_type>, </fault_type>,
// then one per fault category.
constexpr int64_t kNo = 0, kYes = 1, kOpen = 2, kClose = 3, kFirstFault = 4;
constexpr int64_t kAnswers = kFirstFault + kFaultCategoryCount;
// Answer positions before the explanation: <bos> V H <fault_type> Y </fault_type>.
constexpr int64_t kHeader = 6;
// The gradients' global norm is clipped to this before each step: without it, training on
// the paper preset ran from a loss of 0.21 at epoch 27 back up to 0.64 at epoch 29.
constexpr double kClipNorm = 1.0;

struct SingleImpl : torch::nn::Module {
  SingleImpl(const ModelConfig& c, int64_t vocab, int64_t words) {
    const int64_t w = c.width;
    token = register_module("token", torch::nn::Embedding(vocab, w));
    depth = register_module("depth", torch::nn::Embedding(c.max_depth, w));
    duration1 = register_module("duration1", torch::nn::Linear(2, w));
    duration2 = register_module("duration2", torch::nn::Linear(w, w));
    rank = register_module("rank", torch::nn::Embedding(c.max_ranks, w));
    text = register_module("text", torch::nn::Embedding(words + kAnswers, w));
    segment = register_module("segment", torch::nn::Embedding(3, w));
    const int64_t positions = std::max<int64_t>(
        {c.max_trace_tokens, c.max_log_tokens, c.max_explanation_tokens + kHeader + 1});
    position = register_module("position", torch::nn::Embedding(positions, w));
    for (int l = 0; l < c.mot_layers; ++l) {
      blocks.push_back(
          register_module("block" + std::to_string(l), Block(w, c.heads, /*modalities=*/1)));
    }
    final_norm = register_module("final", torch::nn::LayerNorm(torch::nn::LayerNormOptions({w})));
    lm = register_module("lm", torch::nn::Linear(w, words + kAnswers));
    // The evidence head (docs/rca.md, "Evidence head"), on the trace tokens' outputs.
    if (c.evidence_head) evidence = register_module("evidence", torch::nn::Linear(w, kViewsCount));
    // Small embeddings beside the duration channels, as in the trace encoder: a slowed
    // operator's relative log-duration must not drown in the token identities.
    torch::NoGradGuard no_grad;
    for (auto* e : {&token, &depth, &rank, &text, &segment, &position})
      torch::nn::init::normal_((*e)->weight, 0, 0.02);
  }
  torch::nn::Embedding token{nullptr}, depth{nullptr}, rank{nullptr}, text{nullptr},
      segment{nullptr}, position{nullptr};
  torch::nn::Linear duration1{nullptr}, duration2{nullptr}, lm{nullptr}, evidence{nullptr};
  std::vector<Block> blocks;
  torch::nn::LayerNorm final_norm{nullptr};
};
TORCH_MODULE(Single);

// The trace tokens of one step that the sequence holds: every rank's root (its STEP token)
// and, up to `budget` in all, the tokens that ran longest against their usual duration
// (the `relative` channel, largest first, earlier first on ties), in their original order.
// A step's tokens are often more than a context can hold; the ones kept are those a reader
// looking for a fault would read first.
std::vector<int64_t> KeptTokens(const EncodedStep& s, int64_t budget) {
  const auto n = static_cast<int64_t>(s.size());
  std::vector<int64_t> kept;
  if (n <= budget) {
    kept.resize(static_cast<size_t>(n));
    std::iota(kept.begin(), kept.end(), 0);
    return kept;
  }
  std::vector<int64_t> rest;
  for (int64_t i = 0; i < n; ++i) {
    if (s.parent[i] < 0 && static_cast<int64_t>(kept.size()) < budget) {
      kept.push_back(i);
    } else {
      rest.push_back(i);
    }
  }
  const auto room = static_cast<size_t>(budget) - kept.size();
  std::stable_sort(rest.begin(), rest.end(),
                   [&](int64_t a, int64_t b) { return s.relative[a] > s.relative[b]; });
  kept.insert(kept.end(), rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(room));
  std::sort(kept.begin(), kept.end());
  return kept;
}

class SingleNetwork final : public TextNetwork<Single> {
 public:
  SingleNetwork(const ModelConfig& c, uint32_t vocab, uint32_t words, uint64_t seed)
      : TextNetwork(/*predict_batch=*/32, kClipNorm), config_(c), words_(words) {
    OneThread();
    torch::manual_seed(seed);
    net_ = Single(c, static_cast<int64_t>(vocab), static_cast<int64_t>(words));
  }

 private:
  int64_t Answer(int64_t k) const { return static_cast<int64_t>(words_) + k; }

  // The condition of a batch: the trace and log tokens embedded, [B, T + L, W], which
  // positions hold a token ([B, T + L]; rows are padded at the end of each part), and per
  // row the step's tokens at trace positions 0.. (KeptTokens).
  struct Conditioned {
    torch::Tensor x, present;
    std::vector<std::vector<int64_t>> kept;
    int64_t trace_positions = 1;  // T
  };
  Conditioned Condition(const std::vector<const Example*>& bx) const {
    const auto rows = static_cast<int64_t>(bx.size());
    std::vector<std::vector<int64_t>> kept;
    int64_t t = 1, l = 1;
    for (const Example* e : bx) {
      kept.push_back(KeptTokens(*e->step, config_.max_trace_tokens));
      t = std::max<int64_t>(t, static_cast<int64_t>(kept.back().size()));
      l = std::max<int64_t>(
          l, std::min<int64_t>(static_cast<int64_t>(e->log.size()), config_.max_log_tokens));
    }
    std::vector<int64_t> token(rows * t, 0), depth(rows * t, 0), slot(rows * t, 0);
    std::vector<float> duration(rows * t * 2, 0.0f);
    std::vector<uint8_t> trace_present(rows * t, 0), log_present(rows * l, 0);
    std::vector<int64_t> log(rows * l, TextVocabulary::kPad);
    for (int64_t r = 0; r < rows; ++r) {
      const EncodedStep& s = *bx[r]->step;
      // The rank of every token: roots open a rank's tokens (depth-first order per rank).
      std::vector<int64_t> rank_of(s.size(), 0);
      int64_t roots = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s.parent[i] < 0) ++roots;
        rank_of[i] = std::clamp<int64_t>(roots - 1, 0, config_.max_ranks - 1);
      }
      for (size_t k = 0; k < kept[r].size(); ++k) {
        const int64_t i = kept[r][k];
        const int64_t at = r * t + static_cast<int64_t>(k);
        token[at] = s.token[i];
        depth[at] = std::clamp<int64_t>(s.depth[i], 0, config_.max_depth - 1);
        slot[at] = rank_of[i];
        duration[2 * at] = s.log_duration[i];
        duration[2 * at + 1] = s.relative[i];
        trace_present[at] = 1;
      }
      const std::vector<int64_t>& words = bx[r]->log;
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(words.size()), l);
      for (int64_t k = 0; k < n; ++k) {
        log[r * l + k] = words[k];
        log_present[r * l + k] = 1;
      }
    }
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    auto ids = [&](std::vector<int64_t>& v, int64_t cols) {
      return torch::from_blob(v.data(), {rows, cols}, i64).clone();
    };
    const torch::Tensor dur = torch::from_blob(duration.data(), {rows, t, 2}).clone();
    const torch::Tensor trace =
        net_->token(ids(token, t)) + net_->depth(ids(depth, t)) + net_->rank(ids(slot, t)) +
        net_->duration2(torch::relu(net_->duration1(dur))) +
        net_->position(torch::arange(t, i64)).unsqueeze(0) + net_->segment->weight[0];
    const torch::Tensor words = net_->text(ids(log, l)) +
                                net_->position(torch::arange(l, i64)).unsqueeze(0) +
                                net_->segment->weight[1];
    const torch::Tensor present =
        torch::cat({torch::from_blob(trace_present.data(), {rows, t}, torch::kUInt8).clone(),
                    torch::from_blob(log_present.data(), {rows, l}, torch::kUInt8).clone()},
                   1)
            .to(torch::kBool);
    return {torch::cat({trace, words}, 1), present, std::move(kept), t};
  }

  // The evidence head's loss on the trace positions' outputs y [B, T, W]: the kept tokens'
  // outputs, rows concatenated, against their step tokens' targets (EvidenceLoss).
  torch::Tensor EvidenceLossOfKept(const torch::Tensor& y, const Conditioned& c,
                                   const std::vector<const Target*>& by) const {
    std::vector<int64_t> sizes;
    std::vector<Target> kept(by.size());
    std::vector<const Target*> targets;
    for (size_t r = 0; r < by.size(); ++r) {
      sizes.push_back(static_cast<int64_t>(c.kept[r].size()));
      for (int v = 0; v < kViewsCount; ++v) {
        if (by[r]->evidence[v].empty()) continue;
        for (const int64_t i : c.kept[r])
          kept[r].evidence[v].push_back(by[r]->evidence[v][static_cast<size_t>(i)]);
      }
      targets.push_back(&kept[r]);
    }
    // Kept tokens fill each row's first trace positions: the trace part of `present`.
    const torch::Tensor outputs = y.index({c.present.narrow(1, 0, c.trace_positions)});
    return EvidenceLoss(net_->evidence(outputs), sizes, targets, evidence_pw_);
  }

  // Answer tokens [B, A] embedded at answer positions `from`.. (<bos> is position 0).
  torch::Tensor Answers(const torch::Tensor& ids, int64_t from) const {
    const torch::Tensor pos = torch::arange(from, from + ids.size(1), torch::kInt64);
    return net_->text(ids) + net_->position(pos).unsqueeze(0) + net_->segment->weight[2];
  }

  torch::Tensor Loss(const std::vector<const Example*>& bx, const std::vector<const Target*>& by,
                     const torch::Tensor& pw, const TrainOptions& options) const override {
    const auto rows = static_cast<int64_t>(bx.size());
    const Conditioned cond = Condition(bx);
    const torch::Tensor& condition = cond.x;
    const torch::Tensor& present = cond.present;
    std::vector<std::vector<int64_t>> inputs, targets;
    std::vector<float> labels;
    std::vector<int64_t> fault;
    const auto cap = static_cast<size_t>(config_.max_explanation_tokens);
    for (const Target* t : by) {
      for (int v = 0; v < kViewsCount; ++v) labels.push_back(t->abnormal[v]);
      fault.push_back(t->fault);
      const int64_t v = Answer(t->abnormal[0] > 0.5f ? kYes : kNo);
      const int64_t h = Answer(t->abnormal[1] > 0.5f ? kYes : kNo);
      // Teacher forcing. Position 0 predicts V, 1 H, 2 <fault_type> (or the end of a normal
      // unit's answer), 3 Y, 4 </fault_type>, then the words and <eos>.
      std::vector<int64_t> in{TextVocabulary::kBos, v, h}, out{v, h};
      if (t->fault >= 0) {
        const int64_t y = Answer(kFirstFault + t->fault);
        in.insert(in.end(), {Answer(kOpen), y, Answer(kClose)});
        out.insert(out.end(), {Answer(kOpen), y, Answer(kClose)});
        if (!t->explanation.empty()) {
          const size_t n = std::min(cap, t->explanation.size());
          in.insert(in.end(), t->explanation.begin(),
                    t->explanation.begin() + static_cast<std::ptrdiff_t>(n));
          out.insert(out.end(), t->explanation.begin(),
                     t->explanation.begin() + static_cast<std::ptrdiff_t>(n));
          out.push_back(TextVocabulary::kEos);
        } else {
          out.push_back(-100);  // no reference explanation: what follows is not taught
        }
      } else {
        out.push_back(TextVocabulary::kEos);
      }
      inputs.push_back(std::move(in));
      targets.push_back(std::move(out));
    }
    const torch::Tensor input = PaddedRows(inputs, TextVocabulary::kPad);
    const torch::Tensor target = PaddedRows(targets, -100);
    const int64_t c = condition.size(1), a = input.size(1), s = c + a;
    const torch::Tensor x = torch::cat({condition, Answers(input, 0)}, 1);
    const torch::Tensor key = torch::cat({present, input.ne(TextVocabulary::kPad)}, 1);
    const torch::Tensor i = torch::arange(s, torch::kInt64).unsqueeze(1);
    const torch::Tensor j = torch::arange(s, torch::kInt64).unsqueeze(0);
    const torch::Tensor allowed = j.le(i).unsqueeze(0).logical_and(key.unsqueeze(1)).unsqueeze(1);
    torch::Tensor y = x;
    for (Block& block : net_->blocks) y = block->forward(y, 0, allowed);
    const torch::Tensor logits = net_->lm(net_->final_norm(y.narrow(1, c, a)));  // [B, A, V]
    // The verdicts: <yes> against <no> at positions 0 and 1.
    const torch::Tensor yes_no = logits.narrow(1, 0, 2);
    const torch::Tensor verdict = yes_no.select(2, Answer(kYes)) - yes_no.select(2, Answer(kNo));
    const torch::Tensor label = torch::from_blob(labels.data(), {rows, kViewsCount}).clone();
    torch::Tensor loss = torch::binary_cross_entropy_with_logits(verdict, label, {}, pw);
    // The fault type among the fault tokens, at position 3 of the units that have one.
    const torch::Tensor f = torch::from_blob(fault.data(), {rows}, torch::kInt64).clone();
    const torch::Tensor has = f.ge(0);
    if (has.any().item<bool>()) {
      const torch::Tensor idx = has.nonzero().squeeze(1);
      const torch::Tensor faults = logits.index_select(0, idx).select(1, 3).narrow(
          1, Answer(kFirstFault), kFaultCategoryCount);
      loss = loss + options.fault_weight *
                        torch::nn::functional::cross_entropy(faults, f.index_select(0, idx));
    }
    // The rest: the answer's frame, the explanation and its end.
    torch::Tensor rest = target.clone();
    rest.narrow(1, 0, 2).fill_(-100);
    if (a > 3) rest.select(1, 3).fill_(-100);
    if (rest.ne(-100).any().item<bool>()) {
      loss = loss + options.explanation_weight *
                        torch::nn::functional::cross_entropy(
                            logits.reshape({-1, logits.size(2)}), rest.reshape({-1}),
                            torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
    }
    if (net_->evidence) {
      const torch::Tensor e =
          EvidenceLossOfKept(net_->final_norm(y.narrow(1, 0, cond.trace_positions)), cond, by);
      if (e.defined()) loss = loss + options.evidence_weight * e;
    }
    return loss;
  }

  // One batch decoded under the schema's constraints, appended to `out`. The condition and
  // <bos> run through the layers once, keeping every layer's keys and values; then each
  // answer token runs alone against them (a key/value cache). A unit read as normal in both
  // views is still asked for its fault type and explanation, as if its horizontal verdict
  // were <yes>: `teller eval` calls a step abnormal from a threshold on P(abnormal) that may
  // lie below one half, and such a step needs them.
  void Generate(const std::vector<const Example*>& bx, std::vector<Output>* out) const override {
    const auto rows = static_cast<int64_t>(bx.size());
    const Conditioned cond = Condition(bx);
    const torch::Tensor& condition = cond.x;
    const torch::Tensor& present = cond.present;
    const torch::Tensor bos = torch::full({rows, 1}, TextVocabulary::kBos, torch::kInt64);
    const torch::Tensor x = torch::cat({condition, Answers(bos, 0)}, 1);
    torch::Tensor keys = torch::cat({present, torch::ones({rows, 1}, torch::kBool)}, 1);
    const int64_t s = x.size(1);
    const torch::Tensor i = torch::arange(s, torch::kInt64).unsqueeze(1);
    const torch::Tensor j = torch::arange(s, torch::kInt64).unsqueeze(0);
    const torch::Tensor allowed = j.le(i).unsqueeze(0).logical_and(keys.unsqueeze(1)).unsqueeze(1);
    const size_t layers = net_->blocks.size();
    std::vector<torch::Tensor> cache_k(layers), cache_v(layers);
    torch::Tensor y = x;
    for (size_t n = 0; n < layers; ++n) {
      y = net_->blocks[n]->Run(y, 0, allowed, {}, {}, &cache_k[n], &cache_v[n]);
    }
    // Logits of the last position's output, [B, V].
    auto logits_of = [&](const torch::Tensor& h) {
      return net_->lm(net_->final_norm(h.select(1, h.size(1) - 1))).clone();
    };
    torch::Tensor next = logits_of(y);
    // The evidence head on the trace positions (causal: each sees the tokens before it),
    // [B, T, views]; a token not kept reads 0.
    torch::Tensor evidence;
    if (net_->evidence) {
      evidence =
          torch::sigmoid(net_->evidence(net_->final_norm(y.narrow(1, 0, cond.trace_positions))))
              .contiguous();
    }
    int64_t position = 0;
    // Feeds one answer token per row (ids [B]) and returns the logits that follow it.
    auto feed = [&](const std::vector<int64_t>& ids) {
      std::vector<int64_t> copy = ids;
      const torch::Tensor t = torch::from_blob(copy.data(), {rows, 1}, torch::kInt64).clone();
      torch::Tensor h = Answers(t, ++position);
      keys = torch::cat({keys, torch::ones({rows, 1}, torch::kBool)}, 1);
      const torch::Tensor see = keys.unsqueeze(1).unsqueeze(1);  // [B, 1, 1, K]
      for (size_t n = 0; n < layers; ++n) {
        h = net_->blocks[n]->Run(h, 0, see, cache_k[n], cache_v[n], &cache_k[n], &cache_v[n]);
      }
      return logits_of(h);
    };
    auto verdict = [&](const torch::Tensor& logits) {
      return torch::sigmoid(logits.select(1, Answer(kYes)) - logits.select(1, Answer(kNo)))
          .contiguous();
    };
    const torch::Tensor pv = verdict(next);
    std::vector<int64_t> v(rows), h(rows);
    for (int64_t r = 0; r < rows; ++r) v[r] = Answer(pv.data_ptr<float>()[r] >= 0.5f ? kYes : kNo);
    const torch::Tensor ph = verdict(feed(v));
    for (int64_t r = 0; r < rows; ++r) {
      // <yes> when so read, and when V was <no> (both <no>: read on as abnormal, above).
      const bool yes = ph.data_ptr<float>()[r] >= 0.5f || v[r] == Answer(kNo);
      h[r] = Answer(yes ? kYes : kNo);
    }
    feed(h);
    const torch::Tensor fault_logits = feed(std::vector<int64_t>(rows, Answer(kOpen)))
                                           .narrow(1, Answer(kFirstFault), kFaultCategoryCount);
    const torch::Tensor pf = torch::softmax(fault_logits, 1).contiguous();
    const torch::Tensor pick = fault_logits.argmax(1).contiguous();
    std::vector<int64_t> y_ids(rows);
    for (int64_t r = 0; r < rows; ++r) y_ids[r] = Answer(kFirstFault + pick.data_ptr<int64_t>()[r]);
    feed(y_ids);
    next = feed(std::vector<int64_t>(rows, Answer(kClose)));
    // The explanation: vocabulary words only, until <eos> or max_explanation_tokens.
    std::vector<std::vector<int64_t>> words(bx.size());
    std::vector<uint8_t> done(bx.size(), 0);
    for (int step = 0; step < config_.max_explanation_tokens; ++step) {
      for (int64_t banned : {TextVocabulary::kPad, TextVocabulary::kBos, TextVocabulary::kLine}) {
        next.select(1, banned).fill_(-1e9);
      }
      next.narrow(1, Answer(0), kAnswers).fill_(-1e9);
      const torch::Tensor choice = next.argmax(1).contiguous();
      const int64_t* p = choice.data_ptr<int64_t>();
      std::vector<int64_t> current(rows);
      bool all = true;
      for (int64_t r = 0; r < rows; ++r) {
        current[r] = p[r];
        if (!done[r]) {
          if (p[r] == TextVocabulary::kEos) {
            done[r] = 1;
          } else {
            words[r].push_back(p[r]);
          }
        }
        all = all && done[r];
      }
      if (all || step + 1 == config_.max_explanation_tokens) break;
      next = feed(current);
    }
    const float* pa_v = pv.data_ptr<float>();
    const float* pa_h = ph.data_ptr<float>();
    const float* pfault = pf.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
      Output o;
      o.heads.abnormal[0] = pa_v[r];
      o.heads.abnormal[1] = pa_h[r];
      for (int c = 0; c < kFaultCategoryCount; ++c)
        o.heads.fault[c] = pfault[r * kFaultCategoryCount + c];
      o.explanation = std::move(words[r]);
      if (evidence.defined()) {
        const float* pe = evidence.data_ptr<float>();
        for (int v = 0; v < kViewsCount; ++v) {
          o.evidence[v].assign(bx[r]->step->size(), 0.0f);
          for (size_t k = 0; k < cond.kept[r].size(); ++k) {
            o.evidence[v][static_cast<size_t>(cond.kept[r][k])] =
                pe[(r * cond.trace_positions + static_cast<int64_t>(k)) * kViewsCount + v];
          }
        }
      }
      out->push_back(std::move(o));
    }
  }

  ModelConfig config_;
  uint32_t words_;
};

}  // namespace

Network* NewSingleNetwork(const ModelConfig& config, uint32_t vocab, uint32_t text_vocab,
                          uint64_t seed) {
  return new SingleNetwork(config, vocab, text_vocab, seed);
}

}  // namespace teller::rca::internal
