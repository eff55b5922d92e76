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

}  // namespace

ModulePtr Linear(int64_t in_features, int64_t out_features, bool bias) {
  return std::make_shared<LinearModule>(in_features, out_features, bias);
}

}  // namespace weft
