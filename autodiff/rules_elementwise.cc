// Gradient rules of the elementwise ops. Binary rules return gradients of the
// broadcast result's shape; the driver sums them back to each operand's shape.
#include "autodiff/rules.h"

namespace weft::grad_rules {
namespace {

std::vector<ValueId> add(GradBuilder&, const Node&, ValueId g) { return {g, g}; }
std::vector<ValueId> sub(GradBuilder& b, const Node&, ValueId g) { return {g, b.neg(g)}; }
std::vector<ValueId> mul(GradBuilder& b, const Node& n, ValueId g) {
  return {b.mul(g, n.operands[1]), b.mul(g, n.operands[0])};
}
std::vector<ValueId> tanh(GradBuilder& b, const Node& n, ValueId g) {
  // d tanh(x) = 1 - tanh(x)²
  ValueId y = n.result();
  ValueId one = b.constant(1.0, b.type(y).dtype);
  return {b.mul(g, b.sub(one, b.mul(y, y)))};
}

}  // namespace

void add_elementwise(Table& t) {
  t[static_cast<int>(Op::Add)].rule = add;
  t[static_cast<int>(Op::Sub)].rule = sub;
  t[static_cast<int>(Op::Mul)].rule = mul;
  t[static_cast<int>(Op::Tanh)].rule = tanh;
}

}  // namespace weft::grad_rules
