// Candidate localization (docs/method.md §3, docs/localization.md): which operator instances
// of which engine steps took more than they should, measured against true peers.
//
// Instances are the units of work a trace records: every GPU operation (its duration),
// every runtime/driver call (its duration; a synchronization's own cost after the GPU work
// it waited for had finished), and every operator range (its own host time: what is left
// after its child ranges and calls). Each instance belongs to one engine step: the step
// ranges of every rank with the same step number, with all the work of the step's process
// that starts inside the step (other threads such as autograd's, side streams), or, in a
// trace without step markers, each process's whole timeline.
//
// Peers are the instances that should cost the same: the same operator identity (name,
// what the trace records of its size, layer, step kind, and the operator before it), at
// the same position of the repeating structure in the other steps and on the other ranks
// when the structure repeats, else across the repeated layers of the trace; with a
// baseline, the baseline's instances. An instance is evidence only when it took longer
// than its peers by a margin that is significant against their spread and above absolute
// and relative floors: faster than peers is never evidence.
//
// Root before impact: a communication kernel's time is split into the wait for the last
// rank to arrive (a consequence, attributed to that rank) and its own transfer time; a
// synchronization's wait for GPU work is not its cost; ranges are scored on their own
// time only, so a range that got longer because a kernel or call inside it did is not
// evidence. Each instance's excess is therefore counted once, at its root.
#ifndef TELLER_LOCALIZE_LOCALIZE_H_
#define TELLER_LOCALIZE_LOCALIZE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::localize {

// The defaults are documented in docs/localization.md ("Evidence and its floors").
struct Options {
  // Evidence: time >= min_ratio x expected, excess >= min_excess_ns, and
  // excess >= min_z x noise, where noise = max(1.4826 MAD of the peers,
  // noise_rel_floor x expected, noise_abs_floor_ns).
  double min_ratio = 1.2;
  double min_z = 5.0;
  int64_t min_excess_ns = 1000;
  double noise_rel_floor = 0.02;
  int64_t noise_abs_floor_ns = 250;
  // Fewer peers than this (the instance included): nothing to compare with, no evidence.
  size_t min_peers = 4;
  // Position peers (the same occurrence of a family in the other steps and ranks) are used
  // when at least this many units hold the occurrence; otherwise all of the family.
  size_t min_position_units = 4;
  // A family keyed by its preceding operator needs this many instances, else the family
  // without that context is used (too few peers make noise look like signal).
  size_t min_context_family = 8;
  // Launches compared with the same call made by other operators (PeerSource::kCallers)
  // are not the same identity: operators' launch costs differ naturally by up to about
  // 1.7x (a launch with more arguments), so those need at least this ratio.
  double min_callers_ratio = 2.0;
  // An operator that alone makes its launch call (cuBLAS's cuLaunchKernel under aten::addmm)
  // is compared with the other operators' launches through the other launch APIs; those
  // APIs cost naturally up to about 1.9x apart in the real traces (cudaLaunchKernelExC
  // against cudaLaunchKernel), so those need at least this ratio.
  double min_other_api_ratio = 3.0;
  // Step decision: a step's healthy spread is max(1.4826 MAD of its peer steps' durations,
  // step_rel_floor x its median duration). score = x / (x + step_scale) with
  // x = root excess / spread; the default threshold 0.6 is x = 1.5 step_scale = 3 spreads.
  double step_rel_floor = 0.05;
  // With at least min_steps_for_spread peer steps their measured spread is trusted down
  // to step_rel_floor_measured.
  size_t min_steps_for_spread = 8;
  double step_rel_floor_measured = 0.01;
  double step_scale = 2.0;
};

// How the expected time of an instance was obtained.
enum class PeerSource : uint8_t {
  kNone = 0,   // too few peers: not scored
  kPositions,  // the same position in the other steps / on the other ranks
  kFamily,     // every instance of the family in the trace (repeated layers, all steps)
  kBaseline,   // the baseline's instances (positions when they repeat, else the family)
  kLayers,     // the same phase of a family that repeats with a period (repeated layers)
  kRest,       // the rest of a small family, outside a sustained slower run of it
  kCallers,    // the same launch call made by the other operators
  // An operator the baseline never ran: the baseline's time for the instances of its
  // layer missing from its unit (the work it likely replaced)
  kReplaced,
};
// "none", "positions", "family", "baseline", "layers", "rest", "callers", "replaced"
const char* PeerSourceName(PeerSource s);

