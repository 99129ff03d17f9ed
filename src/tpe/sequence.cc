#include "teller/tpe/sequence.h"

#include <string>

namespace teller::tpe {

bool IsDepthFirstOrder(std::span<const int32_t> parent) {
  // The open path from a root to the previous node; a node's parent must be on it.
  std::vector<int32_t> path;
  for (size_t i = 0; i < parent.size(); ++i) {
    const int32_t p = parent[i];
    if (p < -1 || p >= static_cast<int64_t>(i)) return false;
    while (!path.empty() && path.back() != p) path.pop_back();
    if (p != -1 && path.empty()) return false;
    path.push_back(static_cast<int32_t>(i));
  }
  return true;
}

Result<Sequence> Serialize(const TreeView& tree, std::span<const uint8_t> keep) {
  const size_t n = tree.symbol.size();
  if (tree.parent.size() != n || tree.duration.size() != n || tree.depth.size() != n) {
    return Status::Error("tree columns differ in length");
  }
  if (!keep.empty() && keep.size() != n) return Status::Error("keep mask differs in length");
  Sequence seq;
  auto emit = [&](uint32_t node, int32_t parent) {
    seq.ids.push_back(tree.symbol[node]);
    seq.parent.push_back(parent);
    seq.duration.push_back(tree.duration[node]);
    seq.depth.push_back(tree.depth[node]);
    const auto pos = static_cast<uint32_t>(seq.span.size());
    seq.span.emplace_back(pos, pos);
    seq.node.push_back(node);
  };

  if (keep.empty() && IsDepthFirstOrder(tree.parent)) {
    // The common case (dataset steps are stored in depth-first order): no traversal.
    seq.ids.reserve(n);
    seq.parent.reserve(n);
    seq.duration.reserve(n);
    seq.depth.reserve(n);
    seq.span.reserve(n);
    seq.node.reserve(n);
    for (size_t i = 0; i < n; ++i) emit(static_cast<uint32_t>(i), tree.parent[i]);
    return seq;
  }

  // Children lists in stored order (counting sort by parent).
  std::vector<uint32_t> child_begin(n + 2, 0), children(n);
  std::vector<uint32_t> roots;
  for (size_t i = 0; i < n; ++i) {
    const int32_t p = tree.parent[i];
    if (p < -1 || p >= static_cast<int64_t>(n) || p == static_cast<int64_t>(i)) {
      return Status::Error("node " + std::to_string(i) + " has parent " + std::to_string(p) +
                           " outside the tree");
    }
    if (p == -1) {
      roots.push_back(static_cast<uint32_t>(i));
    } else {
      ++child_begin[p + 2];
    }
  }
  for (size_t i = 2; i < n + 2; ++i) child_begin[i] += child_begin[i - 1];
  for (size_t i = 0; i < n; ++i) {
    const int32_t p = tree.parent[i];
    if (p >= 0) children[child_begin[p + 1]++] = static_cast<uint32_t>(i);
  }
  // Now children of p are children[child_begin[p] .. child_begin[p + 1]).

  // Iterative DFS: (node, output position of its nearest kept ancestor).
  std::vector<std::pair<uint32_t, int32_t>> todo;
  size_t visited = 0;
  for (uint32_t root : roots) {
    todo.emplace_back(root, -1);
    while (!todo.empty()) {
      const auto [node, up] = todo.back();
      todo.pop_back();
      ++visited;
      int32_t below = up;
      if (keep.empty() || keep[node]) {
        below = static_cast<int32_t>(seq.ids.size());
        emit(node, up);
      }
      for (uint32_t c = child_begin[node + 1]; c > child_begin[node]; --c) {
        todo.emplace_back(children[c - 1], below);
      }
    }
  }
  if (visited != n) return Status::Error("the tree has a cycle (nodes unreachable from a root)");
  return seq;
}

void ApplyMergeAt(Sequence& seq, size_t i, TokenId new_symbol) {
  const size_t j = i + 1;
  seq.ids[i] = new_symbol;
  seq.duration[i] += seq.duration[j];
  seq.span[i].second = seq.span[j].second;
  seq.ids.erase(seq.ids.begin() + j);
  seq.parent.erase(seq.parent.begin() + j);
  seq.duration.erase(seq.duration.begin() + j);
  seq.depth.erase(seq.depth.begin() + j);
  seq.span.erase(seq.span.begin() + j);
  const auto ji = static_cast<int32_t>(j);
  for (int32_t& p : seq.parent) {
    if (p == ji) {
      p = static_cast<int32_t>(i);
    } else if (p > ji) {
      --p;
    }
  }
}

}  // namespace teller::tpe
