// The service log of a simulated run, in each engine's own format
// (docs/serving-notes.md §3): start-up lines, per-request lines, periodic statistics,
// batch lines and the warnings some faults produce. Lines are stamped later, when the
// file is written, with the capture time `teller run` would have given them.
#include <cstdio>
#include <ctime>

#include "src/sim/engine.h"

namespace teller::sim {
namespace {

// "MM-DD HH:MM:SS" (vLLM) or "YYYY-MM-DD HH:MM:SS" (SGLang, Python logging).
std::string WallClock(int64_t real_ns, bool with_year, bool with_ms) {
  const time_t secs = static_cast<time_t>(real_ns / kSec);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[64];
  if (with_year) {
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &utc);
  } else {
    std::strftime(buf, sizeof buf, "%m-%d %H:%M:%S", &utc);
  }
  std::string out = buf;
  if (with_ms) {
    char ms[8];
    std::snprintf(ms, sizeof ms, ",%03d", static_cast<int>((real_ns / kMs) % 1000));
    out += ms;
  }
  return out;
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

// Headers per style. `who` is the process prefix for vLLM ("APIServer", "EngineCore_DP0").
static std::string VllmLine(const Run& run, LogStyle style, int64_t real_ns, const char* level,
                            const std::string& who, int64_t pid, const char* file, int line,
                            const std::string& msg) {
  std::string out;
  if (!who.empty()) out += "(" + who + " pid=" + std::to_string(pid) + ") ";
  out += level;
  out += ' ';
  out += WallClock(real_ns, false, false);
  char loc[96];
  if (style == LogStyle::kVllmV0) {
    std::snprintf(loc, sizeof loc, " %s:%d] ", file, line);
  } else {
    std::snprintf(loc, sizeof loc, " [%s:%d] ", file, line);
  }
  out += loc;
  out += msg;
  (void)run;
  return out;
}

void Run::LogStartup(int64_t t) {
  const LogStyle style = profile_.log_style;
  const int64_t real = clocks_[0].Real(t);
  const int64_t engine_pid = ranks_[0].pid;
  auto add = [&](int64_t at, int node, std::string text) {
    logs_.push_back(LogLine{at, node, std::move(text)});
  };
  const std::string par = "tensor_parallel_size=" + std::to_string(config_.tp) +
                          ", pipeline_parallel_size=" + std::to_string(config_.pp);
  switch (style) {
    case LogStyle::kVllmV1Online:
    case LogStyle::kVllmV1Offline:
    case LogStyle::kVllmV0: {
      const bool v0 = style == LogStyle::kVllmV0;
      const bool online = style == LogStyle::kVllmV1Online;
      const std::string api = online ? "APIServer" : "";
      const std::string core = v0 ? "" : "EngineCore_DP0";
      add(t - 40 * kSec, 0,
          VllmLine(*this, style, real - 40 * kSec, "INFO", api, api_pid_,
                   online ? "api_server.py" : "llm.py", online ? 1839 : 243,
                   std::string(v0 ? "vLLM version 0.6.3" : "vLLM API server version 0.11.0")));
      add(t - 39 * kSec, 0,
          VllmLine(*this, style, real - 39 * kSec, "INFO", core, engine_pid,
                   v0 ? "llm_engine.py" : "core.py", v0 ? 237 : 93,
                   std::string("Initializing ") +
                       (v0 ? "an LLM engine (v0.6.3)" : "a V1 LLM engine (v0.11.0)") +
                       " with config: model='" + profile_.model + "', dtype=torch.bfloat16, " +
                       par +
                       ", max_num_batched_tokens=" + std::to_string(config_.max_batched_tokens)));
      if (!v0) {
        add(t - 38 * kSec, 0,
            VllmLine(*this, style, real - 38 * kSec, "INFO", "", 0, "config.py", 2118,
                     "Chunked prefill is enabled with max_num_batched_tokens=" +
                         std::to_string(config_.max_batched_tokens) + "."));
      }
      for (const RankOut& r : ranks_) {
        const std::string worker =
            v0 ? (r.rank == 0 ? "" : "VllmWorkerProcess")
               : "Worker_PP" + std::to_string(r.pp_rank) + "_TP" + std::to_string(r.tp_rank);
        add(t - 30 * kSec + r.rank * 40 * kMs, r.node,
            VllmLine(*this, style, clocks_[static_cast<size_t>(r.node)].Real(t - 30 * kSec), "INFO",
                     worker, r.pid, v0 ? "model_runner.py" : "gpu_model_runner.py",
                     v0 ? 1072 : 2602,
                     "Model loading took " + Fmt("%.2f", 28.0 / (config_.tp * config_.pp)) +
                         " GiB and " + Fmt("%.6f", 11.5 + 0.1 * r.rank) + " seconds"));
      }
      add(t - 20 * kSec, 0,
          VllmLine(*this, style, real - 20 * kSec, "INFO", core, engine_pid, "kv_cache_utils.py",
                   1087,
                   "GPU KV cache size: " + std::to_string(kv_blocks_ * kBlockTokens) + " tokens"));
      add(t - 12 * kSec, 0,
          VllmLine(*this, style, real - 12 * kSec, "INFO", core, engine_pid,
                   v0 ? "model_runner.py" : "gpu_model_runner.py", v0 ? 1518 : 3480,
                   "Graph capturing finished in 6 secs, took 0.58 GiB"));
      if (online) {
        add(t - 2 * kSec, 0,
            VllmLine(*this, style, real - 2 * kSec, "INFO", api, api_pid_, "api_server.py", 1895,
                     "Starting vLLM API server 0 on http://0.0.0.0:8000"));
        add(t - 2 * kSec + kMs, 0,
            "(APIServer pid=" + std::to_string(api_pid_) +
                ") INFO:     Application startup complete.");
      }
      break;
    }
    case LogStyle::kSglang: {
      add(t - 40 * kSec, 0,
          "[" + WallClock(real - 40 * kSec, true, false) + "] server_args=ServerArgs(model_path='" +
              profile_.model + "', tp_size=" + std::to_string(config_.tp) +
              ", pp_size=" + std::to_string(config_.pp) + ", chunked_prefill_size=" +
              std::to_string(config_.max_batched_tokens) + ", log_requests=True)");
      for (const RankOut& r : ranks_) {
        const std::string tag =
            "PP" + std::to_string(r.pp_rank) + " TP" + std::to_string(r.tp_rank);
        const int64_t rr = clocks_[static_cast<size_t>(r.node)].Real(t - 25 * kSec);
        add(t - 25 * kSec + r.rank * 30 * kMs, r.node,
            "[" + WallClock(rr, true, false) + " " + tag +
                "] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=61.22 "
                "GB, mem usage=" +
                Fmt("%.2f", 28.0 / (config_.tp * config_.pp)) + " GB.");
        add(t - 15 * kSec + r.rank * 30 * kMs, r.node,
            "[" + WallClock(rr + 10 * kSec, true, false) + " " + tag +
                "] KV Cache is allocated. #tokens: " + std::to_string(kv_blocks_ * kBlockTokens) +
                ", K size: 15.87 GB, V size: 15.87 GB");
      }
      add(t - 2 * kSec, 0,
          "[" + WallClock(real - 2 * kSec, true, false) +
              "] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)");
      break;
    }
    case LogStyle::kTorch:
      for (const RankOut& r : ranks_) {
        add(t - 20 * kSec + r.rank * 10 * kMs, r.node,
            "[rank" + std::to_string(r.rank) + "]:[W" +
                WallClock(clocks_[static_cast<size_t>(r.node)].Real(t - 20 * kSec), false, false)
                    .substr(0, 2) +
                WallClock(clocks_[static_cast<size_t>(r.node)].Real(t - 20 * kSec), false, false)
                    .substr(3) +
                ".000000000 ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 Rank " +
                std::to_string(r.rank) + "]  using GPU " + std::to_string(r.local) +
                " to perform barrier as devices used by this process are currently unknown.");
      }
      add(t - 5 * kSec, 0,
          WallClock(real - 5 * kSec, true, true) + " INFO serve.py:41 rank0: FSDP model " +
              profile_.model + " sharded over " + std::to_string(ranks_.size()) + " ranks, ready");
      break;
  }
  for (const ActiveFault& f : faults_) {
    if (f.onset > t + kSec) continue;  // configuration faults announce themselves at start-up
    if (f.info->mechanism == Mechanism::kFallbackKernel) {
      add(t - 10 * kSec, 0,
          style == LogStyle::kSglang
              ? "[" + WallClock(real - 10 * kSec, true, false) + "] " +
                    profile_.fallback_sampler_note
              : VllmLine(*this, style, real - 10 * kSec, "WARNING", "", 0, "topk_topp_sampler.py",
                         63, profile_.fallback_sampler_note));
    } else if (f.info->mechanism == Mechanism::kNcclFallback && style != LogStyle::kSglang &&
               style != LogStyle::kTorch) {
      add(t - 11 * kSec, 0,
          VllmLine(*this, style, real - 11 * kSec, "WARNING", "", 0, "custom_all_reduce.py", 144,
                   "Custom allreduce is disabled because your platform lacks GPU P2P capability "
                   "or P2P test failed. To silence this warning, specify "
                   "disable_custom_all_reduce=True explicitly."));
    }
  }
}

void Run::LogArrival(const Request& r) {
  const int64_t real = clocks_[0].Real(r.arrival);
  switch (profile_.log_style) {
    case LogStyle::kVllmV1Online:
      logs_.push_back(
          {r.arrival, 0,
           VllmLine(
               *this, profile_.log_style, real, "INFO", "APIServer", api_pid_, "logger.py", 49,
               "Received request " + r.external_id +
                   ": params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
                   "repetition_penalty=1.0, temperature=0.7, top_p=0.8, top_k=20, min_p=0.0, "
                   "seed=None, max_tokens=" +
                   std::to_string(r.output) +
                   ", min_tokens=0, skip_special_tokens=True), prompt_token_ids: None, "
                   "prompt_embeds shape: None, lora_request: None.")});
      logs_.push_back({r.arrival + 300 * kUs, 0,
                       VllmLine(*this, profile_.log_style, real, "INFO", "APIServer", api_pid_,
                                "async_llm.py", 382, "Added request " + r.id + ".")});
      break;
    case LogStyle::kVllmV0:
      logs_.push_back({r.arrival, 0,
                       VllmLine(*this, profile_.log_style, real, "INFO", "", 0,
                                "async_llm_engine.py", 208, "Added request " + r.id + ".")});
      break;
    case LogStyle::kSglang:
      logs_.push_back(
          {r.arrival, 0,
           "[" + WallClock(real, true, false) + "] Receive: obj=GenerateReqInput(rid='" + r.id +
               "', text=None, input_ids=[..." + std::to_string(r.prompt) +
               " ids...], sampling_params={'max_new_tokens': " + std::to_string(r.output) +
               ", 'temperature': 0.7}, stream=False)"});
      break;
    case LogStyle::kTorch:
      logs_.push_back({r.arrival, 0,
                       WallClock(real, true, true) + " INFO serve.py:88 rank0: queued request " +
                           r.id + " (prompt_tokens=" + std::to_string(r.prompt) +
                           ", max_new_tokens=" + std::to_string(r.output) + ")"});
      break;
    case LogStyle::kVllmV1Offline:
      break;  // LLM.generate logs no per-request lines
  }
}

void Run::LogAdmitted(const Request& r, int64_t t) {
  if (profile_.log_style == LogStyle::kTorch && r.preemptions == 0) {
    logs_.push_back({t, 0,
                     WallClock(clocks_[0].Real(t), true, true) +
                         " INFO serve.py:97 rank0: admitted request " + r.id + " to the batch"});
  }
}

void Run::LogFinished(const Request& r, int64_t t) {
  const int64_t real = clocks_[0].Real(t);
  const double e2e = static_cast<double>(t - r.arrival) / kSec;
  switch (profile_.log_style) {
    case LogStyle::kVllmV1Online:
      logs_.push_back({t + 400 * kUs, 0,
                       "(APIServer pid=" + std::to_string(api_pid_) +
                           ") INFO:     127.0.0.1:" + std::to_string(40000 + r.index % 20000) +
                           " - \"POST /v1/chat/completions HTTP/1.1\" 200 OK"});
      break;
    case LogStyle::kVllmV0:
      logs_.push_back({t, 0,
                       VllmLine(*this, profile_.log_style, real, "INFO", "", 0,
                                "async_llm_engine.py", 176, "Finished request " + r.id + ".")});
      break;
    case LogStyle::kSglang:
      logs_.push_back(
          {t, 0,
           "[" + WallClock(real, true, false) + "] Finish: obj=GenerateReqInput(rid='" + r.id +
               "'), out={'meta_info': {'id': '" + r.id +
               "', 'finish_reason': {'type': 'length', 'length': " + std::to_string(r.output) +
               "}, 'prompt_tokens': " + std::to_string(r.prompt) +
               ", 'completion_tokens': " + std::to_string(r.output) +
               ", 'cached_tokens': 0, 'e2e_latency': " + Fmt("%.4f", e2e) + "}}"});
      break;
    case LogStyle::kTorch:
      logs_.push_back({t, 0,
                       WallClock(real, true, true) + " INFO serve.py:131 rank0: finished request " +
                           r.id + ": " + std::to_string(r.output) + " tokens in " +
                           Fmt("%.3f", e2e) + " s"});
      break;
    case LogStyle::kVllmV1Offline: {
      int done = 0;
      for (const Request& q : requests_) done += q.state == Request::State::kFinished;
      if (done % 5 == 0 || done == static_cast<int>(requests_.size())) {
        const double elapsed = static_cast<double>(t - requests_.front().arrival) / kSec;
        const int n = static_cast<int>(requests_.size());
        const int pct = 100 * done / n;
        std::string bar(10, ' ');
        for (int i = 0; i < pct / 10; ++i) bar[static_cast<size_t>(i)] = '#';
        logs_.push_back({t, 0,
                         "Processed prompts: " + std::to_string(pct) + "%|" + bar + "| " +
                             std::to_string(done) + "/" + std::to_string(n) +
                             " [00:" + Fmt("%02.0f", elapsed) + "<00:00, " +
                             Fmt("%.2f", done / std::max(elapsed, 1e-3)) + "it/s]"});
      }
      break;
    }
  }
}

void Run::LogStep(const StepPlan& plan, int64_t start, int64_t end) {
  if (profile_.log_style != LogStyle::kSglang) return;
  const int64_t real = clocks_[0].Real(end);
  int used = 0;
  for (int r : running_) used += requests_[static_cast<size_t>(r)].blocks;
  const double usage = kv_blocks_ > 0 ? static_cast<double>(used) / kv_blocks_ : 0;
  const double secs = std::max(1e-6, static_cast<double>(end - start) / kSec);
  if (plan.any_prefill) {
    int new_tokens = 0;
    for (size_t i = 0; i < plan.reqs.size(); ++i)
      new_tokens += plan.prefill[i] ? plan.tokens[i] : 0;
    logs_.push_back(
        {end, 0,
         "[" + WallClock(real, true, false) + " PP0 TP0] Prefill batch, #new-seq: " +
             std::to_string(plan.reqs.size()) + ", #new-token: " + std::to_string(new_tokens) +
             ", #cached-token: 0, token usage: " + Fmt("%.2f", usage) + ", #running-req: " +
             std::to_string(running_.size()) + ", #queue-req: " + std::to_string(waiting_.size()) +
             ", cuda graph: False, input throughput (token/s): " + Fmt("%.2f", new_tokens / secs)});
  } else if (decode_steps_ % 40 == 0) {
    logs_.push_back({end, 0,
                     "[" + WallClock(real, true, false) + " PP0 TP0] Decode batch, #running-req: " +
                         std::to_string(plan.reqs.size()) +
                         ", #token: " + std::to_string(used * kBlockTokens) + ", token usage: " +
                         Fmt("%.2f", usage) + ", cuda graph: True, gen throughput (token/s): " +
                         Fmt("%.2f", plan.reqs.size() / secs) +
                         ", #queue-req: " + std::to_string(waiting_.size())});
  }
}

void Run::LogPreempted(const Request& r, int64_t t) {
  const int64_t real = clocks_[0].Real(t);
  switch (profile_.log_style) {
    case LogStyle::kVllmV0:
      // vLLM v0 warns at the 1st, 51st, 101st... cumulative preemption.
      if (cumulative_preemptions_ % 50 == 1) {
        logs_.push_back(
            {t, 0,
             VllmLine(*this, profile_.log_style, real, "WARNING", "", 0, "scheduler.py", 1089,
                      "Sequence group " + r.id +
                          " is preempted by PreemptionMode.RECOMPUTE mode because there is not "
                          "enough KV cache space. This can affect the end-to-end performance. "
                          "Increase gpu_memory_utilization or tensor_parallel_size to provide more "
                          "KV cache memory. total_num_cumulative_preemption=" +
                          std::to_string(cumulative_preemptions_))});
      }
      break;
    case LogStyle::kSglang:
      // Every TP rank's scheduler retracts and says so.
      for (const RankOut& rank : ranks_) {
        if (rank.pp_rank != 0) continue;
        logs_.push_back(
            {t + rank.tp_rank * 50 * kUs, rank.node,
             "[" + WallClock(clocks_[static_cast<size_t>(rank.node)].Real(t), true, false) +
                 " PP0 TP" + std::to_string(rank.tp_rank) +
                 "] Decode out of memory happened. #retracted_reqs: 1, " +
                 "#new_token_ratio: " + Fmt("%.4f", 0.1474) + " -> " + Fmt("%.4f", 0.1845)});
      }
      break;
    case LogStyle::kTorch:
      logs_.push_back({t, 0,
                       WallClock(real, true, true) +
                           " WARNING serve.py:150 rank0: evicted request " + r.id +
                           " from the batch (KV cache full); it will be recomputed"});
      break;
    default:
      break;  // vLLM v1 counts preemptions in metrics only
  }
}

void Run::LogPeriodic(int64_t t) {
  const LogStyle style = profile_.log_style;
  if (style != LogStyle::kVllmV0 && style != LogStyle::kVllmV1Online) return;
  const int64_t interval = style == LogStyle::kVllmV0 ? 5 * kSec : 10 * kSec;
  if (next_stats_ == 0) next_stats_ = t + interval;
  if (t < next_stats_) return;
  const double secs = static_cast<double>(interval) / kSec;
  int used = 0;
  for (int r : running_) used += requests_[static_cast<size_t>(r)].blocks;
  const double usage = kv_blocks_ > 0 ? 100.0 * used / kv_blocks_ : 0;
  const int64_t real = clocks_[0].Real(t);
  const std::string head =
      "Avg prompt throughput: " + Fmt("%.1f", tokens_prompt_since_stats_ / secs) +
      " tokens/s, Avg generation throughput: " + Fmt("%.1f", tokens_gen_since_stats_ / secs) +
      " tokens/s, Running: " + std::to_string(running_.size()) + " reqs, ";
  if (style == LogStyle::kVllmV0) {
    logs_.push_back(
        {t, 0,
         VllmLine(*this, style, real, "INFO", "", 0, "metrics.py", 351,
                  head + "Swapped: 0 reqs, Pending: " + std::to_string(waiting_.size()) +
                      " reqs, GPU KV cache usage: " + Fmt("%.1f", usage) +
                      "%, CPU KV cache usage: 0.0%.")});
  } else {
    logs_.push_back(
        {t, 0,
         VllmLine(
             *this, style, real, "INFO", "APIServer", api_pid_, "loggers.py", 123,
             "Engine 000: " + head + "Waiting: " + std::to_string(waiting_.size()) +
                 " reqs, GPU KV cache usage: " + Fmt("%.1f", usage) + "%, Prefix cache hit rate: " +
                 Fmt("%.1f", prefix_queried_ > 0 ? 100.0 * prefix_hit_ / prefix_queried_ : 0.0) +
                 "%")});
  }
  tokens_prompt_since_stats_ = tokens_gen_since_stats_ = 0;
  while (next_stats_ <= t) next_stats_ += interval;
}

}  // namespace teller::sim
