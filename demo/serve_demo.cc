// teller-demo: a small stand-in for an LLM server, for trying `teller run` without a
// GPU. An API thread admits requests; an engine thread runs continuous-batching steps
// (prefill for new requests, decode for running ones) as NVTX ranges shaped like a real
// engine's: step -> model forward -> decoder layer -> attention / MLP. Step ranges carry
// their batch's request ids in the collector's step grammar (docs/python-hooks.md).
// Log lines follow vLLM's format. Usage: teller-demo [requests] [slow-step]
// (slow-step: a step number whose attention runs 20x slower, a fault to find).
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kLayers = 4;
constexpr int kMaxBatch = 4;

struct Request {
  std::string id;
  int remaining_tokens;
  bool prefilled = false;
};

std::mutex g_mu;
std::deque<Request> g_waiting;
bool g_done_admitting = false;

void Log(const char* level, const std::string& msg) {
  const time_t now = time(nullptr);
  tm tm;
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%m-%d %H:%M:%S", &tm);
  std::printf("%s %s [demo_engine.py:42] %s\n", level, stamp, msg.c_str());
  std::fflush(stdout);
}

// Busy work standing in for a kernel: the duration scales with `units`.
double Work(int units) {
  double x = 0;
  for (int i = 0; i < units * 2000; ++i) x += std::sqrt(static_cast<double>(i));
  return x;
}

double g_sink = 0;

void Layer(int layer, int tokens, bool slow) {
  const std::string name = "model.layers." + std::to_string(layer);
  nvtxRangePushA(name.c_str());
  nvtxRangePushA("attention");
  g_sink += Work(tokens * (slow ? 20 : 1));
  nvtxRangePop();
  nvtxRangePushA("mlp");
  g_sink += Work(tokens * 2);
  nvtxRangePop();
  nvtxRangePop();
}

void ApiThread(int requests) {
  for (int i = 0; i < requests; ++i) {
    Request r{"cmpl-" + std::to_string(1000 + i), 8 + (i * 7) % 17};
    Log("INFO", "Received request " + r.id + ": prompt_tokens=" + std::to_string(32 + i % 5 * 16) +
                    ", max_tokens=" + std::to_string(r.remaining_tokens));
    {
      std::lock_guard<std::mutex> lock(g_mu);
      g_waiting.push_back(r);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_done_admitting = true;
}

void EngineThread(int slow_step) {
  std::vector<Request> running;
  for (int step = 0;; ++step) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      while (running.size() < kMaxBatch && !g_waiting.empty()) {
        running.push_back(g_waiting.front());
        g_waiting.pop_front();
        Log("INFO", "Added request " + running.back().id + ".");
      }
      if (running.empty() && g_done_admitting && g_waiting.empty()) break;
    }
    if (running.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    bool any_prefill = false, any_decode = false;
    std::string ids;
    for (const auto& r : running) {
      (r.prefilled ? any_decode : any_prefill) = true;
      ids += (ids.empty() ? "" : ",") + r.id;
    }
    const char* kind = any_prefill && any_decode ? "mixed" : any_prefill ? "prefill" : "decode";
    const std::string step_name = std::string("teller.step kind=") + kind +
                                  " n=" + std::to_string(running.size()) + " reqs=" + ids;
    nvtxRangePushA(step_name.c_str());
    nvtxRangePushA("execute_model");
    const int tokens = any_prefill ? 16 : static_cast<int>(running.size());
    for (int layer = 0; layer < kLayers; ++layer) Layer(layer, tokens, step == slow_step);
    nvtxRangePop();
    nvtxRangePushA("sample");
    g_sink += Work(1);
    nvtxRangePop();
    nvtxRangePop();
    if (step == slow_step)
      Log("WARNING", "Step " + std::to_string(step) + " took longer than expected.");
    for (size_t i = 0; i < running.size();) {
      running[i].prefilled = true;
      if (--running[i].remaining_tokens <= 0) {
        Log("INFO", "Finished request " + running[i].id + ".");
        running.erase(running.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    if (step % 20 == 0) {
      Log("INFO", "Avg generation throughput: " + std::to_string(running.size() * 40) +
                      " tokens/s, Running: " + std::to_string(running.size()) + " reqs");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 24;
  const int slow_step = argc > 2 ? std::atoi(argv[2]) : 30;
  Log("INFO", "Starting demo engine with " + std::to_string(kLayers) + " layers");
  std::thread api(ApiThread, requests);
  std::thread engine(EngineThread, slow_step);
  api.join();
  engine.join();
  Log("INFO", "Served " + std::to_string(requests) + " requests.");
  return g_sink > 0 ? 0 : 1;
}
