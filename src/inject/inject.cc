// Fault injection into recorded traces (include/teller/inject/inject.h, docs/inject.md).
//
// Three parts: what the fault changes directly (Apply*: a duration factor on GPU work,
// extra host time at the end of a call, a late arrival before a GPU record, a slower
// transfer inside a collective), the causal replay that turns those local changes into
// new times for every event (Replay), and the ground truth built from the result.
#include "teller/inject/inject.h"

#include "src/inject/replay.h"
#include "teller/core/file_util.h"
#include "teller/ingest/ingest.h"

namespace teller::inject {
using namespace internal;
namespace {

Status CheckMagnitude(const MechanismInfo& info, double magnitude) {
  if (!(magnitude > 0) || !std::isfinite(magnitude)) {
    return Status::Error("--magnitude must be a positive number");
  }
  switch (info.mechanism) {
    case Mechanism::kKernelThrottle:
    case Mechanism::kKernelSlowOneGpu:
    case Mechanism::kGpuThrottle:
    case Mechanism::kLaunchLatency:
    case Mechanism::kSlowLink:
      if (magnitude < 1.0) {
        return Status::Error(std::string(info.name) +
                             ": --magnitude is a slowdown factor and must be at least 1 (got " +
                             std::to_string(magnitude) + ")");
      }
      break;
    default:
      break;
  }
  return Status::Ok();
}

std::string SupportedList() {
  std::string s;
  for (const std::string& name : InjectableMechanisms()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace

std::vector<std::string> InjectableMechanisms() {
  std::vector<std::string> out;
  for (const MechanismInfo& info : Mechanisms()) {
    if (info.injectable) out.emplace_back(info.name);
  }
  return out;
}

Result<int64_t> ParseDurationNs(std::string_view text) {
  const std::string s(text);
  if (s.empty()) return Status::Error("empty duration");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v)) {
    return Status::Error("bad duration '" + s + "' (expected e.g. 1.5s, 200ms, 30us)");
  }
  if (v < 0) return Status::Error("negative duration '" + s + "'");
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1e9;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "us" || unit == "\xC2\xB5s") {
    scale = 1e3;
  } else if (unit == "ns") {
    scale = 1;
  } else if (unit == "m" || unit == "min") {
    scale = 60e9;
  } else if (unit == "h") {
    scale = 3600e9;
  } else {
    return Status::Error("bad duration unit in '" + s + "' (use s, ms, us, ns, m or h)");
  }
  const double ns = v * scale;
  if (ns > 9.2e18) return Status::Error("duration '" + s + "' is too long");
  return static_cast<int64_t>(std::llround(ns));
}

Result<InjectResult> InjectFault(Trace& trace, const InjectOptions& options) {
  const MechanismInfo* info = FindMechanism(options.mechanism);
  if (info == nullptr) {
    return Status::Error("unknown fault mechanism '" + options.mechanism +
                         "'; teller inject supports: " + SupportedList());
  }
  if (!info->injectable) {
    return Status::Error(
        "'" + options.mechanism + "' cannot be injected into a recorded trace (it changes what " +
        "the engine schedules, which only the simulator can replay: teller simulate --faults " +
        options.mechanism + "); teller inject supports: " + SupportedList());
  }
  Context ctx(trace, options, *info);
  TELLER_RETURN_IF_ERROR(CheckMagnitude(*info, ctx.magnitude));
  EventTable& ev = trace.events;
  if (ev.size() == 0) return Status::Error("the trace has no events");
  ctx.t0 = std::numeric_limits<int64_t>::max();
  ctx.t_end = kNever;
  for (size_t i = 0; i < ev.size(); ++i) {
    ctx.t0 = std::min(ctx.t0, ev.start_ns[i]);
    ctx.t_end = std::max(ctx.t_end, std::max(ev.end_ns[i], ev.start_ns[i]));
  }
  if (options.onset_ns < 0 || options.duration_ns < 0)
    return Status::Error("--onset and --duration must not be negative");
  ctx.w0 = ctx.t0 + options.onset_ns;
  ctx.w1 =
      options.duration_ns > 0 ? ctx.w0 + options.duration_ns : std::numeric_limits<int64_t>::max();
  if (ctx.w0 >= ctx.t_end) {
    return Status::Error("--onset " + FormatNs(static_cast<double>(options.onset_ns)) +
                         " is after the end of the trace (it spans " +
                         FormatNs(static_cast<double>(ctx.t_end - ctx.t0)) + ")");
  }
  ctx.classifier = reconstruct::Classifier::BuiltIn();
  ctx.layers = std::make_unique<reconstruct::LayerCache>(*ctx.classifier, trace);
  {
    // The ranks: processes with GPU work, or, in a trace without any (NVTX only), every
    // process with events.
    std::vector<uint8_t> gpu(trace.processes.size(), 0), any(trace.processes.size(), 0);
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev.process[i] >= gpu.size()) continue;
      any[ev.process[i]] = 1;
      if (IsGpuWork(ev.type[i])) gpu[ev.process[i]] = 1;
    }
    const bool none = std::find(gpu.begin(), gpu.end(), 1) == gpu.end();
    for (uint32_t p = 0; p < gpu.size(); ++p) {
      if (none ? any[p] : gpu[p]) ctx.gpu_processes.push_back(p);
    }
  }
  ctx.range_end = RangeEnds(trace, ev.start_ns, ev.end_ns);
  ctx.steps = reconstruct::FindStepRanges(trace, *ctx.layers, ctx.range_end);

  if (info->mechanism == Mechanism::kAllocatorStall)
    TELLER_RETURN_IF_ERROR(PrepareAllocatorStall(ctx));

  {
    const reconstruct::CommKernelIndex comm = reconstruct::IndexCommKernels(trace, *ctx.layers);
    ctx.coll = reconstruct::FindCollectiveGroups(trace, comm);
    ctx.is_comm = comm.is_comm;
  }
  Replay replay(trace, ctx.coll.proc_offset);
  replay.groups = ctx.coll.groups;
  replay.group_of = ctx.coll.group_of;
  replay.group_transfer_factor.assign(ctx.coll.groups.size(), 1.0);

  switch (info->mechanism) {
    case Mechanism::kKernelThrottle:
      TELLER_RETURN_IF_ERROR(ApplyKernelFactor(ctx, replay, false));
      break;
    case Mechanism::kKernelSlowOneGpu:
      TELLER_RETURN_IF_ERROR(ApplyKernelFactor(ctx, replay, true));
      break;
    case Mechanism::kGpuThrottle:
      TELLER_RETURN_IF_ERROR(ApplyGpuThrottle(ctx, replay));
      break;
    case Mechanism::kLaunchLatency:
      TELLER_RETURN_IF_ERROR(ApplyLaunchLatency(ctx, replay));
      break;
    case Mechanism::kSyncStall:
      TELLER_RETURN_IF_ERROR(ApplySyncStall(ctx, replay));
      break;
    case Mechanism::kAllocatorStall:
      ApplyAllocatorStall(ctx, replay);
      break;
    case Mechanism::kStragglerRank:
      TELLER_RETURN_IF_ERROR(ApplyStraggler(ctx, replay));
      break;
    case Mechanism::kSlowLink:
      TELLER_RETURN_IF_ERROR(ApplySlowLink(ctx, replay));
      break;
    default:
      return Status::Error(
          "'" + options.mechanism +
          "' is marked injectable but teller inject has no "
          "implementation of it; supported: kernel_throttle, kernel_slow_one_gpu, "
          "gpu_throttle, launch_latency, sync_stall, allocator_stall, straggler_rank, slow_link");
  }
  std::sort(ctx.modified.begin(), ctx.modified.end());
  replay.Run();

  InjectResult result;
  InjectEffect& fx = result.effect;
  fx.mechanism = info->name;
  fx.category = FaultCategoryName(info->category);
  fx.magnitude = ctx.magnitude;
  fx.rank = ctx.rank_process >= 0 ? ctx.RankOf(static_cast<uint32_t>(ctx.rank_process)) : -1;
  fx.modified = ctx.modified.size();
  fx.inserted = ctx.inserted.size();
  fx.sweeps = replay.sweeps;
  fx.converged = replay.converged;
  if (!replay.converged) {
    fx.notes.push_back(
        "the timing replay did not settle after " + std::to_string(kMaxSweeps) +
        " sweeps (a dependency cycle, likely from clock skew); times are those of the last sweep");
  }
  fx.span_before_ns = ctx.t_end - ctx.t0;

  // Which communication kernels changed (the horizontal view's evidence).
  std::vector<uint8_t> affected(ev.size(), 0);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!ctx.is_comm[i]) continue;
    const int64_t d0 = replay.e0()[i] - replay.s0()[i];
    const int64_t d1 = replay.ne[i] - replay.ns[i];
    const int64_t limit =
        std::max<int64_t>(kAffectedMinNs, static_cast<int64_t>(kAffectedShare * d0));
    if (std::llabs(d1 - d0) > limit) affected[i] = 1;
  }

  // New times into the trace; GPU annotations follow the work on their stream.
  int64_t first = std::numeric_limits<int64_t>::max(), last = kNever;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kGpuAnnotation) continue;
    if (replay.ns[i] != replay.s0()[i] || replay.ne[i] != replay.e0()[i]) {
      ev.start_ns[i] = replay.ns[i];
      ev.end_ns[i] = replay.ne[i];
      ++fx.shifted;
    }
    first = std::min(first, ev.start_ns[i]);
    last = std::max(last, ev.end_ns[i]);
  }
  {
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> slot;
    const auto& streams = replay.stream_events();
    for (size_t s = 0; s < streams.size(); ++s) {
      const uint32_t e = streams[s].front();
      slot[{ev.process[e], ev.device[e], ev.stream[e]}] = s;
    }
    for (uint32_t i = 0; i < ev.size(); ++i) {
      if (ev.type[i] != EventType::kGpuAnnotation) continue;
      const auto it = slot.find({ev.process[i], ev.device[i], ev.stream[i]});
      if (it == slot.end()) continue;
      const auto& list = streams[it->second];
      const int64_t a0 = ev.start_ns[i], a1 = ev.end_ns[i];
      int64_t ds = 0, de = 0;
      for (const uint32_t g : list) {
        if (replay.s0()[g] >= a0) {
          ds = replay.ns[g] - replay.s0()[g];
          break;
        }
      }
      for (auto r = list.rbegin(); r != list.rend(); ++r) {
        if (replay.e0()[*r] <= a1) {
          de = replay.ne[*r] - replay.e0()[*r];
          break;
        }
      }
      if (ds != 0 || de != 0) {
        ev.start_ns[i] = a0 + ds;
        ev.end_ns[i] = std::max(a0 + ds, a1 + de);
        ++fx.shifted;
      }
    }
  }
  fx.span_after_ns = last - first;
  fx.target = ctx.target;
  const uint64_t moved_logs = ShiftLogs(trace, replay, ctx.steps);
  if (moved_logs > 0) {
    fx.notes.push_back(std::to_string(moved_logs) +
                       " log line(s) moved with their process's host timeline");
  }

  BuildTruth(ctx, replay, affected, result);
  return result;
}