// What an instance's time measures.
enum class Measure : uint8_t {
  kGpuTime = 0,   // a GPU operation's duration
  kCallTime,      // a runtime/driver call's duration
  kSyncCost,      // a synchronization's time after the GPU work it waited for had finished
  kOwnTime,       // an operator range's own host time (less child ranges and calls)
  kTransferTime,  // a collective kernel's time after the last rank arrived
};
const char* MeasureName(Measure m);  // "gpu_time", "call_time", ...
// The Feature (core/vocabulary.h) a measure corresponds to.
Feature MeasureFeature(Measure m);

struct Family {
  std::string key;      // the identity peers share (name, signature, layer, kind, context)
  std::string name;     // the display name: exact trace name of its first instance
  std::string pattern;  // the name with layer indices and addresses replaced by '#'
  Layer layer = Layer::kFrontend;
  Measure measure = Measure::kOwnTime;
  std::string within;  // host calls: the operator range that makes them ("" at top level)
  // Copies and memsets: the size class of their identity (copies are peers only within a
  // quarter of an octave of size), else 0; `bytes` is the size of the family's first
  // instance. Every copy of a direction has one name, so the size is what tells a model's
  // weight upload from a small index copy.
  uint32_t bytes_class = 0;
  uint64_t bytes = 0;
  uint32_t count = 0;    // instances in the trace
  double median_ns = 0;  // the family's median time in the trace
  bool from_baseline = false;
};

struct Instance {
  uint32_t node = 0;
  uint32_t family = 0;
  uint32_t unit = 0;        // index into Result::units
  uint32_t occurrence = 0;  // k-th instance of its family in its unit
  int64_t time_ns = 0;      // what the measure gives
  int64_t expected_ns = 0;  // the peers' median
  int64_t noise_ns = 0;     // the peers' spread with its floors
  uint32_t peers = 0;       // how many peers the expectation comes from
  PeerSource source = PeerSource::kNone;
  // Shared because it ran beside work its family's usual instances ran without
  // (localize/shared.h, ContendedDeviations): 1 + that work's class, else 0; and the
  // stream of that work (the one that covered most of its window).
  uint8_t contended_by = 0;
  float z = 0;               // (time - expected) / noise
  bool warmup = false;       // the first of its family on its process: never evidence
  bool evidence = false;     // significant excess (see Options)
  bool consequence = false;  // evidence that is a wait for ranks the trace lacks
  // Evidence that most operators around it share (teller/localize/shared.h): the time was
  // slow, not this operator; the suspicions judge it as within its peers.
  bool shared = false;
  int64_t excess_ns = 0;  // time - expected when evidence, else 0
  // Collective kernels: how long it waited for the last rank, and which rank that was.
  int64_t wait_ns = 0;
  int32_t waited_for_process = -1;
  uint32_t contended_stream = 0;
};

// A step of one rank and the work attributed to it.
struct Unit {
  int32_t step = -1;  // index into Reconstruction::steps; -1: an iteration or a whole timeline
  // Without step markers: the iteration's index on its process, or kPrologue / kEpilogue
  // for the work before the first iteration and after the last (localize/iterations.h).
  int32_t iteration = -1;
  static constexpr int32_t kPrologue = -2, kEpilogue = -3;
  // The work before the iterations or after them: laid out otherwise than an iteration.
  bool OutsideIterations() const { return iteration == kPrologue || iteration == kEpilogue; }
  uint32_t process = 0;
  std::vector<uint32_t> roots;  // the step node first, then the other threads' roots
  int64_t start_ns = 0, end_ns = 0;
};

