// Gradient rules of the elementwise ops. Binary rules return gradients of the
// broadcast result's shape; the driver sums them back to each operand's shape.
//
// Every rule is built from ops that have rules themselves, so gradients can be
// differentiated again (Hessian-vector products): masks come from comparisons feeding
// `select`, never from kernels that hide a derivative.
#include <cmath>

#include "autodiff/rules.h"

namespace weft::grad_rules {
namespace {

using Grads = std::vector<ValueId>;

ValueId x0(const Node& n) { return n.operands[0]; }
ValueId x1(const Node& n) { return n.operands[1]; }

Grads neg(GradBuilder& b, const Node&, ValueId g) { return {b.neg(g)}; }
Grads abs(GradBuilder& b, const Node& n, ValueId g) {
  return {b.mul(g, b.op(Op::Sign, {x0(n)}))};  // 0 at 0, as PyTorch
}
Grads exp(GradBuilder& b, const Node& n, ValueId g) { return {b.mul(g, n.result())}; }
Grads log(GradBuilder& b, const Node& n, ValueId g) { return {b.div(g, x0(n))}; }
Grads log1p(GradBuilder& b, const Node& n, ValueId g) {
  return {b.div(g, b.add(x0(n), c(b, 1, g)))};
}
Grads sqrt(GradBuilder& b, const Node& n, ValueId g) {
  return {b.div(g, b.mul(n.result(), c(b, 2, g)))};  // 1 / (2 sqrt(x))
}
Grads rsqrt(GradBuilder& b, const Node& n, ValueId g) {
  ValueId y = n.result();  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y³
  return {b.mul(g, b.mul(c(b, -0.5, g), b.mul(y, b.mul(y, y))))};
}
Grads tanh(GradBuilder& b, const Node& n, ValueId g) {
  ValueId y = n.result();  // 1 - tanh(x)²
  return {b.mul(g, b.sub(c(b, 1, g), b.mul(y, y)))};
}
Grads sigmoid(GradBuilder& b, const Node& n, ValueId g) {
  ValueId y = n.result();  // y (1 - y)
  return {b.mul(g, b.mul(y, b.sub(c(b, 1, g), y)))};
}
Grads softplus(GradBuilder& b, const Node& n, ValueId g) {
  return {b.mul(g, b.op(Op::Sigmoid, {x0(n)}))};  // sigmoid(x)
}
Grads relu(GradBuilder& b, const Node& n, ValueId g) {
  // 0 at 0, as PyTorch; `select` keeps NaN/inf in g away from the masked-off elements.
  ValueId pos = b.op(Op::Gt, {x0(n), c(b, 0, g)});
  return {b.op(Op::Select, {pos, g, c(b, 0, g)})};
}
Grads sin(GradBuilder& b, const Node& n, ValueId g) { return {b.mul(g, b.op(Op::Cos, {x0(n)}))}; }
Grads cos(GradBuilder& b, const Node& n, ValueId g) {
  return {b.neg(b.mul(g, b.op(Op::Sin, {x0(n)})))};
}
/// exp(-x²/k) for the erf and gelu rules.
ValueId gauss(GradBuilder& b, ValueId x, double k) {
  return b.op(Op::Exp, {b.mul(b.mul(x, x), c(b, -1.0 / k, x))});
}
Grads erf(GradBuilder& b, const Node& n, ValueId g) {
  return {b.mul(g, b.mul(gauss(b, x0(n), 1), c(b, 2 / std::sqrt(M_PI), g)))};  // 2/√π e^(-x²)
}
/// Floor and sign are piecewise constant: their gradient is zero (PyTorch's convention,
/// also at the jumps), which the driver treats as "no contribution".
Grads zero(GradBuilder&, const Node&, ValueId) { return {kNoValue}; }
Grads gelu(GradBuilder& b, const Node& n, ValueId g) {
  ValueId x = x0(n);
  if (n.str_attr("approximate") == "tanh") {
    // y = x/2 (1 + t), t = tanh(u), u = √(2/π) (x + a x³):
    // dy/dx = (1 + t)/2 + x/2 (1 - t²) √(2/π) (1 + 3a x²).
    const double a = 0.044715, k = std::sqrt(2 / M_PI);
    ValueId x2 = b.mul(x, x);
    ValueId u = b.mul(c(b, k, x), b.add(x, b.mul(c(b, a, x), b.mul(x2, x))));
    ValueId t = b.op(Op::Tanh, {u});
    ValueId du = b.mul(c(b, k, x), b.add(c(b, 1, x), b.mul(c(b, 3 * a, x), x2)));
    ValueId dt = b.mul(b.sub(c(b, 1, x), b.mul(t, t)), du);
    ValueId d = b.mul(c(b, 0.5, x), b.add(b.add(c(b, 1, x), t), b.mul(x, dt)));
    return {b.mul(g, d)};
  }
  // y = x Φ(x): dy/dx = Φ(x) + x φ(x), Φ(x) = (1 + erf(x/√2))/2, φ(x) = e^(-x²/2)/√(2π).
  ValueId cdf =
      b.mul(c(b, 0.5, x), b.add(c(b, 1, x), b.op(Op::Erf, {b.mul(x, c(b, M_SQRT1_2, x))})));
  ValueId pdf = b.mul(gauss(b, x, 2), c(b, 1 / std::sqrt(2 * M_PI), x));
  return {b.mul(g, b.add(cdf, b.mul(x, pdf)))};
}
Grads cast(GradBuilder& b, const Node& n, ValueId g) {
  // Only float-to-float casts carry a gradient; to or from an integer or bool, none.
  DType from = b.type(x0(n)).dtype;
  if (!is_floating(from) || !is_floating(b.type(g).dtype)) return {kNoValue};
  return {b.op(Op::Cast, {g}, {{"dtype", from}})};
}

Grads add(GradBuilder&, const Node&, ValueId g) { return {g, g}; }
Grads sub(GradBuilder& b, const Node&, ValueId g) { return {g, b.neg(g)}; }
Grads mul(GradBuilder& b, const Node& n, ValueId g) { return {b.mul(g, x1(n)), b.mul(g, x0(n))}; }
Grads div(GradBuilder& b, const Node& n, ValueId g) {
  ValueId ga = b.div(g, x1(n));  // d(a/b)/db = -(a/b)/b, so g·(-y/b) = -ga·y
  return {ga, b.neg(b.mul(ga, n.result()))};
}
Grads pow(GradBuilder& b, const Node& n, ValueId g) {
  // d/da = b a^(b-1), 0 where b == 0; d/db = y log(a), 0 where a == 0 and b >= 0 (as
  // PyTorch, so that 0^b has finite gradients).
  ValueId a = x0(n), e = x1(n), y = n.result(), zero = c(b, 0, g);
  ValueId da = b.mul(e, b.op(Op::Pow, {a, b.sub(e, c(b, 1, g))}));
  da = b.op(Op::Select, {b.op(Op::Eq, {e, zero}), zero, da});
  ValueId de = b.mul(y, b.op(Op::Log, {a}));
  ValueId at_zero = b.op(Op::And, {b.op(Op::Eq, {a, zero}), b.op(Op::Ge, {e, zero})});
  de = b.op(Op::Select, {at_zero, zero, de});
  return {b.mul(g, da), b.mul(g, de)};
}
/// maximum/minimum: the gradient goes to the winning side, half to each on a tie
/// (PyTorch's convention; it is also what a central difference sees at a tie).
template <Op kWins>
Grads extremum(GradBuilder& b, const Node& n, ValueId g) {
  ValueId half = b.mul(g, c(b, 0.5, g));
  ValueId tie = b.op(Op::Select, {b.op(Op::Eq, {x0(n), x1(n)}), half, c(b, 0, g)});
  ValueId ga = b.op(Op::Select, {b.op(kWins, {x0(n), x1(n)}), g, tie});
  return {ga, b.sub(g, ga)};
}
Grads select(GradBuilder& b, const Node& n, ValueId g) {
  // The condition is boolean: no gradient.
  ValueId zero = c(b, 0, g);
  return {kNoValue, b.op(Op::Select, {x0(n), g, zero}), b.op(Op::Select, {x0(n), zero, g})};
}

}  // namespace

void add_elementwise(Table& t) {
  auto rule = [&](Op op, GradRule r) { t[static_cast<int>(op)].rule = r; };
  auto none = [&](Op op, const char* why) { t[static_cast<int>(op)].not_differentiable = why; };
  rule(Op::Neg, neg);
  rule(Op::Abs, abs);
  rule(Op::Exp, exp);
  rule(Op::Log, log);
  rule(Op::Log1p, log1p);
  rule(Op::Sqrt, sqrt);
  rule(Op::Rsqrt, rsqrt);
  rule(Op::Tanh, tanh);
  rule(Op::Sigmoid, sigmoid);
  rule(Op::Relu, relu);
  rule(Op::Sin, sin);
  rule(Op::Cos, cos);
  rule(Op::Erf, erf);
  rule(Op::Softplus, softplus);
  rule(Op::Sign, zero);
  rule(Op::Floor, zero);
  none(Op::Not, "boolean result");
  rule(Op::Gelu, gelu);
  rule(Op::Cast, cast);
  rule(Op::Add, add);
  rule(Op::Sub, sub);
  rule(Op::Mul, mul);
  rule(Op::Div, div);
  rule(Op::Pow, pow);
  rule(Op::Maximum, extremum<Op::Gt>);
  rule(Op::Minimum, extremum<Op::Lt>);
  for (Op op : {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::And, Op::Or}) {
    none(op, "boolean result");
  }
  rule(Op::Select, select);  // cond: boolean, no gradient
}

}  // namespace weft::grad_rules
