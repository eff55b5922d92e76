// Normalization layers.
#include "frontend/modules.h"

namespace weft {
namespace {

class LayerNormModule : public UnaryModule {
 public:
  LayerNormModule(std::vector<int64_t> shape, double eps, bool affine)
      : shape_(std::move(shape)), eps_(eps), affine_(affine) {}

  std::string describe() const override {
    std::string dims;
    for (int64_t d : shape_) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    return "LayerNorm(" + dims + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Shape& s = e.shape(x);
    int k = static_cast<int>(shape_.size());
    bool fits = s.rank() >= k;
    for (int i = 0; fits && i < k; ++i) fits = s[s.rank() - k + i] == shape_[i];
    if (!fits) {
      e.fail(describe() + " normalizes trailing dims " + Shape(shape_).to_string() +
             " but the input is " + e.type(x).to_string());
    }
    DType dtype = e.type(x).dtype;
    IntList axes;
    for (int i = 0; i < k; ++i) axes.push_back(s.rank() - k + i);
    ValueId gamma = affine_ ? e.param("weight", shape_, Initializer::ones(), dtype)
                            : e.full(shape_, 1.0, dtype);
    ValueId beta = affine_ ? e.param("bias", shape_, Initializer::zeros(), dtype)
                           : e.full(shape_, 0.0, dtype);
    return e.op(Op::LayerNorm, {x, gamma, beta}, {{"axes", axes}, {"eps", eps_}});
  }

 private:
  std::vector<int64_t> shape_;
  double eps_;
  bool affine_;
};

}  // namespace

ModulePtr LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine) {
  return std::make_shared<LayerNormModule>(std::move(normalized_shape), eps, elementwise_affine);
}

ModulePtr LayerNorm(int64_t normalized_size, double eps) {
  return LayerNorm(std::vector<int64_t>{normalized_size}, eps, true);
}

}  // namespace weft
