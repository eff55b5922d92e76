#include "passes/fuse_contraction_epilogue.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/fused_kind.h"
#include "passes/fuse_elementwise.h"

namespace weft {
namespace {

bool float_contraction(const Graph& g, const Node& node) {
  if (node.operands.size() != 2 || node.results.size() != 1) return false;
  // Every float dtype: a bf16/f16 contraction (autocast's) takes its bias and activation
  // in its epilogue as an f32 one does (the CPU's half GEMMs run epilogues over C's rows).
  return is_floating(g.type(node.result()).dtype);
}

// Whether a State-category node (an assign) writes `v` into a parameter or state: such
// a value is left to fuse-elementwise, which computes an optimizer's whole update in one
// kernel written in place into the parameter's and state's buffers.
bool updates_state(const Graph& g, const std::vector<std::vector<int>>& users, ValueId v) {
  return std::any_of(users[v].begin(), users[v].end(), [&](int u) {
    return u >= 0 && g.node(u).info().category == OpCategory::State;
  });
}

// With ContractionEpilogueOptions::assigned_in_epilogues: the values a growing group's
// members read and the inputs its assigned members are written into (a State-category
// node's first operand). A node joins only when the group then reads none of those inputs,
// so updates_in_place still writes each assigned value in place (a contraction never takes
// over an operand: a carry the GEMM reads, h' = tanh(h·W + x), stays apart as before).
class AssignGuard {
 public:
  AssignGuard(const Graph& g, const std::vector<std::vector<int>>& users)
      : g_(g), users_(users), read_(g.num_values(), 0), target_(g.num_values(), 0) {}

  bool admits(const Node& node) const {
    for (ValueId v : node.operands) {
      if (target_[v]) return false;
    }
    for (ValueId t : targets_of(node.result())) {
      if (read_[t] || std::find(node.operands.begin(), node.operands.end(), t) != node.operands.end()) return false;
    }
    return true;
  }

  void add(const Node& node) {
    for (ValueId v : node.operands) read_[v] = 1;
    for (ValueId r : node.results) {
      for (ValueId t : targets_of(r)) target_[t] = 1;
    }
  }

 private:
  std::vector<ValueId> targets_of(ValueId v) const {
    std::vector<ValueId> targets;
    for (int u : users_[v]) {
      if (u >= 0 && g_.node(u).info().category == OpCategory::State) targets.push_back(g_.node(u).operands[0]);
    }
    return targets;
  }

