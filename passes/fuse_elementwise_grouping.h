#pragma once
// The grouping step of fuse-elementwise (passes/fuse_elementwise.h): which nodes form
// which kernel, by the rules at the top of that header. Internal to the pass's library.

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "passes/fuse_elementwise.h"

namespace weft {

/// Whether the fuser may put `node` into a kernel: an elementwise node or a reduction
/// that the predicate accepts (other categories are never asked).
bool may_fuse(const Graph& g, const Node& node, const FuseOptions& options);

/// The group being grown: its id and root, the shape `full` its members compute (a
/// reduction root: its input's shape) and, in a row group, the per-row shape `row` of its
/// keepdims reductions; `rows`: whether it may take row reductions and per-row values.
struct GrowingGroup {
  int id = -1;
  int root = -1;
  Shape full;
  std::optional<Shape> row;
  bool rows = false;
};

/// The grouping of one graph into kernels (see the top of fuse_elementwise.h): each
/// group's member node indices (root first), and the members whose value also leaves
/// the kernel.
class FusionGrouping {
 public:
  FusionGrouping(const Graph& g, const FuseOptions& options);

  /// Forms the groups; when contracting them would make the graph cyclic (through the
  /// concats' parts, the escapes to later users or the relaxed rows), forms them again
  /// without those; then lets readers join their producers' groups (merge_readers).
  void form();

  /// Per group, its member node indices, root first (the pass sorts them in place).
  std::vector<std::vector<int>>& groups() { return groups_; }
  /// Per group, the members whose value also leaves the kernel as one more result.
  std::vector<std::vector<int>>& extra() { return extra_; }
  /// Whether node `i` is a reduction (OpCategory::Reduction).
  bool is_reduction(int i) const { return reduction_[i]; }

 private:
  /// A fusible node may be a root; only elementwise ones may join a group as producers.
  void classify_nodes();

  /// Users of each value: node indices, or n for a graph output.
  void find_users();

  /// Whether node `from` reaches node `to` through users (nodes after `to` cannot).
  bool reaches(int from, int to) const;
  /// Whether node `from` reaches one of `targets` (node indices, none after `last`).
  bool reaches_any(int from, const std::vector<int>& targets, int last) const;

  /// `relaxed`: a row group's member may also be used by a node before the root that
  /// does not lead back to it (layer-norm backward's x̂ in the gain's gradient, computed
  /// before the GELU backward that ends the group); `later`: an elementwise group's
  /// member may also be used after the root (it leaves the kernel as an extra result);
  /// form() then checks that the groups together leave the graph acyclic.
  /// `parts`: a group whose root is part of a concat starts with the concat's other
  /// parts too (concat_parts).
  void form_groups(bool relaxed, bool later, bool parts);

  /// The parts of the concats `root` is a part of (and, transitively, of the concats
  /// those are parts of) that may start one group with it: elementwise, fusible, in no
  /// group yet, of root's shape, each of their other users after the root, an assign, a
  /// part too, or a node that leads to no part. Root first; just the root when there are
  /// no others.
  std::vector<int> concat_parts(int root) const;

  /// Each elementwise group that reads another elementwise group of its shape, values
  /// that only the two read, and otherwise only inputs and nodes outside the groups
  /// before that group's first member, joins it unless that makes the groups cyclic: the
  /// reader's values and the producer's it reads come from one kernel (an LSTM's next
  /// cell gradient dc·f beside the gates' gradients).
  void merge_readers();

  /// Group `id`'s members whose value is used outside it (or is a graph output), its last
  /// member (the root the pass makes its fused node) aside.
  std::vector<int> escaping(int id) const;

  /// Starts a group at `root` (with the other parts of its concats, when form_groups was
  /// asked to) and lets producers join until none can: one that fails only because a
  /// user is not in the group yet may join once it is (softmax's exp feeds the sum and
  /// the division). A reduction that absorbs nothing stays alone.
  void grow_group(int root);

  /// Whether reduction `root`, having absorbed nothing, still becomes a kernel of one:
  /// with FuseOptions::lone_reductions, or with lone_half_reductions when it reduces f16
  /// or bf16 (see the top of fuse_elementwise.h).
  bool kernel_when_alone(int root) const;

  /// A group of `root` alone, with the shapes its members may have.
  GrowingGroup start_group(int root);

  /// The producer of `v` joins the group when it is fusible, in no group yet, every use
  /// of `v` allows it (used_only_inside) and its shape fits (admits). True if it joined.
  bool try_join(ValueId v, GrowingGroup& grow);

  /// Every use of `v` inside the group; or outside it, in a row group or under an
  /// elementwise root by nodes after the root, under an elementwise root by assigns:
  /// the value then also leaves the kernel as one more result (`escapes`: an
  /// optimizer's new moment estimates: one kernel computes them and the parameter; an
  /// LSTM cell's gate activations, which its backward reads again; layer-norm
  /// backward's x̂, also summed over the batch for the gain's gradient).
  bool used_only_inside(ValueId v, const GrowingGroup& grow, bool& escapes) const;

  /// Whether producer `p` has a shape the group computes; a row reduction or a per-row
  /// value may make the group a row group (setting grow.row, and grow.full when the
  /// members so far compute per-row values).
  bool admits(int p, GrowingGroup& grow) const;

  /// Whether a keepdims reduction of `full` to `s` computes p's value through fusible
  /// per-row nodes of shape `s` not yet in a group (each node visited once).
  bool from_row_reduction(int p, const Shape& s, const Shape& full) const;

  /// Each group contracted to one node, whether the graph stays acyclic (Kahn's
  /// algorithm on the clusters: groups, then one per ungrouped node).
  bool acyclic() const;

  const Graph& g_;
  const FuseOptions& options_;
  const int n_;
  std::vector<char> fusible_, reduction_;
  std::vector<std::vector<int>> users_;
  bool relaxed_ = false, later_ = false, parts_ = false;
  std::vector<int> group_;               // node -> its group, or -1
  std::vector<std::vector<int>> groups_;  // member node indices, root first
  std::vector<std::vector<int>> extra_;   // members whose value also leaves the kernel
};

}  // namespace weft
