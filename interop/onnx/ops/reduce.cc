// Reductions: ReduceSum/Mean/Max/Min/Prod, the composed ones (L1, L2, LogSum,
// LogSumExp, SumSquare) and ArgMax/ArgMin.
//
// The axes are an attribute (absent: all axes), and for ReduceSum from opset 13 an
// optional input, where `noop_with_empty_axes` makes "no axes" the identity. keepdims
// defaults to 1. weft has no product reduction: ReduceProd multiplies halves of the
// axis pairwise (exact in each product, grouped as a tree).
#include <algorithm>
#include <cmath>

#include "interop/onnx/convert.h"
#include "interop/onnx/proto.h"
#include "interop/onnx/ops/tensor_util.h"

namespace weft::onnx_io {
namespace {
namespace reduce {  // this file's names, apart in the importer's unity units

struct Reduction {
  std::vector<int64_t> axes;  // normalized, sorted; empty: nothing to reduce
  bool keepdims = true;
  bool identity = false;  // noop_with_empty_axes with no axes
};

/// `axis` in [-rank, rank) as a non-negative axis, or the node is invalid.
Reduction reduction_of(NodeContext& n) {
  const bool axes_input = n.node().op_type() == "ReduceSum" && n.opset() >= 13;
  if (axes_input) {
    n.expect_attrs({"keepdims", "noop_with_empty_axes"});
  } else {
    n.expect_attrs({"axes", "keepdims"});
  }
  const int rank = n.input_type(0).shape.rank();
  Reduction r;
  r.keepdims = n.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes =
      axes_input ? (n.has_input(1) ? n.ints_input(1, "axes") : std::vector<int64_t>{})
                 : n.attr_ints("axes");
  if (axes.empty()) {
    r.identity = axes_input && n.attr_int("noop_with_empty_axes", 0) != 0;
    if (!r.identity) {
      for (int k = 0; k < rank; ++k) axes.push_back(k);
    }
  }
  for (int64_t& a : axes) a = axis_in(n, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) n.invalid("an axis is repeated");
  r.axes = std::move(axes);
  return r;
}

ValueId reduce(Emitter& e, Op op, ValueId x, const Reduction& r) {
  if (r.identity) return x;
  return e.op(op, {x}, {{"axes", r.axes}, {"keepdims", r.keepdims}});
}

void require_float(NodeContext& n, ValueId x) {
  if (!is_floating(n.e().type(x).dtype)) {
    n.unsupported(std::string(dtype_name(n.e().type(x).dtype)) + " input (only floating dtypes)");
  }
}

template <Op kOp>
void simple(NodeContext& n) {
  Reduction r = reduction_of(n);
  ValueId x = n.input(0);
  if (kOp == Op::Mean) require_float(n, x);
  n.set_output(0, reduce(n.e(), kOp, x, r));
}

void reduce_l1(NodeContext& n) {
  Reduction r = reduction_of(n);
  n.set_output(0, reduce(n.e(), Op::Sum, n.e().op(Op::Abs, {n.input(0)}), r));
}

void reduce_sum_square(NodeContext& n) {
  Reduction r = reduction_of(n);
  ValueId x = n.input(0);
  n.set_output(0, reduce(n.e(), Op::Sum, n.e().mul(x, x), r));
}

void reduce_l2(NodeContext& n) {
  Reduction r = reduction_of(n);
  ValueId x = n.input(0);
  require_float(n, x);
  n.set_output(0, n.e().op(Op::Sqrt, {reduce(n.e(), Op::Sum, n.e().mul(x, x), r)}));
}

void reduce_log_sum(NodeContext& n) {
  Reduction r = reduction_of(n);
  ValueId x = n.input(0);
  require_float(n, x);
  n.set_output(0, n.e().op(Op::Log, {reduce(n.e(), Op::Sum, x, r)}));
}

// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the (finite) maximum,
// which is the same value without overflowing exp.
void reduce_log_sum_exp(NodeContext& n) {
  Reduction r = reduction_of(n);
  Emitter& e = n.e();
  ValueId x = n.input(0);
  require_float(n, x);
  const DType dt = e.type(x).dtype;
  Reduction kept = r;
  kept.keepdims = true;
  ValueId m = reduce(e, Op::Max, x, kept);
  ValueId finite = e.op(Op::Lt, {e.op(Op::Abs, {m}), e.constant(HUGE_VAL, dt)});
  m = e.op(Op::Select, {finite, m, e.constant(0, dt)});
  ValueId s = reduce(e, Op::Sum, e.op(Op::Exp, {e.sub(x, m)}), r);
  if (!r.keepdims) m = e.reshape(m, e.shape(s).dims);
  n.set_output(0, e.add(e.op(Op::Log, {s}), m));
}

/// The product along one axis of x, kept as size 1: halves multiplied until one is left.
ValueId product_along(Emitter& e, ValueId x, int axis) {
  auto part = [&](ValueId v, int64_t start, int64_t stop) {
    std::vector<int64_t> lo(e.rank(v), 0), hi = e.shape(v).dims;
    lo[axis] = start;
    hi[axis] = stop;
    return e.op(Op::Slice, {v}, {{"start", lo}, {"stop", hi}});
  };
  int64_t d = e.shape(x)[axis];
  if (d == 0) {
    std::vector<int64_t> dims = e.shape(x).dims;
    dims[axis] = 1;
    return e.full(Shape(dims), 1, e.type(x).dtype);
  }
  while (d > 1) {
    const int64_t h = d / 2;
    ValueId y = e.mul(part(x, 0, h), part(x, h, 2 * h));
    if (d % 2 != 0) y = e.op(Op::Concat, {y, part(x, 2 * h, d)}, {{"axis", int64_t{axis}}});
    x = y;
    d = h + d % 2;
  }
  return x;
}

void reduce_prod(NodeContext& n) {
  Reduction r = reduction_of(n);
  Emitter& e = n.e();
  ValueId x = n.input(0);
  if (e.type(x).dtype == DType::boolean) n.unsupported("a bool input");
  for (int64_t a : r.axes) x = product_along(e, x, static_cast<int>(a));
  if (!r.keepdims) {
    std::vector<int64_t> dims;
    const Shape s = e.shape(x);
    for (int k = 0; k < s.rank(); ++k) {
      if (!std::binary_search(r.axes.begin(), r.axes.end(), k)) dims.push_back(s[k]);
    }
    x = e.reshape(x, dims);
  }
  n.set_output(0, x);
}

// ArgMin is the argmax of an order-reversing map: -x for floats (a NaN stays the first
// extreme), -x - 1 = ~x for signed integers (exact with wrapping arithmetic), 255 - x
// for u8. select_last_index
// takes the argmax of the axis reversed and maps the index back.
template <bool kMin>
void arg_extreme(NodeContext& n) {
  n.expect_attrs({"axis", "keepdims", "select_last_index"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Type t = e.type(x);
  const int rank = t.shape.rank();
  const int64_t axis = axis_in(n, n.attr_int("axis", 0), rank);
  if (t.dtype == DType::boolean) n.unsupported("a bool input");
  if (kMin && t.dtype == DType::u8) {
    x = e.sub(e.constant(255, t.dtype), x);
  } else if (kMin) {
    x = e.op(Op::Neg, {x});
    if (is_integer(t.dtype)) x = e.sub(x, e.constant(1, t.dtype));
  }
  const int64_t d = t.shape[static_cast<int>(axis)];
  const bool last = n.attr_int("select_last_index", 0) != 0;
  ValueId last_index = e.constant(static_cast<double>(d - 1), DType::i64);
  if (last) {
    ValueId reversed = e.sub(
        last_index,
        e.op(Op::Iota, {},
             {{"shape", std::vector<int64_t>{d}}, {"axis", int64_t{0}}, {"dtype", DType::i64}}));
    x = e.op(Op::Gather, {x, reversed}, {{"axis", axis}});
  }
  ValueId y = e.op(Op::Argmax, {x}, {{"axis", axis}, {"keepdims", n.attr_int("keepdims", 1) != 0}});
  n.set_output(0, last ? e.sub(last_index, y) : y);
}

const OpConverter kOps[] = {
    {"ReduceSum", 1, simple<Op::Sum>},
    {"ReduceMean", 1, simple<Op::Mean>},
    {"ReduceMax", 1, simple<Op::Max>},
    {"ReduceMin", 1, simple<Op::Min>},
    {"ReduceProd", 1, reduce_prod},
    {"ReduceL1", 1, reduce_l1},
    {"ReduceL2", 1, reduce_l2},
    {"ReduceLogSum", 1, reduce_log_sum},
    {"ReduceLogSumExp", 1, reduce_log_sum_exp},
    {"ReduceSumSquare", 1, reduce_sum_square},
    {"ArgMax", 1, arg_extreme<false>},
    {"ArgMin", 1, arg_extreme<true>},
};

}  // namespace reduce
}  // namespace

std::span<const OpConverter> reduce_converters() { return reduce::kOps; }

}  // namespace weft::onnx_io