  const Graph& g_;
  const std::vector<std::vector<int>>& users_;
  std::vector<char> read_, target_;
};

// Whether a value of type `t` can be an epilogue member's of the product of type
// `product`: one per element of the product (its shape), of any float dtype: a half
// product widened to f32, summed in f32 and rounded back (autodiff's sum of half
// cotangents) is the product's epilogue as a bias add is. The generated epilogue computes
// what its casts say (the backends' `fusible` decides which it compiles).
bool epilogue_type(const Type& t, const Type& product) {
  return t.shape == product.shape && is_floating(t.dtype);
}

// One group: the contraction, then its epilogue members in node order.
struct Group {
  std::vector<int> members;  // node indices, the contraction first
};

// Grows the epilogue chain of the contraction at node `root` (see the header).
Group grow_chain(const Graph& g, int root, const std::vector<char>& fusible,
                 const std::vector<char>& reducible, const std::vector<std::vector<int>>& users,
                 const std::vector<int>& last_reader, bool assigned_joins) {
  const int n = static_cast<int>(g.nodes().size());
  const Type& type = g.type(g.node(root).result());
  Group group{{root}};
  AssignGuard guard(g, users);
  guard.add(g.node(root));
  std::vector<char> member(g.num_values(), 0), depends(g.num_values(), 0);
  ValueId tail = g.node(root).result();
  member[tail] = 1;
  for (int j = root + 1; j < n && j <= last_reader[tail]; ++j) {
    const Node& node = g.node(j);
    bool reads_tail = false, reads_group = false, blocked = false;
    for (ValueId v : node.operands) {
      reads_tail = reads_tail || v == tail;
      reads_group = reads_group || member[v] || depends[v];
      blocked = blocked || depends[v];
    }
    const bool joins = reads_tail && !blocked && fusible[j] && node.results.size() == 1 &&
                       epilogue_type(g.type(node.result()), type) &&
                       (assigned_joins ? guard.admits(node) : !updates_state(g, users, node.result()));
    if (joins) {
      guard.add(node);
      group.members.push_back(j);
      tail = node.result();
      member[tail] = 1;
    } else if (reads_group) {
      for (ValueId r : node.results) depends[r] = 1;
    }
  }
  // A tail read only by elementwise nodes of its type or by reductions (that the
  // predicate accepts) outside the group is given back: fuse-elementwise can compute it
  // inside its readers' kernel, where the epilogue would write it to memory for them (an
  // optimizer's (1-β)·g read by the update's kernel; softmax backward's dP·P read by
  // its row sum).
  while (group.members.size() > 1) {
    const ValueId v = g.node(group.members.back()).result();
    const bool to_elementwise = std::all_of(users[v].begin(), users[v].end(), [&](int u) {
      if (u < 0) return false;
      const Node& reader = g.node(u);
      return reducible[u] ||
             (fusible[u] && reader.results.size() == 1 && epilogue_type(g.type(reader.result()), type));
    });
    if (!to_elementwise) break;
    group.members.pop_back();
  }
  // A chain that leaves the product's dtype ends at its last member of that dtype, if it
  // has one (a bf16 logits' bias add, not the cast widening it for the loss): the members
  // after it stay for fuse-elementwise, as before they could join. Otherwise it keeps
  // them all, and the product stays a result (make_body).
  for (size_t k = group.members.size(); k-- > 1;) {
    if (g.type(g.node(group.members[k]).result()) != type) continue;
    group.members.resize(k + 1);
    break;
  }
  if (group.members.size() < 2) return group;
  // Producers of the epilogue's other operands join too when the group reads all of
  // their value and it has the product's type (a moment estimate's m·β before the
  // gradient's (1-β)·g is added): otherwise each would be a kernel of its own.
  std::vector<char> in_group(n, 0);
  for (int m : group.members) in_group[m] = 1;
  for (size_t k = 1; k < group.members.size(); ++k) {
    for (ValueId v : g.node(group.members[k]).operands) {
      const int p = g.value(v).node;
      if (p < 0 || in_group[p] || !fusible[p] || !epilogue_type(g.type(v), type)) continue;
      // ... and the contraction itself does not read it: the kernel's GEMM operands come
      // from outside (a residual `x + x·W` whose x is an elementwise result, a layer
      // norm's output, made a cycle).
      const bool private_value =
          std::all_of(users[v].begin(), users[v].end(),
                      [&](int u) { return u >= 0 && in_group[u] && u != group.members[0]; });
      if (!private_value || (assigned_joins && !guard.admits(g.node(p)))) continue;
      guard.add(g.node(p));
      in_group[p] = 1;
      group.members.push_back(p);
    }
  }
  std::sort(group.members.begin() + 1, group.members.end());
  return group;
}

// The body of `group` (layout in the header); `operands` receives the fused node's
// operands and `extra` the members (other than the last) whose value leaves the kernel.
std::shared_ptr<const Graph> make_body(const Graph& g, const Group& group,
                                       const std::vector<std::vector<int>>& users,
                                       std::vector<ValueId>& operands, std::vector<int>& extra) {
  auto body = std::make_shared<Graph>("body");
  std::unordered_set<int> in_group(group.members.begin(), group.members.end());
  std::unordered_map<ValueId, ValueId> inner;  // outer value -> body value
  const Node& root = g.node(group.members[0]);
  std::vector<ValueId> root_args;
  for (ValueId v : root.operands) {
    root_args.push_back(body->add_input(std::to_string(operands.size()), g.type(v)));
    operands.push_back(v);
  }
  for (size_t k = 1; k < group.members.size(); ++k) {
    for (ValueId v : g.node(group.members[k]).operands) {
      const int p = g.value(v).node;
      if ((p >= 0 && in_group.count(p)) || inner.count(v)) continue;
      inner[v] = body->add_input(std::to_string(operands.size()), g.type(v));
      operands.push_back(v);
    }
  }
  int next = 0;
  for (size_t k = 0; k < group.members.size(); ++k) {
    const Node& node = g.node(group.members[k]);
    std::vector<ValueId> args;
    if (k == 0) {
      args = root_args;
    } else {
      for (ValueId v : node.operands) args.push_back(inner.at(v));
    }
    inner[node.result()] = body->add_node(node.op, std::move(args), node.attrs, node.loc,
                                          g.type(node.result()), "t" + std::to_string(next++));
    if (k + 1 == group.members.size()) continue;
    const ValueId v = node.result();
    const bool escapes = std::any_of(users[v].begin(), users[v].end(), [&](int u) {
      return u < 0 || !in_group.count(u);
    });
    if (escapes) extra.push_back(group.members[k]);
  }
  // The runtime computes C in the first result's buffer unless C is a result itself: a
  // chain that ends in another dtype (widened, not rounded back) keeps C as one.
  const ValueId c = root.result(), last = g.node(group.members.back()).result();
  if (g.type(last) != g.type(c) && (extra.empty() || extra.front() != group.members[0])) {
    extra.insert(extra.begin(), group.members[0]);
  }
  body->add_output(inner.at(g.node(group.members.back()).result()));
  for (int m : extra) body->add_output(inner.at(g.node(m).result()));
  return body;
}

}  // namespace

FuseContractionEpiloguePass::FuseContractionEpiloguePass(ContractionEpilogueOptions options)
    : options_(std::move(options)) {
  if (!options_.contraction) options_.contraction = float_contraction;
  if (!options_.fusible) options_.fusible = default_fusible;
}

StatusOr<bool> FuseContractionEpiloguePass::run(Graph& g) {
  for (const Node& node : g.nodes()) {
    for (ValueId r : node.results) {
      if (!g.value(r).type) {
        return Error{"fuse-contraction-epilogue: %" + g.value(r).name +
                         " has no type; run infer-types first",
                     node.loc};
      }
    }
  }
  // Groups are formed one at a time, each rewriting the graph before the next is grown,
  // so the dependence test of a later group sees the earlier fused nodes as they stand.
  std::unordered_set<ValueId> tried;  // contraction results already considered
  bool changed = false;
  for (;;) {
    const int n = static_cast<int>(g.nodes().size());
    int root = -1;
    for (int i = 0; i < n && root < 0; ++i) {
      const Node& node = g.node(i);
      if (node.info().category != OpCategory::Contraction || node.results.size() != 1 ||
          tried.count(node.result())) {
        continue;
      }
      tried.insert(node.result());
      if (options_.contraction(g, node)) root = i;
    }
    if (root < 0) break;

    std::vector<char> fusible(n, 0), reducible(n, 0);
    std::vector<std::vector<int>> users(g.num_values());  // -1: a graph output
    std::vector<int> last_reader(g.num_values(), -1);
    for (int i = 0; i < n; ++i) {
      const Node& node = g.node(i);
      const OpCategory c = node.info().category;
      fusible[i] = c == OpCategory::Elementwise && options_.fusible(g, node);
      reducible[i] = c == OpCategory::Reduction && options_.fusible(g, node);
      for (ValueId v : node.operands) {
        users[v].push_back(i);
        last_reader[v] = i;
      }
    }
    for (ValueId v : g.outputs()) users[v].push_back(-1);
    const Group group =
        grow_chain(g, root, fusible, reducible, users, last_reader, options_.assigned_in_epilogues);
    if (group.members.size() < 2) continue;

    std::vector<ValueId> operands;
    std::vector<int> extra;
    std::shared_ptr<const Graph> body = make_body(g, group, users, operands, extra);
    // The fused node replaces the chain's last member; the extra results move to it.
    std::vector<ValueId> results = {g.node(group.members.back()).result()};
    for (int m : extra) {
      results.push_back(g.node(m).result());
      g.node(m).results.clear();
    }
    Node& fused = g.node(group.members.back());
    fused.op = Op::Fused;
    fused.operands = std::move(operands);
    fused.results = std::move(results);
    fused.attrs = {};
    set_fused_kind(fused, FusedKind::contraction);
    fused.body = std::move(body);
    std::vector<bool> keep(n, true);
    for (size_t k = 0; k + 1 < group.members.size(); ++k) keep[group.members[k]] = false;
    g.remove_nodes(keep);
    // Readers of an extra result that stood before the chain's end now follow it.
    g.sort_topologically();
    changed = true;
  }
  return changed;
}

}  // namespace weft
