// Serialized trees and the merge rule of Trace Pair Encoding (docs/method.md §5).
//
// A Sequence is a call tree (one step, or a slice of one) in depth-first order: one symbol
// per position plus the three side channels of the paper, parent index P, duration D (ns)
// and depth H, and our addition, the span [first, last] of serialized node positions each
// token covers, so that a token flagged by a model maps back to concrete nodes.
//
// The merge rule, applied to the adjacent pair at positions (i, i+1):
//   X_i = new symbol; P_i stays; D_i = D_i + D_{i+1}; H_i stays; position i+1 is deleted;
//   parent indices that pointed to i+1 now point to i; parent indices > i+1 decrease by 1;
//   span_i = [span_i.first, span_{i+1}.last].
// ApplyMergeAt() is that rule literally (linear per merge: the reference the fast encoder
// is tested against). Because parents precede children in depth-first order, the rule
// gives every token the parent "token that holds the original parent of the token's first
// node"; EncodeSequence (model.h) builds its output from that invariant directly.
#ifndef TELLER_TPE_SEQUENCE_H_
#define TELLER_TPE_SEQUENCE_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "teller/core/status.h"

namespace teller::tpe {

using TokenId = uint32_t;

struct Sequence {
  std::vector<TokenId> ids;       // input_ids
  std::vector<int32_t> parent;    // parent_idx: a position in this sequence, -1 for a root
  std::vector<int64_t> duration;  // ns
  std::vector<uint16_t> depth;    // depth below the step (the root is 0)
  // Serialized node positions [first, last] covered by each token; before any merge
  // span[i] == {i, i}. Merges join adjacent tokens, so spans stay contiguous, in order,
  // and together cover every node exactly once.
  std::vector<std::pair<uint32_t, uint32_t>> span;
  // The original node id of each serialized position (not per token): the id in the
  // step record (trace.json's "id"). Identity for dataset steps, which are stored in
  // depth-first order already; a slice maps back through it.
  std::vector<uint32_t> node;

  size_t size() const { return ids.size(); }
};

// A tree as columns (a step record): per node its symbol, parent (-1 for a root; a step
// record holds one root per rank), duration and depth. Views; they must outlive the call.
struct TreeView {
  std::span<const TokenId> symbol;
  std::span<const int32_t> parent;
  std::span<const int64_t> duration;
  std::span<const uint16_t> depth;
};

// Serializes `tree` by depth-first traversal (roots and children in their stored order).
// With `keep` (one flag per node; empty = all), only kept nodes are emitted, each with
// the nearest kept ancestor as its parent (a slice). Errors on a parent that is out of
// range, or a cycle.
Result<Sequence> Serialize(const TreeView& tree, std::span<const uint8_t> keep = {});

// True when parents precede children and every node's parent is on the path from the
// previous node to its root, i.e. the stored order already is a depth-first order.
bool IsDepthFirstOrder(std::span<const int32_t> parent);

// The merge rule at position i (see above); `i + 1 < seq.size()`.
void ApplyMergeAt(Sequence& seq, size_t i, TokenId new_symbol);

}  // namespace teller::tpe

#endif  // TELLER_TPE_SEQUENCE_H_
