#include "passes/autocast.h"

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ir/cast.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"
#include "ir/status.h"

namespace weft {
namespace {


/// Orders float dtypes by range and precision: promotion casts to the widest. The two
/// halves are equally wide; mixing them promotes to f32.
int width(DType d) {
  if (d == DType::f64) return 3;
  if (d == DType::f32) return 2;
  return is_half(d) ? 1 : 0;
}

DType wider(DType a, DType b) {
  if (a == b) return a;
  if (width(a) == width(b)) return DType::f32;
  return width(a) > width(b) ? a : b;
}

/// One rewrite of one graph: the casts made so far and the dtypes before the pass.
class Autocaster {
 public:
  Autocaster(Graph& g, DType low) : g_(g), low_(low), uses_(g.use_counts()) {
    for (ValueId v = 0; v < g.num_values(); ++v) {
      const std::optional<Type>& t = g.value(v).type;
      original_.push_back(t ? t->dtype : DType::f32);
    }
  }

  StatusOr<bool> run() {
    const int n = static_cast<int>(g_.nodes().size());  // not the casts appended on the way
    for (int i = 0; i < n; ++i) {
      WEFT_RETURN_IF_ERROR(rewrite(i));
    }
    restore_outputs();
    if (changed_) g_.sort_topologically();
    return changed_;
  }

 private:
  DType dtype(ValueId v) const { return g_.type(v).dtype; }
  bool is_float(ValueId v) const { return is_floating(dtype(v)); }
  /// The producer's index, or -1 for a graph input.
  int producer(ValueId v) const { return g_.value(v).node; }

  Status rewrite(int i) {
    if (g_.node(i).op == Op::Scan) return loop(i);
    switch (autocast_class(g_.node(i).op)) {
      case AutocastClass::None: restore_operands(i); break;
      case AutocastClass::Low: to_low(i); break;
      case AutocastClass::F32: to_f32(i); break;
      case AutocastClass::Follow: break;
      case AutocastClass::Promote: promote(i); break;
    }
    return retype(i);
  }

  /// None: each operand in the dtype it had before the pass.
  void restore_operands(int i) {
    std::vector<ValueId> operands = g_.node(i).operands;
    for (ValueId& v : operands) v = cast(v, original_[v], i);
    g_.node(i).operands = std::move(operands);
  }

  /// A loop: its body autocast as a graph of its own, whose parameters and results keep
  /// the loop's types except that an xs the pass made low (a product computed before the
  /// loop) goes in low; its other operands in their dtypes before the pass; then the
  /// consts the body casts to low passed in low instead (hoist_const_casts).
  Status loop(int i) {
    const std::vector<ValueId> given = g_.node(i).operands;
    const int64_t xs = g_.node(i).int_attr("consts") + g_.node(i).int_attr("carries");
    Graph body = *g_.node(i).body;
    Autocaster inner(body, low_);
    std::vector<ValueId> operands = given;
    for (size_t k = 0; k < given.size(); ++k) {
      if (static_cast<int64_t>(k) >= xs && dtype(given[k]) == low_ && original_[given[k]] == DType::f32) {
        inner.follow(body.inputs()[k].value, low_);
      } else {
        operands[k] = cast(given[k], original_[given[k]], i);
      }
    }
    g_.node(i).operands = std::move(operands);
    WEFT_ASSIGN_OR_RETURN(const bool changed, inner.run());
    if (!changed) return Status();
    changed_ = true;
    hoist_const_casts(i, given, body);
    return Status();
  }

  /// Input `v` takes dtype `to`, its dtype before the pass kept (ops of class None and
  /// the outputs see it cast back).
  void follow(ValueId v, DType to) {
    g_.mutable_value(v).type->dtype = to;
    changed_ = true;
  }

  /// Loop `i` with body `body`: each const parameter the body casts to low is cast once,
  /// outside the loop (`given`: its operands before the pass, so the cast is the one the
  /// graph already has of that value), and passed in low. A const the body reads only
  /// through that cast becomes a low parameter; one it also reads in its own dtype keeps
  /// its parameter and its low copy is a new const, after the others.
  void hoist_const_casts(int i, const std::vector<ValueId>& given, const Graph& body) {
    const int64_t consts = g_.node(i).int_attr("consts");
    const std::vector<int> uses = body.use_counts();
    std::vector<int> cast_of(consts, -1);  // each const's cast to low (one per value and dtype)
    for (int k = 0; k < static_cast<int>(body.nodes().size()); ++k) {
      const Node& n = body.node(k);
      if (n.op != Op::Cast || n.dtype_attr("dtype") != low_) continue;
      const int in = body.input_index(n.operands[0]);
      if (in >= 0 && in < consts) cast_of[in] = k;
    }
    BodyRebuilder inner(body);
    std::vector<ValueId> operands;
    std::vector<int64_t> copies;  // consts also read in their own dtype
    for (int64_t k = 0; k < static_cast<int64_t>(body.inputs().size()); ++k) {
      const int c = k < consts ? cast_of[k] : -1;
      const bool only_cast = c >= 0 && uses[body.inputs()[k].value] == 1;
      const ValueId in = inner.input(k, only_cast ? std::optional(low_) : std::nullopt);
      operands.push_back(only_cast ? cast(given[k], low_, i) : g_.node(i).operands[k]);
      if (only_cast) inner.replace(c, in);
      if (c >= 0 && !only_cast) copies.push_back(k);
      if (k + 1 != consts) continue;
      for (int64_t copied : copies) {
        inner.replace(cast_of[copied], inner.input_for(body.node(cast_of[copied]).result()));
        ++uses_[given[copied]];  // the loop reads it twice now: no cast moved above its producer
        operands.push_back(cast(given[copied], low_, i));
      }
    }
    inner.copy_nodes();
    Node& n = g_.node(i);
    n.operands = std::move(operands);
    n.attrs["consts"] = consts + static_cast<int64_t>(copies.size());
    n.body = std::make_shared<const Graph>(std::move(inner).finish());
  }

