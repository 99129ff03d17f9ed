// The engine's scheduler: continuous batching under a token budget with chunked prefill
// (vLLM v1), prefill-first batching (vLLM v0, SGLang) or static batches (plain PyTorch),
// KV-cache blocks with preemption by recomputation when they run out
// (docs/serving-notes.md §1). Scheduling faults (starvation, misrouting, KV pressure) act
// here.
#include <algorithm>
#include <cstdio>

#include "src/sim/engine.h"

namespace teller::sim {
namespace {

int BlocksFor(int tokens) { return (tokens + kBlockTokens - 1) / kBlockTokens; }

}  // namespace

int Run::FreeBlocks(int64_t now) const {
  int capacity = kv_blocks_;
  if (const ActiveFault* f = Active(Mechanism::kKvPressure, now)) {
    // Memory taken elsewhere (fragmentation, a leak, a co-located job) shrinks the pool.
    // Never below what the oldest running request needs to finish (or the whole pool
    // when nothing runs), so that the engine keeps making progress.
    int floor = capacity;
    if (!running_.empty()) {
      const Request& q = requests_[static_cast<size_t>(running_.front())];
      floor = BlocksFor(q.prompt + q.output);
    }
    capacity = std::max(static_cast<int>(capacity * (1.0 - std::min(0.9, f->spec.magnitude))),
                        std::min(capacity, floor));
  }
  int used = 0;
  for (int r : running_) used += requests_[r].blocks;
  return capacity - used;
}

bool Run::Schedule(int64_t now, StepPlan* plan) {
  while (next_arrival_ < requests_.size() && requests_[next_arrival_].arrival <= now) {
    Request& r = requests_[next_arrival_++];
    r.state = Request::State::kWaiting;
    r.computed = r.cached;  // a prefix-cache hit: its blocks are found, not computed
    prefix_queried_ += static_cast<uint64_t>(r.prompt);
    prefix_hit_ += static_cast<uint64_t>(r.cached);  // vLLM v1's stats line reports the rate
    waiting_.push_back(r.index);
    if (const ActiveFault* f = Active(Mechanism::kStarvation, r.arrival)) {
      // The scheduler's queue ordering skips this request (a priority or fairness bug):
      // later arrivals are served first.
      if (rng_.Chance(0.5)) {
        r.hold_until =
            r.arrival +
            static_cast<int64_t>(
                rng_.LogNormal(f->spec.magnitude * MagnitudeUnits::kStarvationSec, 0.3) * kSec);
      }
    }
    LogArrival(r);
  }
  if (running_.empty() && waiting_.empty()) return false;

  *plan = StepPlan{};
  plan->seq = next_seq_;
  int budget = config_.max_batched_tokens;
  int free = FreeBlocks(now);

  auto preempt = [&](int victim) {
    Request& v = requests_[victim];
    free += v.blocks;
    v.blocks = 0;
    v.computed = 0;  // recompute mode: the KV cache is rebuilt from prompt + output
    v.needs_recompute = true;
    ++v.preemptions;
    ++cumulative_preemptions_;
    v.state = Request::State::kWaiting;
    running_.erase(std::find(running_.begin(), running_.end(), victim));
    waiting_.insert(waiting_.begin(), victim);
    plan->preempted.push_back(victim);
    LogPreempted(v, now);
  };
  auto add = [&](int idx, int tokens, bool prefill) {
    plan->reqs.push_back(idx);
    plan->tokens.push_back(tokens);
    plan->prefill.push_back(prefill);
    plan->total_tokens += tokens;
    plan->any_prefill |= prefill;
    budget -= tokens;
  };
  // Tokens a request still has to (re)compute before it can decode.
  auto pending_prefill = [&](const Request& r) { return r.prompt + r.generated - r.computed; };

  // KV pressure: when the pool has shrunk below what running requests hold, the newest
  // are preempted until the rest fit (their blocks go back to the pool).
  while (free < 0 && running_.size() > 1) preempt(running_.back());
  // ... and memory spikes (activations, another tenant) reclaim blocks from the newest
  // half of the running requests every few hundred milliseconds.
  if (const ActiveFault* kv = Active(Mechanism::kKvPressure, now);
      kv != nullptr && now >= next_kv_spike_) {
    next_kv_spike_ = now + static_cast<int64_t>(rng_.LogNormal(0.15, 0.4) * kSec);
    for (size_t victims = running_.size() / 2; victims > 0 && running_.size() > 1; --victims) {
      preempt(running_.back());
    }
  }

  // A preemption burst (a healthy confounder; Run::Simulate draws it): the pool is short
  // for a moment and the newest quarter of the running requests is preempted, to be
  // recomputed later. Never labelled: the engine did what it should.
  bool burst_now = false;
  if (squeeze_pending_) {
    squeeze_pending_ = false;
    burst_now = true;
    Confounder c;
    c.record.kind = "preemption_burst";
    c.t = now;
    c.record.steps.push_back(plan->seq);
    for (size_t victims = std::max<size_t>(1, running_.size() / 4);
         victims > 0 && running_.size() > 1; --victims) {
      const int victim = running_.back();
      preempt(victim);
      c.reqs.push_back(victim);
      burst_preempted_[victim] = confounders_.size();
      preempted_by_.erase(victim);  // this recomputation is the burst's, not a fault's
    }
    c.record.detail = std::to_string(c.reqs.size()) + " requests preempted and recomputed";
    confounders_.push_back(std::move(c));
  }

  // Requests already running: decodes and unfinished prefill chunks.
  auto schedule_running = [&](bool allow_prefill_chunks) {
    for (size_t i = 0; i < running_.size(); ++i) {
      const int idx = running_[i];
      Request& r = requests_[idx];
      const int pending = pending_prefill(r);
      const bool is_prefill = pending > 1;
      if (is_prefill && !allow_prefill_chunks) continue;
      const int tokens = is_prefill ? std::min(pending, std::max(budget, 0)) : 1;
      if (tokens <= 0) continue;
      int need = BlocksFor(r.computed + tokens) - r.blocks;
      // Out of blocks: preempt the newest running request (vLLM's running.pop()).
      while (need > free && running_.size() > 1) {
        const int victim = running_.back();
        if (victim == idx) break;
        preempt(victim);
      }
      if (need > free) {
        preempt(idx);
        --i;
        continue;
      }
      free -= need;
      r.blocks += need;
      add(idx, tokens, is_prefill);
    }
  };
  // Admits waiting requests in FCFS order (skipping held ones) while they fit.
  auto admit = [&](int max_new) {
    bool misrouted_one = false;
    for (size_t i = 0; i < waiting_.size() && max_new > 0;) {
      const int idx = waiting_[i];
      Request& r = requests_[idx];
      if (r.hold_until > now || static_cast<int>(running_.size()) >= config_.max_running ||
          budget <= 0) {
        ++i;
        if (static_cast<int>(running_.size()) >= config_.max_running || budget <= 0) break;
        continue;
      }
      const ActiveFault* mis = r.needs_recompute ? nullptr : Active(Mechanism::kMisroute, now);
      const bool misroute = mis != nullptr && !misrouted_one && rng_.Chance(0.6);
      const int pending = pending_prefill(r);
      const int tokens = misroute ? 1 : std::min(pending, budget);
      const int need = BlocksFor((misroute ? r.prompt : r.computed) + tokens) - r.blocks;
      if (need > free) break;  // FCFS: do not overtake a request that does not fit
      free -= need;
      r.blocks += need;
      waiting_.erase(waiting_.begin() + static_cast<long>(i));
      running_.push_back(idx);
      r.state = Request::State::kRunning;
      if (r.needs_recompute) plan->recompute.push_back(idx);
      if (misroute) {
        // The request's prompt is treated as already computed: it is run as a decode of
        // one token over state it never filled (docs/method.md §9).
        r.computed = r.prompt;
        r.misrouted = true;
        misrouted_one = true;
        plan->misrouted.push_back(idx);
        add(idx, 1, false);
      } else {
        add(idx, tokens, true);
      }
      LogAdmitted(r, now);
      --max_new;
    }
  };

  switch (profile_.batch_policy) {
    case BatchPolicy::kMixedChunked:
      schedule_running(true);
      if (plan->preempted.empty()) admit(config_.max_running);
      break;
    case BatchPolicy::kPrefillFirst: {
      // A prefill step when waiting requests fit; else every running request decodes.
      const size_t before = running_.size();
      bool waiting_ready = false;
      for (int idx : waiting_) waiting_ready |= requests_[idx].hold_until <= now;
      // Not in the step that preempted (its victims wait at the head of the queue).
      if (waiting_ready && static_cast<int>(before) < config_.max_running && !burst_now)
        admit(config_.max_running);
      if (plan->reqs.empty()) schedule_running(true);
      break;
    }
    case BatchPolicy::kStatic:
      if (running_.empty()) {
        budget = 1 << 30;  // the whole batch is prefilled at once
        admit(8);
      } else {
        schedule_running(true);
      }
      break;
  }
  if (plan->reqs.empty()) return false;
  ++next_seq_;
  bool all_prefill = true, all_decode = true;
  for (bool p : plan->prefill) (p ? all_decode : all_prefill) = false;
  plan->kind = all_prefill ? "prefill" : all_decode ? "decode" : "mixed";
  return true;
}

void Run::FinishStep(const StepPlan& plan, int64_t end) {
  for (size_t i = 0; i < plan.reqs.size(); ++i) {
    Request& r = requests_[plan.reqs[i]];
    r.steps.push_back(plan.seq);
    if (r.first_step < 0) r.first_step = static_cast<int64_t>(plan.seq);
    r.computed += plan.tokens[i];
    if (plan.prefill[i]) {
      tokens_prompt_since_stats_ += static_cast<uint64_t>(plan.tokens[i]);
      if (r.computed < r.prompt + r.generated) continue;  // more chunks to come
      r.needs_recompute = false;
    }
    ++r.generated;  // the step's sampled token
    ++tokens_gen_since_stats_;
    if (r.generated >= r.output) {
      r.state = Request::State::kFinished;
      r.finished_at = end;
      r.blocks = 0;
      running_.erase(std::find(running_.begin(), running_.end(), r.index));
      LogFinished(r, end);
    }
  }
  if (plan.kind == "decode") ++decode_steps_;
}

}  // namespace teller::sim
