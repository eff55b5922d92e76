// Activations: stateless elementwise modules (PReLU has one learned slope).
#include "frontend/modules.h"

namespace weft {
namespace {

/// An activation given by a function that emits it.
class Activation : public UnaryModule {
 public:
  using Body = ValueId (*)(Emitter&, ValueId, double, double);
  Activation(std::string name, Body body, double a = 0, double b = 0)
      : name_(std::move(name)), body_(body), a_(a), b_(b) {}
  std::string describe() const override { return name_; }
  ValueId forward1(Emitter& e, ValueId x) override { return body_(e, x, a_, b_); }

 private:
  std::string name_;
  Body body_;
  double a_, b_;
};

ValueId unary(Emitter& e, Op op, ValueId x) { return e.op(op, {x}); }

}  // namespace

ModulePtr Identity() {
  return std::make_shared<Activation>("Identity", [](Emitter&, ValueId x, double, double) { return x; });
}

ModulePtr ReLU() {
  return std::make_shared<Activation>(
      "ReLU", [](Emitter& e, ValueId x, double, double) { return unary(e, Op::Relu, x); });
}

ModulePtr GELU(bool tanh_approximation) {
  return std::make_shared<Activation>(
      tanh_approximation ? "GELU(tanh)" : "GELU",
      [](Emitter& e, ValueId x, double tanh, double) {
        return e.op(Op::Gelu, {x}, {{"approximate", std::string(tanh != 0 ? "tanh" : "none")}});
      },
      tanh_approximation ? 1 : 0);
}

ModulePtr Sigmoid() {
  return std::make_shared<Activation>(
      "Sigmoid", [](Emitter& e, ValueId x, double, double) { return unary(e, Op::Sigmoid, x); });
}

ModulePtr Tanh() {
  return std::make_shared<Activation>(
      "Tanh", [](Emitter& e, ValueId x, double, double) { return unary(e, Op::Tanh, x); });
}

ModulePtr Softmax(int64_t axis) {
  return std::make_shared<Activation>(
      "Softmax(" + std::to_string(axis) + ")",
      [](Emitter& e, ValueId x, double axis, double) {
        return e.op(Op::Softmax, {x}, {{"axis", static_cast<int64_t>(axis)}});
      },
      static_cast<double>(axis));
}

ModulePtr LogSoftmax(int64_t axis) {
  return std::make_shared<Activation>(
      "LogSoftmax(" + std::to_string(axis) + ")",
      [](Emitter& e, ValueId x, double axis, double) {
        return e.op(Op::LogSoftmax, {x}, {{"axis", static_cast<int64_t>(axis)}});
      },
      static_cast<double>(axis));
}

}  // namespace weft
