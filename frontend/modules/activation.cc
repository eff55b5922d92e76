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

/// A scalar constant of x's dtype.
ValueId scalar(Emitter& e, ValueId x, double v) { return e.constant(v, e.type(x).dtype); }

/// x > 0 ? x · pos : (exp(x) - 1) · neg. The exponential reads min(x, 0), so the branch
/// not taken never overflows (an inf there would make the gradient NaN).
ValueId elu(Emitter& e, ValueId x, double pos, double neg) {
  ValueId exp = unary(e, Op::Exp, e.op(Op::Minimum, {x, scalar(e, x, 0)}));
  ValueId negative = e.mul(e.sub(exp, scalar(e, x, 1)), scalar(e, x, neg));
  ValueId positive = pos == 1 ? x : e.mul(x, scalar(e, x, pos));
  return e.op(Op::Select, {e.op(Op::Gt, {x, scalar(e, x, 0)}), positive, negative});
}

/// beta·x > threshold ? x : log1p(exp(beta·x)) / beta, PyTorch's Softplus; as in elu the
/// exponential reads a clamped value.
ValueId softplus(Emitter& e, ValueId x, double beta, double threshold) {
  ValueId bx = beta == 1 ? x : e.mul(x, scalar(e, x, beta));
  ValueId clamped = e.op(Op::Minimum, {bx, scalar(e, x, threshold)});
  ValueId soft = unary(e, Op::Log1p, unary(e, Op::Exp, clamped));
  if (beta != 1) soft = e.div(soft, scalar(e, x, beta));
  return e.op(Op::Select, {e.op(Op::Gt, {bx, scalar(e, x, threshold)}), x, soft});
}

/// relu6(x + 3) = min(max(x + 3, 0), 6).
ValueId relu6_shifted(Emitter& e, ValueId x) {
  ValueId shifted = e.add(x, scalar(e, x, 3));
  return e.op(Op::Minimum, {e.op(Op::Maximum, {shifted, scalar(e, x, 0)}), scalar(e, x, 6)});
}

/// x > 0 ? x : weight · x with one learned slope, or one per channel (axis 1).
class PReLUModule : public UnaryModule {
 public:
  PReLUModule(int64_t num, double init) : num_(num), init_(init) {}

  std::string describe() const override { return "PReLU(" + std::to_string(num_) + ")"; }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (num_ < 1) e.fail(describe() + ": num_parameters must be >= 1");
    ValueId slope = e.param("weight", {num_}, Initializer::constant(init_), t.dtype);
    if (num_ > 1) {
      if (t.shape.rank() < 2 || t.shape[1] != num_) {
        e.fail(describe() + " has one slope per channel and expects an input [N," +
               std::to_string(num_) + ",...], got " + t.to_string());
      }
      IntList per_channel(t.shape.rank(), 1);
      per_channel[1] = num_;
      slope = e.reshape(slope, per_channel);
    } else if (t.shape.rank() == 0) {
      slope = e.reshape(slope, {});
    }
    return e.op(Op::Select, {e.op(Op::Gt, {x, scalar(e, x, 0)}), x, e.mul(slope, x)});
  }

 private:
  int64_t num_;
  double init_;
};

// SELU's constants, as in PyTorch.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

}  // namespace

ModulePtr LeakyReLU(double negative_slope) {
  return std::make_shared<Activation>(
      "LeakyReLU(" + format_float(negative_slope) + ")",
      [](Emitter& e, ValueId x, double slope, double) {
        return e.op(Op::Select,
                    {e.op(Op::Gt, {x, scalar(e, x, 0)}), x, e.mul(x, scalar(e, x, slope))});
      },
      negative_slope);
}

ModulePtr ELU(double alpha) {
  return std::make_shared<Activation>(
      "ELU(" + format_float(alpha) + ")",
      [](Emitter& e, ValueId x, double alpha, double) { return elu(e, x, 1, alpha); }, alpha);
}

ModulePtr SELU() {
  return std::make_shared<Activation>("SELU", [](Emitter& e, ValueId x, double, double) {
    return elu(e, x, kSeluScale, kSeluAlpha * kSeluScale);
  });
}

ModulePtr SiLU() {
  return std::make_shared<Activation>("SiLU", [](Emitter& e, ValueId x, double, double) {
    return e.mul(x, unary(e, Op::Sigmoid, x));
  });
}

ModulePtr Mish() {
  // x · tanh(softplus(x)); PyTorch applies no threshold, but tanh is exactly 1 in f32
  // long before softplus's default threshold of 20, so the results agree.
  return std::make_shared<Activation>("Mish", [](Emitter& e, ValueId x, double, double) {
    return e.mul(x, unary(e, Op::Tanh, softplus(e, x, 1, 20)));
  });
}

ModulePtr Softplus(double beta, double threshold) {
  return std::make_shared<Activation>(
      "Softplus(beta=" + format_float(beta) + ", threshold=" + format_float(threshold) + ")",
      softplus, beta, threshold);
}

ModulePtr Hardswish() {
  return std::make_shared<Activation>("Hardswish", [](Emitter& e, ValueId x, double, double) {
    return e.div(e.mul(x, relu6_shifted(e, x)), scalar(e, x, 6));
  });
}

ModulePtr Hardsigmoid() {
  return std::make_shared<Activation>("Hardsigmoid", [](Emitter& e, ValueId x, double, double) {
    return e.div(relu6_shifted(e, x), scalar(e, x, 6));
  });
}

ModulePtr PReLU(int64_t num_parameters, double init) {
  return std::make_shared<PReLUModule>(num_parameters, init);
}

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
