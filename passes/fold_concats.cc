#include "passes/fold_concats.h"

#include <algorithm>
#include <utility>

#include "codegen/operand_layout.h"
#include "ir/fused_kind.h"
#include "ir/scan.h"

namespace weft {
namespace {

// The values written into an input's buffer after the step (assign's second operand).
std::vector<bool> assigned_values(const Graph& g) {
  std::vector<bool> assigned(g.num_values(), false);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Assign && n.operands.size() == 2) assigned[n.operands[1]] = true;
  }
  return assigned;
}

// Whether operand `v` of `concat` can be stored by its producer (the rules in the header).
bool storable_part(const Graph& g, const Node& concat, ValueId v, const std::vector<bool>& assigned,
                   const std::vector<bool>& unstorable) {
  const int p = g.value(v).node;
  if (p < 0 || assigned[v] || (static_cast<size_t>(p) < unstorable.size() && unstorable[static_cast<size_t>(p)])) {
    return false;
  }
  const Node& producer = g.node(p);
  if (producer.op != Op::Fused || !producer.body || fused_kind(producer) != FusedKind::elementwise) return false;
  const auto at = std::find(producer.results.begin(), producer.results.end(), v);
  const ValueId inner = producer.body->outputs()[static_cast<size_t>(at - producer.results.begin())];
  if (producer.body->value(inner).node < 0) return false;  // an input passed through
  const Type& part = g.type(v);
  const Type& whole = g.type(concat.result());
  return part.dtype == whole.dtype &&
         codegen::innermost_contiguous(g.type(producer.results[0]).shape, part.shape, whole.shape);
}

}  // namespace

std::vector<StoredConcat> stored_concats(const Graph& g, const std::vector<bool>& unstorable) {
  const std::vector<bool> assigned = assigned_values(g);
  std::vector<StoredConcat> stored;
  std::vector<int> stored_reads(g.num_values(), 0);    // per value: reads by stored concats
  std::vector<int> last_stored(g.num_values(), -1);    // the last stored concat reading it
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    const Node& n = g.node(i);
    if (n.op != Op::Concat || assigned[n.result()]) continue;
    bool all = true;
    for (size_t k = 0; k < n.operands.size() && all; ++k) {
      all = storable_part(g, n, n.operands[k], assigned, unstorable) &&
            std::count(n.operands.begin(), n.operands.end(), n.operands[k]) == 1;
    }
    if (!all) continue;
    StoredConcat c{n.result(), {}, static_cast<int>(g.nodes().size())};
    for (ValueId v : n.operands) {
      c.first_writer = std::min(c.first_writer, g.value(v).node);
      ++stored_reads[v];
      last_stored[v] = i;
    }
    stored.push_back(std::move(c));
  }
  // A part: an operand that stored concats alone read (use_counts counts graph outputs),
  // of the last of them.
  const std::vector<int> uses = g.use_counts();
  for (StoredConcat& c : stored) {
    const int at = g.value(c.result).node;
    for (ValueId v : g.node(at).operands) {
      if (uses[v] == stored_reads[v] && last_stored[v] == at) c.parts.push_back(v);
    }
  }
  return stored;
}

IntList part_start(const Graph& g, const Node& concat, size_t k) {
  const Shape& whole = g.type(concat.result()).shape;
  int64_t axis = concat.int_attr("axis");
  if (axis < 0) axis += whole.rank();
  IntList start(static_cast<size_t>(whole.rank()), 0);
  for (size_t j = 0; j < k; ++j) start[static_cast<size_t>(axis)] += g.type(concat.operands[j]).shape[static_cast<int>(axis)];
  return start;
}

Graph with_store_windows(const Graph& body, const std::vector<StoreWindow>& windows) {
  BodyRebuilder copy(body);
  copy.inputs(0, body.inputs().size());
  copy.copy_nodes();
  Graph& out = copy.graph();
  std::vector<ValueId> outputs;
  for (ValueId v : body.outputs()) outputs.push_back(copy[v]);
  std::vector<ValueId> also;  // windows of outputs stored in their own buffers too
  for (const StoreWindow& w : windows) {
    const ValueId part = copy[body.outputs()[w.output]];
    const Shape& shape = out.type(part).shape;
    IntList high;
    for (int d = 0; d < w.dest.shape.rank(); ++d) {
      high.push_back(w.dest.shape[d] - w.start[static_cast<size_t>(d)] - shape[d]);
    }
    const int producer = out.value(part).node;
    const ValueId pad = out.add_node(Op::Pad, {part}, {{"low", w.start}, {"high", high}},
                                     producer >= 0 ? out.node(producer).loc : Location{}, w.dest);
    (w.also ? also.emplace_back() : outputs[w.output]) = pad;
  }
  for (ValueId v : outputs) out.add_output(v);
  for (ValueId v : also) out.add_output(v);
  return std::move(out);
}

}  // namespace weft