Result<InjectRun> InjectIntoTrace(const std::string& input, const std::string& out_dir,
                                  const InjectOptions& options,
                                  const raw::ExportOptions& export_options) {
  // Cheap checks first: an unusable output should not cost an import.
  TELLER_RETURN_IF_ERROR(raw::CheckExportDir(out_dir));
  if (FindMechanism(options.mechanism) == nullptr ||
      !FindMechanism(options.mechanism)->injectable) {
    Trace empty;
    auto r = InjectFault(empty, options);  // the same error text as the library's
    return r.status();
  }
  Trace trace;
  TELLER_RETURN_IF_ERROR(ingest::ImportPath(input, trace));
  auto injected = InjectFault(trace, options);
  if (!injected.ok()) return injected.status();
  InjectRun run;
  run.result = std::move(injected).value();
  const size_t slash = input.find_last_of('/', input.size() > 1 ? input.size() - 2 : 0);
  std::string base = slash == std::string::npos ? input : input.substr(slash + 1);
  while (!base.empty() && base.back() == '/') base.pop_back();
  run.result.truth.setting = "injected:" + base;

  raw::ExportOptions eo = export_options;
  if (eo.source.empty()) eo.source = input;
  eo.manifest_fields.emplace_back("injected_fault", options.mechanism);
  auto exported = raw::ExportTrace(trace, out_dir, eo);
  if (!exported.ok()) return exported.status();
  run.exported = exported.value();
  TELLER_RETURN_IF_ERROR(WriteGroundTruth(run.result.truth, out_dir + "/" + kGroundTruthFile));

  // Read the output back: it must hold what was written, and every locator must name an
  // event of it.
  Trace back;
  TELLER_RETURN_IF_ERROR(ingest::ImportPath(out_dir, back));
  std::string first;
  run.verify_mismatches = CountRoundTripDifferences(trace, back, &first);
  run.verified_events = back.events.size();
  if (run.verify_mismatches > 0) {
    run.result.effect.notes.push_back("the output does not read back exactly as written (" +
                                      std::to_string(run.verify_mismatches) +
                                      " difference(s); first: " + first + ")");
  }
  std::vector<const NodeLocator*> all;
  for (const StepTruth& st : run.result.truth.steps) {
    for (const ViewLabel* view : {&st.vertical, &st.horizontal}) {
      for (const NodeLocator& loc : view->nodes) all.push_back(&loc);
    }
  }
  const std::vector<int64_t> resolved = ResolveAll(back, all);
  run.locators = all.size();
  run.locators_unresolved = static_cast<uint64_t>(std::count(resolved.begin(), resolved.end(), -1));
  if (run.locators_unresolved > 0) {
    run.result.effect.notes.push_back(std::to_string(run.locators_unresolved) + " of " +
                                      std::to_string(run.locators) +
                                      " locators do not resolve in the output");
  }
  return run;
}

}  // namespace teller::inject
