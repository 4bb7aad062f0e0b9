// The double binary tree (Sanders, Speck & Traeff 2009; NCCL's tree) as parents of relative
// ranks: src/collectives/tree.cc builds its schedule on them, and the closed forms
// (model/cost/tree.cc) count the tree's edges between nodes.
#pragma once

#include <array>
#include <vector>

namespace commsim {

// The parent of label x in the in-order binary tree over [lo, hi] (lo >= 1), or -1 for its root:
// the nearer-in-rank of x - b and x + b (b = x's lowest set bit) inside the range.
inline int inorder_parent(int lo, int hi, int x) {
  const int bit = x & -x, left = x - bit, right = x + bit;
  const bool has_left = left >= lo, has_right = right <= hi;
  if (has_left && has_right) return (left & -left) < (right & -right) ? left : right;
  if (has_left) return left;
  if (has_right) return right;
  return -1;
}

// The parents of the relative ranks 0..p-1 in trees A and B (-1 at a root); see
// src/collectives/tree.cc for the labels. rooted: broadcast and reduce (both trees hang below
// v = 0); otherwise allreduce.
inline std::array<std::vector<int>, 2> double_tree_parents(int p, bool rooted) {
  // The in-order tree over labels [lo, hi] on the ranks first..p-1 (label(v), rank(label) convert);
  // its root hangs below v = 0 when first == 1.
  auto inorder = [p](int first, int lo, int hi, auto label, auto rank) {
    std::vector<int> parent(p, -1);
    for (int v = first; v < p; ++v) {
      const int up = inorder_parent(lo, hi, label(v));
      parent[v] = up >= 0 ? rank(up) : first == 1 ? 0 : -1;
    }
    return parent;
  };
  const auto same = [](int v) { return v; };
  std::array<std::vector<int>, 2> out;
  out[0] = inorder(1, 1, p - 1, same, same);
  if (!rooted)
    out[1] = inorder(
        0, 1, p, [](int v) { return v + 1; }, [](int x) { return x - 1; });
  else if (p % 2 == 1)
    out[1] = inorder(
        1, 1, p - 1, [p](int v) { return p - v; }, [p](int x) { return p - x; });
  else
    out[1] = inorder(
        1, 2, p, [](int v) { return v + 1; }, [](int x) { return x - 1; });
  return out;
}

}  // namespace commsim
