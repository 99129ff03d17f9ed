// A real program for the collector's cost: a small decoder-only transformer in libtorch
// (CPU, one thread) generating tokens, with an NVTX range around the step, every layer
// and every module call, as a framework with per-module ranges emits them. Unlike
// bench/nvtx_heavy.cc the work between ranges is a real model's: tensor allocation, the
// dispatcher, GEMMs and elementwise kernels.
// Usage: torch_nvtx_model [steps] [layers] [hidden] [batch]    (defaults 1500 8 32 1)
// The defaults make a CPU-bound small-batch decode: the framework's own work per module
// call dominates, at about 90,000 ranges/s on a 2-core VM. OpenBLAS runs one thread.
// Prints the same line as nvtx_heavy (ranges, ranges/s, the recording thread's and the
// process's CPU seconds over the generate loop), which bench/collect/collector_overhead.py
// reads (load torch-model).
#include <nvtx3/nvToolsExt.h>
#include <time.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double CpuSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

long g_ranges = 0;

// One NVTX range around `fn`, named as a framework names module calls.
template <typename F>
auto Ranged(const char* name, F&& fn) {
  nvtxRangePushA(name);
  auto out = fn();
  nvtxRangePop();
  ++g_ranges;
  return out;
}

struct Layer {
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Linear qkv{nullptr}, out{nullptr}, up{nullptr}, down{nullptr};
  std::string name;
};

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS reads its thread count when it is loaded: set it and start again, before the
  // first NVTX call (a second OpenBLAS thread spins beside the program otherwise).
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
  }
  const int steps = argc > 1 ? std::atoi(argv[1]) : 1500;
  const int n_layers = argc > 2 ? std::atoi(argv[2]) : 8;
  const int64_t hidden = argc > 3 ? std::atoi(argv[3]) : 32;
  const int64_t batch = argc > 4 ? std::atoi(argv[4]) : 1;
  if (steps <= 0 || n_layers <= 0 || hidden <= 0 || hidden % 4 != 0 || batch <= 0) {
    std::fprintf(stderr,
                 "usage: torch_nvtx_model [steps] [layers] [hidden, a multiple of 4] [batch]\n");
    return 2;
  }
  torch::set_num_threads(1);
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  const int64_t heads = 4, vocab = 512, context = 32;
  torch::nn::Embedding embed(vocab, hidden);
  torch::nn::Linear head(hidden, vocab);
  std::vector<Layer> layers(n_layers);
  for (int l = 0; l < n_layers; ++l) {
    Layer& y = layers[l];
    y.norm1 = torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}));
    y.norm2 = torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}));
    y.qkv = torch::nn::Linear(hidden, 3 * hidden);
    y.out = torch::nn::Linear(hidden, hidden);
    y.up = torch::nn::Linear(hidden, 4 * hidden);
    y.down = torch::nn::Linear(4 * hidden, hidden);
    y.name = "model.layers." + std::to_string(l);
  }

  // Tokens of the last `context` positions, as a sliding window (no KV cache: each step
  // runs the window again, as a small prefill would).
  torch::Tensor tokens = torch::randint(vocab, {batch, context});
  const torch::Tensor mask = torch::full({context, context}, -1e9).triu(1);  // causal
  const int64_t head_dim = hidden / heads;
  double sink = 0;
  const double thread0 = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  const double process0 = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    const std::string step =
        "teller.step kind=decode n=" + std::to_string(batch) + " reqs=cmpl-" + std::to_string(s);
    nvtxRangePushA(step.c_str());
    torch::Tensor x = Ranged("embed_tokens", [&] { return embed(tokens); });
    for (Layer& y : layers) {
      nvtxRangePushA(y.name.c_str());
      torch::Tensor h = Ranged("input_layernorm", [&] { return y.norm1(x); });
      torch::Tensor qkv = Ranged("qkv_proj", [&] { return y.qkv(h); });
      torch::Tensor attn = Ranged("attention", [&] {
        auto parts = qkv.view({batch, context, 3, heads, head_dim}).permute({2, 0, 3, 1, 4});
        auto scores = torch::matmul(parts[0], parts[1].transpose(-2, -1)) / std::sqrt(head_dim);
        auto probs = torch::softmax(scores + mask, -1);
        return torch::matmul(probs, parts[2]).transpose(1, 2).reshape({batch, context, hidden});
      });
      x = x + Ranged("o_proj", [&] { return y.out(attn); });
      h = Ranged("post_attention_layernorm", [&] { return y.norm2(x); });
      torch::Tensor up = Ranged("gate_up_proj", [&] { return torch::gelu(y.up(h)); });
      x = x + Ranged("down_proj", [&] { return y.down(up); });
      nvtxRangePop();
      ++g_ranges;
    }
    torch::Tensor logits = Ranged("lm_head", [&] { return head(x.select(1, context - 1)); });
    torch::Tensor next = Ranged("sample", [&] { return logits.argmax(-1, true); });
    tokens = torch::cat({tokens.slice(1, 1), next}, 1);
    sink += static_cast<double>(next[0][0].item<int64_t>());
    nvtxRangePop();
    ++g_ranges;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double thread_cpu = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - thread0;
  const double process_cpu = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - process0;
  std::printf(
      "torch_nvtx_model: %ld ranges in %.3f s = %.0f ranges/s (sink %g); cpu s: thread %.4f "
      "process %.4f; layers %d hidden %lld batch %lld\n",
      g_ranges, secs, g_ranges / secs, sink >= 0 ? 1.0 : 0.0, thread_cpu, process_cpu, n_layers,
      static_cast<long long>(hidden), static_cast<long long>(batch));
  return 0;
}
