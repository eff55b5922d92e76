#include "passes/rotate_carry_casts.h"

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "ir/cast.h"
#include "ir/scan.h"

namespace weft {
namespace {

/// A carry the body casts at its start: the carry (an index among the carries) and the
/// dtype; the casts that make it (one per value and dtype, or several if nothing merged
/// them).
struct Rotation {
  int64_t carry;
  DType to;
  std::vector<int> casts;  ///< Body node indices.
};

std::vector<Rotation> rotations(const Node& loop) {
  const Graph& body = *loop.body;
  const int64_t consts = loop.int_attr("consts"), carries = loop.int_attr("carries");
  std::vector<Rotation> out;
  std::map<std::pair<int64_t, DType>, size_t> index;
  for (int j = 0; j < static_cast<int>(body.nodes().size()); ++j) {
    const Node& n = body.node(j);
    if (n.op != Op::Cast) continue;
    const int64_t carry = body.input_index(n.operands[0]) - consts;
    if (carry < 0 || carry >= carries) continue;
    const DType to = n.dtype_attr("dtype");
    auto [it, added] = index.emplace(std::pair{carry, to}, out.size());
    if (added) out.push_back({carry, to, {}});
    out[it->second].casts.push_back(j);
  }
  return out;
}

/// Loop `n`'s body with a carry for each rotation after its own carries: the casts of
/// the carry read that parameter instead, and the body returns its new value cast. Ys `y`
/// with `restacked[y]` = r >= 0 stacks rotation r's new low carry (the value it casts is
/// the carry's new value): autodiff adds the ys's and the low carry's cotangents in f32
/// and passes the sum to the f32 carry unrounded (autodiff/grad.h), as when each was
/// widened apart.
Graph rotated_body(const Node& n, const std::vector<Rotation>& rs, const std::vector<int>& restacked) {
  const Graph& body = *n.body;
  const int64_t consts = n.int_attr("consts"), carries = n.int_attr("carries");
  BodyRebuilder rebuilt(body);
  std::vector<ValueId> low;
  rebuilt.inputs(0, consts + carries);
  for (const Rotation& r : rs) {
    // A parameter of the casts' type (the carry's shape in r.to), of the carry's kind and location.
    const Input& in = body.inputs()[consts + r.carry];
    low.push_back(rebuilt.input_for(body.node(r.casts[0]).result(), in.kind, in.loc));
    for (int j : r.casts) rebuilt.replace(j, low.back());
  }
  rebuilt.inputs(consts + carries, body.inputs().size());
  rebuilt.copy_nodes();
  // The outputs: the carries, each rotation's new value (the carry passed through is
  // its low parameter passed through), the rest.
  Graph& out = rebuilt.graph();
  std::vector<ValueId> outputs;
  for (int64_t k = 0; k < carries; ++k) outputs.push_back(rebuilt[body.outputs()[k]]);
  for (size_t r = 0; r < rs.size(); ++r) {
    const ValueId next = body.outputs()[rs[r].carry];
    const bool passed = next == body.inputs()[consts + rs[r].carry].value;
    outputs.push_back(passed ? low[r] : add_cast(out, rebuilt[next], rs[r].to, body.node(rs[r].casts[0]).loc));
  }
  for (size_t k = carries; k < body.outputs().size(); ++k) {
    const int r = restacked[k - carries];
    outputs.push_back(r >= 0 ? outputs[carries + r] : rebuilt[body.outputs()[k]]);
  }
  out.set_outputs(std::move(outputs));
  std::vector<Type> declared = body.declared_output_types();
  if (!declared.empty()) {
    for (size_t k = carries; k < declared.size(); ++k) {
      if (restacked[k - carries] >= 0) declared[k].dtype = rs[restacked[k - carries]].to;
    }
    std::vector<Type> added;
    for (const Rotation& r : rs) added.push_back(Type{r.to, declared[r.carry].shape});
    declared.insert(declared.begin() + carries, added.begin(), added.end());
  }
  out.set_declared_output_types(std::move(declared));
  return std::move(out);
}

/// Casts of value `v` to `to` in `g` (node indices), if every use of `v` is one; else none.
std::vector<int> only_casts(const Graph& g, ValueId v, DType to, const std::vector<int>& uses) {
  std::vector<int> casts;
  for (int j = 0; j < static_cast<int>(g.nodes().size()); ++j) {
    const Node& c = g.node(j);
    if (c.op == Op::Cast && c.operands[0] == v && c.dtype_attr("dtype") == to) casts.push_back(j);
  }
  return static_cast<int>(casts.size()) == uses[v] ? casts : std::vector<int>{};
}

/// Loop `i` of `g` with its rotations, in place (the graph's values keep their ids: the
/// trainer holds some): the initial low copies cast at the end of the graph (sorted
/// later), the new carries' results after the loop's own last carries. A cast of a last
/// carry after the loop to the same dtype reads the new result instead, and a ys of a
/// carry's new value read only cast to that dtype stacks the low copy; those casts are
/// marked in `dead` (their values have no use left).
void rotate_loop(Graph& g, int i, const std::vector<Rotation>& rs, std::vector<bool>& dead) {
  const int64_t consts = g.node(i).int_attr("consts"), carries = g.node(i).int_attr("carries");
  const std::vector<int> uses = g.use_counts();
  std::vector<int> restacked(g.node(i).results.size() - carries, -1);
  for (size_t y = 0; y < restacked.size(); ++y) {
    const ValueId stacked = g.node(i).results[carries + y], made = g.node(i).body->outputs()[carries + y];
    for (size_t r = 0; r < rs.size() && restacked[y] < 0; ++r) {
      if (made != g.node(i).body->outputs()[rs[r].carry] || g.node(i).body->value(made).node < 0) continue;
      const std::vector<int> casts = only_casts(g, stacked, rs[r].to, uses);
      if (casts.empty()) continue;
      restacked[y] = static_cast<int>(r);
      for (int j : casts) {
        g.replace_all_uses(g.node(j).result(), stacked);
        dead[j] = true;
      }
      g.mutable_value(stacked).type->dtype = rs[r].to;
    }
  }
  std::vector<ValueId> initial, last;
  for (const Rotation& r : rs) {
    initial.push_back(add_cast(g, g.node(i).operands[consts + r.carry], r.to, g.node(i).loc));
  }
  Graph body = rotated_body(g.node(i), rs, restacked);
  for (const Rotation& r : rs) last.push_back(g.add_result(i, "", Type{r.to, g.type(g.node(i).results[r.carry]).shape}));
  Node& n = g.node(i);
  n.operands.insert(n.operands.begin() + consts + carries, initial.begin(), initial.end());
  n.results.resize(n.results.size() - last.size());
  n.results.insert(n.results.begin() + carries, last.begin(), last.end());
  n.attrs["carries"] = carries + static_cast<int64_t>(rs.size());
  n.body = std::make_shared<const Graph>(std::move(body));
  for (size_t r = 0; r < rs.size(); ++r) {
    const ValueId result = g.node(i).results[rs[r].carry];
    for (int j = 0; j < static_cast<int>(dead.size()); ++j) {
      const Node& c = g.node(j);
      if (c.op != Op::Cast || c.operands[0] != result || c.dtype_attr("dtype") != rs[r].to) continue;
      g.replace_all_uses(c.result(), last[r]);
      dead[j] = true;
    }
  }
}

bool rotate(Graph& g) {
  bool any = false;
  const int nodes = static_cast<int>(g.nodes().size());  // not the casts appended on the way
  std::vector<bool> dead(nodes, false);
  for (int i = 0; i < nodes; ++i) {
    if (g.node(i).op != Op::Scan || !g.node(i).body) continue;
    Graph body = *g.node(i).body;
    if (rotate(body)) {
      g.node(i).body = std::make_shared<const Graph>(std::move(body));
      any = true;
    }
    const std::vector<Rotation> rs = rotations(g.node(i));
    if (rs.empty()) continue;
    rotate_loop(g, i, rs, dead);
    any = true;
  }
  if (!any) return false;
  std::vector<bool> keep(g.nodes().size(), true);
  for (int j = 0; j < nodes; ++j) keep[j] = !dead[j];
  g.remove_nodes(keep);
  g.sort_topologically();
  return true;
}

}  // namespace

StatusOr<bool> RotateCarryCastsPass::run(Graph& g) { return rotate(g); }

}  // namespace weft
