#include "passes/fold_window_producers.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/operand_layout.h"
#include "ir/fused_kind.h"
#include "ir/kernel_space.h"
#include "ir/scan.h"

namespace weft {
namespace {

// A box of a value's elements: [start, stop) along each dimension.
struct Box {
  IntList start, stop;
  Shape shape() const {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < start.size(); ++d) dims.push_back(stop[d] - start[d]);
    return Shape(std::move(dims));
  }
};

// What of a value of shape `s`, broadcast into a box's value, the box reads: the same
// ranges where `s` has the box value's extent, all of a dimension of 1.
Box window_of(const Shape& s, const Box& w) {
  Box b;
  const int lead = static_cast<int>(w.start.size()) - s.rank();
  for (int i = 0; i < s.rank(); ++i) {
    const bool whole = s[i] == 1;
    b.start.push_back(whole ? 0 : w.start[static_cast<size_t>(i + lead)]);
    b.stop.push_back(whole ? 1 : w.stop[static_cast<size_t>(i + lead)]);
  }
  return b;
}

bool overlap(const Box& a, const Box& b) {
  for (size_t d = 0; d < a.start.size(); ++d) {
    if (std::max(a.start[d], b.start[d]) >= std::min(a.stop[d], b.stop[d])) return false;
  }
  return true;
}

// A value K's body reads from outside: `source` (the GEMM's result C is made when K is
// folded), of type `type`, from element `base` on (a K input window's start, else 0).
struct Leaf {
  ValueId body_value;
  ValueId source;
  Type type;
  IntList base;
};

// K as its readers compute it: its leaves, the body nodes to copy, the value it yields.
struct Producer {
  int node = -1;
  ValueId result = kNoValue;
  std::vector<Leaf> leaves;
  std::vector<int> nodes;
  ValueId output = kNoValue;
  int gemm_result = -1;  // a contraction: K's result that is C, or -1
};

// Node `i` of `g` as a producer to fold, if its kind and results allow it.
std::optional<Producer> producer(const Graph& g, int i) {
  const Node& k = g.node(i);
  if (k.op != Op::Fused || !k.body) return std::nullopt;
  const FusedKind kind = fused_kind(k);
  const bool gemm = kind == FusedKind::contraction;
  if (kind != FusedKind::elementwise && !gemm) return std::nullopt;
  const Graph& body = *k.body;
  Producer p;
  p.node = i;
  p.result = k.results[0];
  p.output = body.outputs()[0];
  const size_t first = gemm ? 2 : 0;
  if (gemm) {
    const Node& c = body.node(0);
    for (size_t o = 1; o < k.results.size(); ++o) {
      if (body.outputs()[o] != c.result() || p.gemm_result >= 0) return std::nullopt;
      p.gemm_result = static_cast<int>(o);
    }
    p.leaves.push_back({c.result(), kNoValue, body.type(c.result()), IntList(body.type(c.result()).shape.rank(), 0)});
  } else if (k.results.size() != 1) {
    return std::nullopt;
  }
  std::vector<bool> copied(body.nodes().size(), true);
  if (gemm) copied[0] = false;
  for (size_t j = first; j < body.inputs().size(); ++j) {
    const Type& type = g.type(k.operands[j]);
    if (const Node* w = input_window(body, j)) {
      copied[static_cast<size_t>(body.value(w->result()).node)] = false;
      p.leaves.push_back({w->result(), k.operands[j], type, w->ints_attr("start")});
    } else {
      p.leaves.push_back({body.inputs()[j].value, k.operands[j], type, IntList(type.shape.rank(), 0)});
    }
  }
  for (size_t n = 0; n < copied.size(); ++n) {
    if (copied[n]) p.nodes.push_back(static_cast<int>(n));
  }
  return p;
}

// A leaf's window in its source for the reader's window `w` of K's result.
Box leaf_box(const Graph& body, const Leaf& leaf, const Box& w) {
  Box b = window_of(body.type(leaf.body_value).shape, w);
  for (size_t d = 0; d < b.start.size(); ++d) {
    b.start[d] += leaf.base[d];
    b.stop[d] += leaf.base[d];
  }
  return b;
}

// Whether `r` reads K's result only through windows K can be computed in (rules 2 and 4
// of the header); appends those windows to `boxes`.
bool reads_through_windows(const Graph& g, const Node& r, const Producer& p, std::vector<Box>& boxes) {
  if (r.op != Op::Fused || !r.body || fused_kind(r) != FusedKind::elementwise) return false;
  const Graph& kbody = *g.node(p.node).body;
  const Shape& out = g.type(r.results[0]).shape;
  for (size_t j = 0; j < r.operands.size(); ++j) {
    if (r.operands[j] != p.result) continue;
    const Node* s = input_window(*r.body, j);
    if (s == nullptr || r.body->type(s->result()).shape != out) return false;
    const Box w{s->ints_attr("start"), s->ints_attr("stop")};
    for (const Leaf& leaf : p.leaves) {
      const Shape window = leaf_box(kbody, leaf, w).shape();
      if (window == leaf.type.shape) continue;
      for (ValueId v : r.results) {
        if (g.type(v).shape == leaf.type.shape) return false;
      }
      if (!codegen::innermost_contiguous(out, window, leaf.type.shape)) return false;
    }
    boxes.push_back(w);
  }
  return true;
}

// `r`'s body computing K's body in each of its windows of K's result; `operands`
// receives the reader's new operands. Numeric names are renumbered: the leaves' inputs
// and K's copied nodes take fresh numbers among them.
// With `stored`, K's value in each window is an extra output of the body, in the order of
// the reader's inputs; `stored_windows` receives those windows.
std::shared_ptr<Graph> inlined_body(const Graph& g, const Node& r, const Producer& p, bool stored,
                                    std::vector<ValueId>& operands, std::vector<Box>& stored_windows) {
  const Graph& body = *r.body;
  const Graph& kbody = *g.node(p.node).body;
  BodyRebuilder rebuilt(body, /*renumber=*/true);
  Graph& out = rebuilt.graph();
  std::vector<const Node*> windows(body.inputs().size(), nullptr);
  std::vector<std::vector<ValueId>> leaf_inputs(body.inputs().size());
  std::vector<ValueId> extra;  // K's value in each window, stored
  for (size_t j = 0; j < body.inputs().size(); ++j) {
    if (r.operands[j] != p.result) {
      rebuilt.input(j);
      operands.push_back(r.operands[j]);
      continue;
    }
    windows[j] = input_window(body, j);
    for (const Leaf& leaf : p.leaves) {
      leaf_inputs[j].push_back(out.add_input("", leaf.type, InputKind::data, body.inputs()[j].loc));
      operands.push_back(leaf.source);
    }
  }
  for (size_t j = 0; j < windows.size(); ++j) {
    if (windows[j] == nullptr) continue;
    const Box w{windows[j]->ints_attr("start"), windows[j]->ints_attr("stop")};
    std::vector<ValueId> kmap(kbody.num_values(), kNoValue);
    for (size_t l = 0; l < p.leaves.size(); ++l) {
      const Leaf& leaf = p.leaves[l];
      const Box b = leaf_box(kbody, leaf, w);
      kmap[leaf.body_value] = b.shape() == leaf.type.shape
                                  ? leaf_inputs[j][l]
                                  : out.add_node(Op::Slice, {leaf_inputs[j][l]}, {{"start", b.start}, {"stop", b.stop}},
                                                 windows[j]->loc, Type{leaf.type.dtype, b.shape()});
    }
    for (int i : p.nodes) {
      const Node& n = kbody.node(i);
      std::vector<ValueId> ops;
      for (ValueId o : n.operands) ops.push_back(kmap[o]);
      const Type& t = kbody.type(n.result());
      kmap[n.result()] = out.add_node(n.op, std::move(ops), n.attrs, n.loc, Type{t.dtype, window_of(t.shape, w).shape()});
    }
    rebuilt.replace(body.value(windows[j]->result()).node, kmap[p.output]);
    if (stored) {
      extra.push_back(kmap[p.output]);
      stored_windows.push_back(w);
    }
  }
  rebuilt.copy_nodes();
  for (ValueId v : body.outputs()) out.add_output(rebuilt[v]);
  for (ValueId v : extra) out.add_output(v);
  return std::make_shared<Graph>(std::move(out));
}

// The axis along which `boxes` tile a value of shape `s` exactly (each whole along every
// other axis, side by side without gap or overlap from 0 to the end), or -1.
int tiling_axis(std::vector<Box> boxes, const Shape& s) {
  if (boxes.size() < 2) return -1;
  for (int d = 0; d < s.rank(); ++d) {
    std::sort(boxes.begin(), boxes.end(), [&](const Box& a, const Box& b) { return a.start[d] < b.start[d]; });
    int64_t at = 0;
    bool tiles = true;
    for (const Box& b : boxes) {
      for (int e = 0; e < s.rank() && tiles; ++e) {
        tiles = e == d ? b.start[e] == at : b.start[e] == 0 && b.stop[e] == s[e];
      }
      at = b.stop[d];
    }
    if (tiles && at == s[d]) return d;
  }
  return -1;
}

// K's stored value made again from the windows its readers stored (`parts`, each with
// its window): a concat along `axis` after the last reader `after`; every use of K's
// result (graph outputs, the other readers) reads it instead.
void concat_of_windows(Graph& g, ValueId result, std::vector<std::pair<Box, ValueId>> parts, int axis, int after) {
  std::sort(parts.begin(), parts.end(),
            [&](const auto& a, const auto& b) { return a.first.start[axis] < b.first.start[axis]; });
  std::vector<ValueId> operands;
  for (const auto& [box, v] : parts) operands.push_back(v);
  const ValueId whole = g.add_node(Op::Concat, std::move(operands), {{"axis", int64_t{axis}}},
                                   g.node(g.value(result).node).loc, g.type(result));
  g.replace_all_uses(result, whole);
  std::vector<Node>& nodes = g.mutable_nodes();
  std::rotate(nodes.begin() + after + 1, nodes.end() - 1, nodes.end());
}

// Folds node `i` into its readers when the header's rules allow; true when it did.
bool fold(Graph& g, int i) {
  std::optional<Producer> p = producer(g, i);
  if (!p) return false;
  const std::vector<ValueId>& outputs = g.outputs();
  bool stored = std::find(outputs.begin(), outputs.end(), p->result) != outputs.end();
  std::vector<int> readers, others;
  std::vector<Box> boxes;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const Node& r = g.node(static_cast<int>(n));
    if (std::find(r.operands.begin(), r.operands.end(), p->result) == r.operands.end()) continue;
    if (r.op == Op::Assign) return false;  // a carry's next value: its concat would be a copy
    const size_t before = boxes.size();
    if (reads_through_windows(g, r, *p, boxes)) {
      readers.push_back(static_cast<int>(n));
    } else {
      boxes.resize(before);
      others.push_back(static_cast<int>(n));
      stored = true;
    }
  }
  for (size_t a = 0; a < boxes.size(); ++a) {
    for (size_t b = a + 1; b < boxes.size(); ++b) {
      if (overlap(boxes[a], boxes[b])) return false;
    }
  }
  if (readers.empty()) return false;
  const int axis = stored ? tiling_axis(boxes, g.type(p->result).shape) : -1;
  if (stored && (axis < 0 || (!others.empty() && others.front() < readers.back()))) return false;
  if (fused_kind(g.node(i)) == FusedKind::contraction) {
    const Node& k = g.node(i);
    const Node& c = k.body->node(0);
    const ValueId old = p->gemm_result >= 0 ? k.results[static_cast<size_t>(p->gemm_result)] : kNoValue;
    const ValueId made = g.add_node(c.op, {k.operands[0], k.operands[1]}, c.attrs, k.loc, k.body->type(c.result()));
    if (old != kNoValue) g.replace_all_uses(old, made);
    p->leaves[0].source = made;
    // The GEMM made here stands where K stood (remove_nodes renumbers): one after it.
    std::vector<Node>& nodes = g.mutable_nodes();
    std::rotate(nodes.begin() + i + 1, nodes.end() - 1, nodes.end());
    for (int& n : readers) ++n;
  }
  std::vector<std::pair<Box, ValueId>> parts;  // stored: each reader's windows of K
  for (int n : readers) {
    std::vector<ValueId> operands;
    std::vector<Box> windows;
    std::shared_ptr<Graph> body = inlined_body(g, g.node(n), *p, stored, operands, windows);
    g.node(n).body = std::move(body);
    g.node(n).operands = std::move(operands);
    for (const Box& w : windows) {
      parts.push_back({w, g.add_result(n, "", Type{g.type(p->result).dtype, w.shape()})});
    }
  }
  if (stored) concat_of_windows(g, p->result, std::move(parts), axis, readers.back());
  std::vector<bool> keep(g.nodes().size(), true);
  keep[static_cast<size_t>(i)] = false;
  g.remove_nodes(keep);
  return true;
}

}  // namespace

StatusOr<bool> FoldWindowProducersPass::run(Graph& g) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    // A fold removes node i (a contraction's GEMM takes its place): look again from the
    // start.
    if (fold(g, i)) changed = true, i = -1;
  }
  return changed;
}

}  // namespace weft
