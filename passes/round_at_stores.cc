#include "passes/round_at_stores.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ir/cast.h"
#include "ir/shape_rules.h"

namespace weft {
namespace {


/// The body node that keeps its dtypes (see the header): a contraction body's
/// contraction, a reduction body's reduction; -1 when there is none.
int kept_root(const Graph& body, FusedKind kind) {
  if (kind == FusedKind::contraction) return 0;
  if (kind == FusedKind::reduction) return body.value(body.outputs()[0]).node;
  return -1;
}

/// Whether node `i` computes as it did: the kept root, or an op whose half rule is Exact
/// (it takes bits as they are: a window's slice).
bool keeps_dtypes(const Graph& body, int i, int root) {
  return i == root || half_rule(body.node(i).op) == HalfRule::Exact;
}

/// Whether each node of `body` has one result: a kernel's body, which the pass rewrites
/// (others are left alone).
bool kernel_body(const Graph& body) {
  return std::all_of(body.nodes().begin(), body.nodes().end(),
                     [](const Node& n) { return n.results.size() == 1; });
}

/// Whether every body node that reads body input `input` reads it wide: its half rule is
/// Widen or Follow and it is not the kept root.
bool read_only_wide(const Graph& body, int input, int root) {
  const ValueId v = body.inputs()[input].value;
  for (int i = 0; i < static_cast<int>(body.nodes().size()); ++i) {
    const Node& n = body.node(i);
    if (std::find(n.operands.begin(), n.operands.end(), v) == n.operands.end()) continue;
    if (keeps_dtypes(body, i, root) || half_rule(n.op) == HalfRule::Convert) return false;
  }
  return std::find(body.outputs().begin(), body.outputs().end(), v) == body.outputs().end();
}

/// Whether `value` is a number of half dtype `d`: finite with at most 8 (bf16) or 11
/// (f16) significant bits, within the dtype's range (f16's subnormals are multiples of
/// 2^-24, bf16's of 2^-133).
bool holds_exactly(DType d, double value) {
  if (value == 0 || !std::isfinite(value)) return true;
  if (d == DType::f16 && std::abs(value) > 65504) return false;
  int e = 0;
  std::frexp(value, &e);
  const int quantum = std::max(e - (d == DType::bf16 ? 8 : 11), d == DType::bf16 ? -133 : -24);
  const double units = std::ldexp(value, -quantum);
  return units == std::trunc(units);
}

/// For each node of `g`, the operands (by position) that are half scalar constants
/// (`full` of rank 0) which their dtype cannot hold and which every reader, each a fused
/// kernel, reads only wide; those constants' nodes are retyped to f32 here.
std::vector<std::vector<bool>> widen_constants(Graph& g) {
  std::vector<std::vector<int>> readers(g.num_values());
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    for (ValueId v : g.node(i).operands) {
      if (readers[v].empty() || readers[v].back() != i) readers[v].push_back(i);
    }
  }
  std::vector<std::vector<bool>> wide(g.nodes().size());
  for (Node& c : g.mutable_nodes()) {
    if (c.op != Op::Full) continue;
    const ValueId k = c.result();
    const Type t = g.type(k);
    if (!is_half(t.dtype) || t.shape.rank() != 0 || holds_exactly(t.dtype, c.float_attr("value")) ||
        std::find(g.outputs().begin(), g.outputs().end(), k) != g.outputs().end()) {
      continue;
    }
    bool all_wide = !readers[k].empty();
    for (int u : readers[k]) {
      const Node& n = g.node(u);
      all_wide = all_wide && n.op == Op::Fused && n.body && kernel_body(*n.body);
      const int root = all_wide ? kept_root(*n.body, fused_kind(n)) : -1;
      for (size_t j = 0; all_wide && j < n.operands.size(); ++j) {
        all_wide = n.operands[j] != k || read_only_wide(*n.body, static_cast<int>(j), root);
      }
    }
    if (!all_wide) continue;
    c.attrs["dtype"] = DType::f32;
    g.mutable_value(k).type = Type{DType::f32, t.shape};
    for (int u : readers[k]) {
      const Node& n = g.node(u);
      wide[u].resize(n.operands.size(), false);
      for (size_t j = 0; j < n.operands.size(); ++j) wide[u][j] = wide[u][j] || n.operands[j] == k;
    }
  }
  return wide;
}

/// One body rewritten: each old value's narrow form (its own dtype) and wide form (f32
/// for a half value), made on demand. Inputs marked in `f32_inputs` (constants made in
/// f32 by widen_constants) come in wide.
class Widener {
 public:
  Widener(const Graph& body, FusedKind kind, std::vector<bool> f32_inputs = {})
      : body_(body),
        root_(kept_root(body, kind)),
        f32_inputs_(std::move(f32_inputs)),
        out_(std::make_shared<Graph>(body.name())),
        narrow_(body.num_values(), kNoValue),
        wide_(body.num_values(), kNoValue) {}

