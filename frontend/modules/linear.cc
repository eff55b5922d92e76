// Linear, Bilinear and LearnedParameter.
#include <cmath>

#include "frontend/modules.h"

namespace weft {
namespace {

class LinearModule : public UnaryModule {
 public:
  LinearModule(int64_t in, int64_t out, bool bias) : in_(in), out_(out), bias_(bias) {}

  std::string describe() const override {
    return "Linear(" + std::to_string(in_) + "->" + std::to_string(out_) + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Shape& s = e.shape(x);
    if (s.rank() < 1 || s.dims.back() != in_) {
      e.fail(describe() + " expects inputs whose last dim is " + std::to_string(in_) +
             ", got " + e.type(x).to_string());
    }
    // A vector [in] gives [out], as in PyTorch; matmul itself takes rank 2 and up.
    if (s.rank() == 1) return e.reshape(forward1(e, e.reshape(x, {1, in_})), {out_});
    // PyTorch: weight kaiming_uniform(a=sqrt(5)) = U(±1/sqrt(in)); bias U(±1/sqrt(in)).
    DType dtype = e.type(x).dtype;
    ValueId w = e.param("weight", {out_, in_}, Initializer::kaiming_uniform(std::sqrt(5.0)), dtype);
    ValueId y = e.matmul(x, e.transpose(w, {1, 0}));
    if (!bias_) return y;
    double bound = 1.0 / std::sqrt(static_cast<double>(in_));
    ValueId b = e.param("bias", {out_}, Initializer::uniform(-bound, bound), dtype);
    return e.add(y, b);
  }

 private:
  int64_t in_, out_;
  bool bias_;
};

/// y[..., o] = Σ_ij x1[..., i]·A[o, i, j]·x2[..., j] + b[o], as one matmul: x1 against A
/// laid out [in1, out·in2], then a product with x2 summed over in2.
class BilinearModule : public Module {
 public:
  BilinearModule(int64_t in1, int64_t in2, int64_t out, bool bias)
      : in1_(in1), in2_(in2), out_(out), bias_(bias) {}

  std::string describe() const override {
    return "Bilinear(" + std::to_string(in1_) + "x" + std::to_string(in2_) + "->" +
           std::to_string(out_) + ")";
  }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (inputs.size() != 2) {
      e.fail(describe() + " takes two inputs, the stream and one value from uses(...), but " +
             std::to_string(inputs.size()) + " were given");
    }
    ValueId x1 = inputs[0], x2 = inputs[1];
    const Type t1 = e.type(x1);  // Copies: emitting ops may move the graph's types.
    const Type t2 = e.type(x2);
    const Shape& s1 = t1.shape;
    const Shape& s2 = t2.shape;
    bool ok = s1.rank() >= 1 && s2.rank() == s1.rank() && s1.dims.back() == in1_ &&
              s2.dims.back() == in2_ && t1.dtype == t2.dtype;
    for (int i = 0; ok && i + 1 < s1.rank(); ++i) ok = s1[i] == s2[i];
    if (!ok) {
      e.fail(describe() + " expects inputs [..., " + std::to_string(in1_) + "] and [..., " +
             std::to_string(in2_) + "] with the same leading dims and dtype, got " +
             t1.to_string() + " and " + t2.to_string());
    }
    // PyTorch: weight and bias U(±1/sqrt(in1)).
    const double bound = 1.0 / std::sqrt(static_cast<double>(in1_));
    ValueId a = e.param("weight", {out_, in1_, in2_}, Initializer::uniform(-bound, bound), t1.dtype);
    IntList lead(s1.dims.begin(), s1.dims.end() - 1);
    int64_t batch = Shape(lead).numel();
    ValueId a2 = e.reshape(e.transpose(a, {1, 0, 2}), {in1_, out_ * in2_});
    ValueId t = e.matmul(e.reshape(x1, {batch, in1_}), a2);          // [B, out·in2]
    ValueId prod = e.mul(e.reshape(t, {batch, out_, in2_}), e.reshape(x2, {batch, 1, in2_}));
    ValueId y = e.sum(prod, {2});                                     // [B, out]
    if (bias_) y = e.add(y, e.param("bias", {out_}, Initializer::uniform(-bound, bound), t1.dtype));
    lead.push_back(out_);
    return e.reshape(y, lead);
  }

 private:
  int64_t in1_, in2_, out_;
  bool bias_;
};

class LearnedParameterModule : public UnaryModule {
 public:
  LearnedParameterModule(std::vector<int64_t> shape, Initializer init)
      : shape_(std::move(shape)), init_(init) {}

  std::string describe() const override { return "LearnedParameter(" + Shape(shape_).to_string() + ")"; }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Shape s = e.shape(x);
    // NumPy broadcasting of p into x: x's shape must not change.
    bool ok = s.rank() >= static_cast<int>(shape_.size());
    for (size_t i = 0; ok && i < shape_.size(); ++i) {
      int64_t d = s[s.rank() - static_cast<int>(shape_.size()) + static_cast<int>(i)];
      ok = shape_[i] == d || shape_[i] == 1;
    }
    if (!ok) {
      e.fail(describe() + " is added to the stream and must broadcast to its shape, but the "
             "input is " + e.type(x).to_string());
    }
    return e.add(x, e.param("weight", shape_, init_, e.type(x).dtype));
  }

 private:
  std::vector<int64_t> shape_;
  Initializer init_;
};

}  // namespace

ModulePtr Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias) {
  return std::make_shared<BilinearModule>(in1_features, in2_features, out_features, bias);
}

ModulePtr LearnedParameter(std::vector<int64_t> shape, Initializer init) {
  return std::make_shared<LearnedParameterModule>(std::move(shape), init);
}

ModulePtr Linear(int64_t in_features, int64_t out_features, bool bias) {
  return std::make_shared<LinearModule>(in_features, out_features, bias);
}

}  // namespace weft
