// Choices every mechanism makes: which rank, which kernels, and how to name them.
#include "src/inject/inject_internal.h"

namespace teller::inject::internal {

std::string RankList(const Context& ctx, const std::vector<uint32_t>& procs) {
  std::string s;
  for (const uint32_t p : procs) {
    if (!s.empty()) s += ", ";
    s += std::to_string(ctx.RankOf(p));
  }
  return s;
}

// Picks the process a rank-scoped mechanism acts on among `candidates`.
Result<uint32_t> PickProcess(const Context& ctx, const std::vector<uint32_t>& candidates,
                             const std::string& why_none) {
  if (candidates.empty()) return Status::Error(why_none);
  if (ctx.options.rank >= 0) {
    for (const uint32_t p : candidates) {
      if (ctx.RankOf(p) == ctx.options.rank) return p;
    }
    return Status::Error("--rank " + std::to_string(ctx.options.rank) + ": no such rank among " +
                         "those the fault can act on (ranks " + RankList(ctx, candidates) + ")");
  }
  return candidates[SplitMix(ctx.options.seed) % candidates.size()];
}

// The kernel names with most GPU time, for error messages and the default target.
std::string TopKernelNames(const Trace& trace, size_t n) {
  std::unordered_map<StringId, int64_t> total;
  const EventTable& ev = trace.events;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kKernel) total[ev.name[i]] += ev.end_ns[i] - ev.start_ns[i];
  }
  std::vector<std::pair<int64_t, StringId>> v;
  for (const auto& [id, t] : total) v.emplace_back(-t, id);
  std::sort(v.begin(), v.end());
  std::string s;
  for (size_t k = 0; k < v.size() && k < n; ++k) {
    if (!s.empty()) s += ", ";
    s += "'" + ShortKernel(trace.strings.Get(v[k].second)) + "'";
  }
  return s.empty() ? "none, the trace has no kernels" : s;
}

// The kernel family a kernel mechanism acts on: the user's regex, or by default the
// compute class (compare.h) with the most GPU time in the window.
Result<Pattern> KernelPattern(Context& ctx) {
  if (!ctx.options.target.empty()) {
    auto p = Pattern::Compile(ctx.options.target, "--target", false);
    if (p.ok()) ctx.target = "kernels ~ " + ctx.options.target;
    return p;
  }
  const EventTable& ev = ctx.trace.events;
  int64_t total[kOpClassCount] = {};
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] != EventType::kKernel || ctx.is_comm[i] || !ctx.InWindow(ev.start_ns[i]))
      continue;
    total[static_cast<size_t>(ClassifyKernelName(ctx.trace.strings.Get(ev.name[i])))] +=
        ev.end_ns[i] - ev.start_ns[i];
  }
  size_t best = kOpClassCount;
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const OpClass oc = static_cast<OpClass>(c);
    if (oc == OpClass::kOther || oc == OpClass::kAllReduce || oc == OpClass::kAllGather) continue;
    if (total[c] > 0 && (best == kOpClassCount || total[c] > total[best])) best = c;
  }
  if (best == kOpClassCount) {
    return Status::Error(
        "no compute kernel in the window to slow down (kernels with most GPU time: " +
        TopKernelNames(ctx.trace, 5) + ")");
  }
  const OpClass oc = static_cast<OpClass>(best);
  auto p = Pattern::Compile(std::string(OpClassPattern(oc)), "class", true);
  if (p.ok()) {
    ctx.target = "kernels ~ " + std::string(OpClassPattern(oc)) + " (class " +
                 std::string(OpClassName(oc)) + ", the most GPU time)";
  }
  return p;
}

// "<most common name>... kernels" for explanations.
std::string DescribeNames(const Context& ctx, const std::vector<uint32_t>& events,
                          const char* noun) {
  std::unordered_map<StringId, size_t> count;
  for (const uint32_t e : events) ++count[ctx.trace.events.name[e]];
  StringId best = 0;
  size_t n = 0;
  for (const auto& [id, c] : count) {
    if (c > n || (c == n && id < best)) {
      best = id;
      n = c;
    }
  }
  std::string s = ShortKernel(ctx.trace.strings.Get(best)) + " " + noun;
  if (events.size() == 1 && !s.empty() && s.back() == 's') s.pop_back();
  if (count.size() > 1) s += " (and " + std::to_string(count.size() - 1) + " other names)";
  return s;
}

}  // namespace teller::inject::internal