  StatusOr<std::shared_ptr<Graph>> run() {
    for (size_t i = 0; i < body_.inputs().size(); ++i) {
      const Input& in = body_.inputs()[i];
      Type t = body_.type(in.value);
      const bool comes_wide = i < f32_inputs_.size() && f32_inputs_[i];
      if (comes_wide) t.dtype = DType::f32;
      const ValueId v = out_->add_input(body_.value(in.value).name, t, in.kind, in.loc);
      (comes_wide ? wide_ : narrow_)[in.value] = v;
    }
    for (int i = 0; i < static_cast<int>(body_.nodes().size()); ++i) {
      WEFT_RETURN_IF_ERROR(rewrite(i));
    }
    for (ValueId v : body_.outputs()) out_->add_output(narrow(v));
    out_->set_declared_output_types(body_.declared_output_types());
    out_->set_loc(body_.loc());
    return out_;
  }

 private:
  DType dtype(ValueId v) const { return body_.type(v).dtype; }

  /// A cast of the new body's `v`, named apart from every old value (whose names the
  /// copied nodes keep, and which may come later).
  ValueId new_cast(ValueId v, DType to, const Location& loc) {
    std::string name;
    do {
      name = out_->fresh_name();
    } while (body_.find_value(name));
    return add_cast(*out_, v, to, loc, std::move(name));
  }

  /// `v` in its own dtype: rounded from its wide form if it has only that.
  ValueId narrow(ValueId v) {
    if (narrow_[v] == kNoValue) narrow_[v] = new_cast(wide_[v], dtype(v), loc_of(v));
    return narrow_[v];
  }
  /// `v` as an f32 value if it is half (widened exactly from its narrow form if it has
  /// only that), else as it is.
  ValueId wide(ValueId v) {
    if (!is_half(dtype(v))) return narrow(v);
    if (wide_[v] == kNoValue) wide_[v] = new_cast(narrow_[v], DType::f32, loc_of(v));
    return wide_[v];
  }
  Location loc_of(ValueId v) const {
    const int p = body_.value(v).node;
    return p >= 0 ? body_.node(p).loc : Location{};
  }

  Status rewrite(int i) {
    const Node& n = body_.node(i);
    const ValueId r = n.result();
    const std::string& name = body_.value(r).name;
    if (keeps_dtypes(body_, i, root_)) {
      std::vector<ValueId> args;
      for (ValueId v : n.operands) args.push_back(narrow(v));
      narrow_[r] = out_->add_node(n.op, std::move(args), n.attrs, n.loc, body_.type(r), name);
      return Status();
    }
    if (half_rule(n.op) == HalfRule::Convert) {
      const DType to = n.dtype_attr("dtype");
      if (to == DType::f32 && is_half(dtype(n.operands[0]))) {
        narrow_[r] = wide(n.operands[0]);  // the widening of a value computed wide: itself
      } else {
        narrow_[r] = add_cast(*out_, wide(n.operands[0]), to, n.loc, name);
      }
      return Status();
    }
    // Widen (computes in f32) or Follow (picks an operand): half operands wide, a half
    // result f32.
    std::vector<ValueId> args;
    std::vector<Type> types;
    for (ValueId v : n.operands) {
      args.push_back(wide(v));
      types.push_back(out_->type(args.back()));
    }
    WEFT_ASSIGN_OR_RETURN(Type t, infer_node_type(n, types));
    const ValueId nv = out_->add_node(n.op, std::move(args), n.attrs, n.loc, t, name);
    (is_half(dtype(r)) ? wide_ : narrow_)[r] = nv;
    return Status();
  }

  const Graph& body_;
  const int root_;
  const std::vector<bool> f32_inputs_;
  std::shared_ptr<Graph> out_;
  std::vector<ValueId> narrow_, wide_;
};

}  // namespace

bool rounds_half_intermediates(const Graph& body, FusedKind kind) {
  if (!kernel_body(body)) return false;
  const int root = kept_root(body, kind);
  std::vector<bool> rounds(body.num_values(), false);
  for (int i = 0; i < static_cast<int>(body.nodes().size()); ++i) {
    const Node& n = body.node(i);
    if (keeps_dtypes(body, i, root)) continue;
    for (ValueId v : n.operands) {
      if (rounds[v]) return true;
    }
    rounds[n.result()] = computes_half_in_f32(n.op) && is_half(body.type(n.result()).dtype);
  }
  return false;
}

StatusOr<Graph> round_body_at_stores(const Graph& body, FusedKind kind) {
  if (!rounds_half_intermediates(body, kind)) return body;
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Graph> out, Widener(body, kind).run());
  return std::move(*out);
}

StatusOr<bool> RoundAtStoresPass::run(Graph& g) {
  const std::vector<std::vector<bool>> f32_inputs = widen_constants(g);
  bool changed = false;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.node(static_cast<int>(i));
    if (n.op != Op::Fused || !n.body) continue;
    const FusedKind kind = fused_kind(n);
    if (f32_inputs[i].empty() && !rounds_half_intermediates(*n.body, kind)) continue;
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Graph> body, Widener(*n.body, kind, f32_inputs[i]).run());
    WEFT_CHECK(body_fused_kind(*body) == kind, "round-at-stores changed a body's kind");
    n.body = std::move(body);
    changed = true;
  }
  return changed;
}

}  // namespace weft