  /// Low: f32 operands cast to low; an op with an operand of another float dtype (f64)
  /// is left as it was.
  void to_low(int i) {
    std::vector<ValueId> operands = g_.node(i).operands;
    for (ValueId v : operands) {
      if (is_float(v) && dtype(v) != DType::f32 && dtype(v) != low_) return restore_operands(i);
    }
    for (ValueId& v : operands) {
      if (is_float(v)) v = cast(v, low_, i);
    }
    g_.node(i).operands = std::move(operands);
  }

  /// F32: half operands cast to f32.
  void to_f32(int i) {
    std::vector<ValueId> operands = g_.node(i).operands;
    for (ValueId& v : operands) {
      if (is_half(dtype(v))) v = cast(v, DType::f32, i);
    }
    g_.node(i).operands = std::move(operands);
  }

  /// Promote: float operands cast to the widest among them, leaving out values made by
  /// creation ops (they follow the tensors); a contraction's bias follows its product.
  void promote(int i) {
    std::vector<ValueId> operands = g_.node(i).operands;
    std::optional<DType> widest;
    const bool tensors = has_uncreated_float(operands);
    for (ValueId v : operands) {
      if (!is_float(v) || (tensors && is_created(v))) continue;
      widest = widest ? wider(*widest, dtype(v)) : dtype(v);
    }
    if (!widest) return;
    if (is_bias_add(i)) widest = low_;
    for (ValueId& v : operands) {
      if (is_float(v)) v = cast(v, *widest, i);
    }
    g_.node(i).operands = std::move(operands);
  }

  bool is_created(ValueId v) const {
    const int p = producer(v);
    return p >= 0 && g_.node(p).info().category == OpCategory::Creation;
  }
  bool has_uncreated_float(const std::vector<ValueId>& operands) const {
    for (ValueId v : operands) {
      if (is_float(v) && !is_created(v)) return true;
    }
    return false;
  }

  /// add(product, bias): one operand a Low op's low result, the other an f32 value with
  /// fewer elements, broadcast onto it.
  bool is_bias_add(int i) const {
    const Node& n = g_.node(i);
    if (n.op != Op::Add) return false;
    for (int k = 0; k < 2; ++k) {
      const ValueId product = n.operands[k], bias = n.operands[1 - k];
      const int p = producer(product);
      if (p < 0 || autocast_class(g_.node(p).op) != AutocastClass::Low) continue;
      if (dtype(product) == low_ && dtype(bias) == DType::f32 &&
          g_.type(bias).shape.numel() < g_.type(product).shape.numel()) {
        return true;
      }
    }
    return false;
  }

  /// `v` as `to` for node `user`: `v` itself, or its one cast. A value that a
  /// single-operand movement op made for this use alone is cast before the movement.
  ValueId cast(ValueId v, DType to, int user) {
    if (dtype(v) == to) return v;
    if (auto it = casts_.find({v, to}); it != casts_.end()) return it->second;
    changed_ = true;
    const int p = producer(v);
    if (p >= 0 && uses_[v] == 1 && moves_one_float(g_.node(p))) {
      const ValueId moved = cast(g_.node(p).operands[0], to, user);
      g_.node(p).operands[0] = moved;
      g_.mutable_value(v).type->dtype = to;
      return casts_[{v, to}] = v;
    }
    const ValueId c = add_cast(g_, v, to, g_.node(user).loc);
    uses_.push_back(0);
    original_.push_back(to);
    return casts_[{v, to}] = c;
  }

  bool moves_one_float(const Node& n) const {
    return n.info().category == OpCategory::Movement && n.operands.size() == 1 &&
           is_float(n.operands[0]);
  }

  /// The node's result type from its shape rule, for its operands' dtypes now.
  Status retype(int i) {
    Node& n = g_.node(i);
    if (n.results.size() != 1 || has_body(n.op)) return Status();
    std::vector<Type> types;
    for (ValueId v : n.operands) types.push_back(g_.type(v));
    WEFT_ASSIGN_OR_RETURN(Type t, infer_node_type(n, types));
    g_.mutable_value(n.result()).type = t;
    return Status();
  }

  /// The graph's outputs in their dtypes before the pass.
  void restore_outputs() {
    std::vector<ValueId>& outputs = g_.mutable_outputs();
    for (ValueId& v : outputs) {
      if (dtype(v) == original_[v]) continue;
      const int p = producer(v);
      v = cast(v, original_[v], p >= 0 ? p : 0);
    }
  }

  Graph& g_;
  const DType low_;
  std::vector<int> uses_;        ///< Uses of each value before the pass (casts: 0).
  std::vector<DType> original_;  ///< Each value's dtype before the pass.
  std::map<std::pair<ValueId, DType>, ValueId> casts_;
  bool changed_ = false;
};

}  // namespace

AutocastPass::AutocastPass(DType low) : low_(low) {
  WEFT_CHECK(is_half(low), "AutocastPass: the low precision is bf16 or f16");
}

StatusOr<bool> AutocastPass::run(Graph& g) { return Autocaster(g, low_).run(); }

}  // namespace weft