// A collective for which some ranks waited for a late one.
struct Straggler {
  uint32_t group = 0;    // engine step
  uint32_t process = 0;  // the late rank's process
  int64_t late_ns = 0;   // how long the others waited for it (median over them)
  int64_t gap_ns = 0;    // its start after the second-latest rank's: the wait it alone caused
  // -log10 of the chance of a gap this large among the trace's gaps (exponential with the
  // mean of the other collectives' gaps).
  double suspicion = 0;
  uint32_t node = 0;     // the late rank's collective kernel
  uint32_t waiting = 0;  // ranks that waited
  // No slower work of its own explains the lateness (its root evidence in the step adds up
  // to less than half the gap): the rank started late (a stalled worker, a paused process)
  // or idled. The gap is then the step's root excess itself.
  bool unexplained = false;
  int64_t late_start_ns = 0;  // its step's start after the median start of the other ranks'
};

// A slow time (docs/localization.md, "Shared deviations"): on one device of one unit, the
// GPU-time evidence shared with the operators around it (Instance::shared) of at least
// kSlowTimeFamilies kernel families. Clocks lowered by power or heat, or another process
// on the GPU, slow every kernel a little, so no family stands out but together they make
// the step longer. `excess_ns` is their summed excess.
inline constexpr uint32_t kSlowTimeFamilies = 3;
// A slowed device (MarkSlowDevices in localize.cc): the least kernels of a unit on one
// device to judge it by, and -log10 of the sign test's chance that so many more of its
// kernel names are slower than their peers than faster (10 names of 10, 13 of 14), for one
// cell judged; plus log10 of the number of cells judged (units x devices, or units for
// the hosts).
inline constexpr size_t kSlowDeviceInstances = 16;
inline constexpr double kSlowDeviceSignLog10 = 3.0;
// SlowTime::device and SlowDevice::device of a slowed host: the process's host threads
// (their operators' own time and runtime calls), not a GPU.
inline constexpr uint32_t kHostDevice = UINT32_MAX;
struct SlowTime {
  uint32_t unit = 0;
  uint32_t device = 0;  // or kHostDevice
  int64_t excess_ns = 0;
  uint32_t families = 0;
  // Most of the unit's kernels on the device are slower than their peers by a similar
  // factor (SlowDevice): the device was slower, not a few operators around a time. `ratio`
  // is then SlowDevice::ratio (over its kernel names), else 0.
  bool device_wide = false;
  double ratio = 0;
};

// A device whose kernels in one unit were slower than their peers together (MarkSlowDevices
// in localize.cc): the median over its kernel names of their median time / expected, over
// `kernels` kernel names. With device kHostDevice, the process's host was slower (CPU
// contention): the same over its host operations' names (operators' own time, runtime
// calls that do not wait for the GPU).
struct SlowDevice {
  uint32_t unit = 0;
  uint32_t device = 0;  // or kHostDevice
  double ratio = 0;
  uint32_t kernels = 0;  // kernel names, or host operation names
};

struct Result {
  // The resolution of the trace's times: the greatest common divisor of its GPU times, at
  // most 1 us (whole-microsecond Kineto files: 1000; nanosecond traces: 1 or a few). A
  // sustained run must be more than one tick above its peers (docs/localization.md).
  int64_t tick_ns = 0;
  std::vector<Family> families;
  std::vector<Instance> instances;  // by unit, then in visiting order
  std::vector<Unit> units;
  std::vector<uint32_t> group_of_unit;             // unit -> engine step
  std::vector<std::vector<uint32_t>> group_units;  // engine step -> its units (one per rank)
  std::vector<std::vector<uint32_t>> group_steps;  // engine step -> Reconstruction::steps
  std::vector<std::vector<uint32_t>> group_roots;  // engine step -> root nodes of its units
  std::vector<int64_t> group_number;               // the steps' number, -1 when none
  // The kind its peer steps share: the step kind and size class ("decode/size3", "/size0"
  // when the markers say neither), "prologue" or "epilogue" (iterations.h); "" for the
  // other iterations and whole timelines.
  std::vector<std::string> group_kind;
  // Per engine step: the root excess (the most any one evidence family explains on one
  // rank), the healthy spread it is compared with, and the calibrated score.
  std::vector<int64_t> group_excess_ns;
  std::vector<int64_t> group_spread_ns;
  std::vector<int64_t> group_duration_ns;
  std::vector<float> group_score;
  std::vector<std::vector<uint32_t>> suspicious;  // per group: evidence instances
  std::vector<std::vector<uint32_t>> waits;       // per group: collectives that waited
  // Per group: collectives slower than their peers whose partner ranks the trace lacks.
  std::vector<std::vector<uint32_t>> unseen_waits;
  std::vector<Straggler> stragglers;
  std::vector<SlowTime> slow_times;      // SlowTimes(), by unit then device
  std::vector<SlowDevice> slow_devices;  // by unit then device
  // No step markers: each process's timeline is one unit (whole_trace), or, where its
  // work repeats (iterations.h), each of its iterations is (iterations).
  bool whole_trace = false;
  bool iterations = false;
};

