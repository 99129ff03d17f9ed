// The framework op stack on the host (`--host-stack`, on with `--realistic`): what the
// PyTorch profiler records above each launch in an eager step, as the real Kineto traces
// show it (tracelens b200 vLLM eager, H100/MI300 HF Qwen, SGLang extend): nn.Module ranges
// numbered per class ("nn.Module: RMSNorm_6"), the module call and forward Python frames,
// the engine's wrapper frames, the operator itself and its aten decomposition
// (aten::linear > aten::t > aten::transpose > aten::as_strided, aten::addmm > launch), each
// with a CPU self time drawn from a lognormal fitted to the real traces
// (bench/sim/fit_host_ops.py). Graph replays keep only their graph launch.
#ifndef TELLER_SRC_SIM_HOST_STACK_H_
#define TELLER_SRC_SIM_HOST_STACK_H_

#include <string>
#include <string_view>
#include <vector>

#include "src/sim/sim_internal.h"

namespace teller::sim {

// One host range of the stack: its name and children in order. `launch` marks the point
// where the operator's kernels are launched; `op` the operator's own range (OpSpec::range,
// which carries the fault evidence and the ground-truth locator).
struct HostNode {
  std::string name;
  std::vector<HostNode> children;
  bool launch = false;  // no range: the launches happen here
  bool op = false;      // the operator range itself (name = OpSpec::range)
};

// Parses a recipe: nodes separated by ';', children in brackets, '@' the launch point, '*'
// the operator range: "frame.py(1): f[*[aten::t[aten::as_strided];aten::addmm[@]]]". Names
// may hold anything but "[];". Returns the top-level nodes; a recipe without '*' gets the
// operator range around everything, one without '@' the launches inside the operator.
std::vector<HostNode> ParseRecipe(std::string_view recipe);
// The same grammar without an operator or launches (the model runner's prologue).
std::vector<HostNode> ParseFrames(std::string_view recipe);
// The model runner's work before the forward in every step (input preparation, block
// tables, attention metadata): frames and aten ops of the family's real trace; "" = none.
std::string_view RunnerPrologue(const EngineProfile& p);

// The stack of one operator of a profile: the modules it sits in (outermost first, each
// "Class" or "Class#tag" where the tag tells sibling instances of one class apart) and the
// recipe tree under the innermost module's forward frame.
struct HostOp {
  std::vector<std::string> modules;
  std::vector<HostNode> tree;
};
// The recipe for one operator of a profile (by its range name and first kernel's cost).
HostOp HostOpFor(const EngineProfile& p, const OpSpec& op);

// The Python frames a module call adds under its "nn.Module: Class_k" range: the module
// call wrapper and the class's forward.
std::vector<std::string> ModuleFrames(const EngineProfile& p, std::string_view cls);
// "Class#tag" -> "Class".
std::string_view ModuleClass(std::string_view element);

// Lognormal self CPU time (median us, log-sigma) of a host range or launch call by name,
// fitted to the real traces (host_stack.cc names each constant's source).
struct HostCost {
  double median_us;
  double sigma;
};
HostCost HostCostOf(const EngineProfile& p, std::string_view name);

}  // namespace teller::sim

#endif  // TELLER_SRC_SIM_HOST_STACK_H_
