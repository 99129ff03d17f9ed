// Causal-context slices (docs/method.md §4): around the suspicious instances of a step, the
// nodes that explain them — their parents and children, temporally nearby events of the
// step, and the communication they are coupled with — and nothing else.
//
// R_s(v) = alpha*[v in I_s] + beta*[v parent or child of some u in I_s]
//        + gamma*max_u exp(-dt(u,v)/tau0) + eta*[v E_c-coupled to some u in I_s]
// The slice keeps nodes with R_s(v) >= kappa plus up to `hops` ancestors of every
// suspicious node. E_c couples a communication node with the GPU operation that precedes
// it on its stream (the work that feeds it) and with the same collective on the other ranks
// of the step (Reconstruction::collectives; a COMM range or call through the kernels it
// launched, with the node of its own name above them). docs/localization.md lists the
// defaults.
#ifndef TELLER_SLICE_SLICE_H_
#define TELLER_SLICE_SLICE_H_

#include <cstdint>
#include <vector>

#include "teller/core/trace.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::slice {

struct Weights {
  double alpha = 1.0, beta = 0.6, gamma = 0.5, eta = 0.6;
  double tau0_ns = 200'000;  // 200 us
  double kappa = 0.5;
  int hops = 2;
  // Only nodes within this many ns of a suspicious node are scored for the temporal term
  // (beyond it exp(-dt/tau0) < 1e-3 at the default tau0).
  int64_t window_ns = 1'400'000;
};

struct Slice {
  std::vector<uint32_t> nodes;   // reconstruction node indices, sorted
  std::vector<float> relevance;  // R_s(v) of each kept node (ancestors added by hops: 0)
  size_t step_nodes = 0;         // nodes in the step's subtrees considered
  double Share() const { return step_nodes ? static_cast<double>(nodes.size()) / step_nodes : 0; }
};

// `roots`: the STEP nodes of one engine step (one per rank); `suspicious`: node indices.
Slice BuildSlice(const Trace& trace, const reconstruct::Reconstruction& r,
                 const std::vector<uint32_t>& roots, const std::vector<uint32_t>& suspicious,
                 const Weights& weights = {});

}  // namespace teller::slice

#endif  // TELLER_SLICE_SLICE_H_