// How an operator's instances deviated in a baseline scored against itself: per process,
// its instances scored against peers (not warm-up, not waits for unseen ranks) in time
// order, each as time / expected when it was evidence and 0 when it was not.
struct Habit {
  std::vector<std::vector<double>> sequences;
};

// A baseline: per family the times of its instances, overall and per position, the
// healthy durations of its steps per kind, and per operator its habit.
class Model {
 public:
  Model();
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }
  size_t families() const;
  // The habit of the operator a family of a trace belongs to (its pattern, layer, measure
  // and the operator that makes it), nullptr when the baseline has none of it.
  const Habit* HabitOf(const Family& f) const;
  // Whether the baseline ran the operator a family of a trace is an instance of: one of its
  // families has the same name pattern and layer (whatever its size, context or caller).
  bool Ran(const Family& f) const;
  // The same for an operator key already made from the family (NameLayerKey).
  bool RanKey(const std::string& name_layer_key) const;
  // The operators (name pattern and layer, with the exact name of one instance) that every
  // one of the baseline's steps of this kind (Result::group_kind) ran; empty when it has no
  // step of the kind.
  struct Operator {
    std::string name, pattern;
    Layer layer = Layer::kFrontend;
  };
  std::vector<Operator> EveryStepRan(const std::string& kind) const;
  // Whether the baseline has units of this step kind (Result::group_kind; "" for
  // iterations and whole timelines): what an operator it never ran is compared with.
  bool HasUnitsOf(const std::string& kind) const;

 private:
  std::unique_ptr<Impl> impl_;
};

Model FitBaseline(
    const std::vector<std::pair<const Trace*, const reconstruct::Reconstruction*>>& traces,
    const Options& options = {});

// Scores `trace`; with `baseline`, families it knows take their peers from it.
Result Localize(const Trace& trace, const reconstruct::Reconstruction& r,
                const Options& options = {}, const Model* baseline = nullptr);

// The slow times of a scored result, by unit then device (Score keeps them in
// Result::slow_times).
std::vector<SlowTime> SlowTimes(const Trace& trace, const reconstruct::Reconstruction& r,
                                const Result& result);
// Whether instance k is part of a slow time (shared GPU-time evidence, or shared host
// evidence on a slowed host).
bool InSlowTime(const Result& result, uint32_t k);
// The SlowTime::device instance k counts in: its GPU's, or kHostDevice for host work.
uint32_t SlowTimeDevice(const Trace& trace, const reconstruct::Reconstruction& r,
                        const Result& result, uint32_t k);

// A name with what varies between repeated instances of one operator replaced by '#':
// layer indices ("model.layers.12.mlp" -> "model.layers.#.mlp", "Qwen2Attention_3" ->
// "Qwen2Attention_#") and addresses ("0x7f3a..." -> "0x#"). Digits that are part of a
// word ("Qwen2", "max_pool2d", "bf16") stay.
std::string NamePattern(std::string_view name);

}  // namespace teller::localize

#endif  // TELLER_LOCALIZE_LOCALIZE_H_
