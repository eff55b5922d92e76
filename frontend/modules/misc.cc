// Embedding, EmbeddingBag, Dropout, pooling and Flatten.
#include <algorithm>

#include "frontend/functional.h"
#include "frontend/modules.h"
#include "ir/cast.h"

namespace weft {
namespace {

/// Looks rows of `weight` up: the indices are flattened into one gather on axis 0 of the
/// weight, and the result is reshaped to [indices..., dim].
class EmbeddingModule : public UnaryModule {
 public:
  EmbeddingModule(int64_t num, int64_t dim) : num_(num), dim_(dim) {}

  std::string describe() const override {
    return "Embedding(" + std::to_string(num_) + ", " + std::to_string(dim_) + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (t.dtype != DType::i64 && t.dtype != DType::i32) {
      e.fail(describe() + " expects integer indices (i64 or i32), got " + t.to_string());
    }
    IntList out_shape = t.shape.dims;
    ValueId idx = cast_to(e, x, DType::i64);
    idx = e.reshape(idx, {t.shape.numel()});
    ValueId weight = e.param("weight", {num_, dim_}, Initializer::normal(0, 1));
    out_shape.push_back(dim_);
    return e.reshape(e.op(Op::Gather, {weight, idx}, {{"axis", int64_t{0}}}), out_shape);
  }

 private:
  int64_t num_, dim_;
};

/// Gathers the [B·L] rows of a [B, L] index tensor at once, then reduces each bag's L
/// rows on axis 1. The gradient flows through the reduction and the gather (a
/// scatter-add), as PyTorch's dense gradient does.
class EmbeddingBagModule : public UnaryModule {
 public:
  EmbeddingBagModule(int64_t num, int64_t dim, BagMode mode) : num_(num), dim_(dim), mode_(mode) {}

  std::string describe() const override {
    static const char* kModes[] = {"sum", "mean", "max"};
    return "EmbeddingBag(" + std::to_string(num_) + ", " + std::to_string(dim_) + ", " +
           kModes[static_cast<int>(mode_)] + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if ((t.dtype != DType::i64 && t.dtype != DType::i32) || t.shape.rank() != 2 || t.shape[1] < 1) {
      e.fail(describe() + " expects integer indices (i64 or i32) in fixed-size bags [B, L], got " +
             t.to_string());
    }
    const int64_t bags = t.shape[0], length = t.shape[1];
    ValueId idx = cast_to(e, x, DType::i64);
    ValueId weight = e.param("weight", {num_, dim_}, Initializer::normal(0, 1));
    ValueId rows = e.op(Op::Gather, {weight, e.reshape(idx, {bags * length})}, {{"axis", int64_t{0}}});
    rows = e.reshape(rows, {bags, length, dim_});
    if (mode_ == BagMode::sum) return e.sum(rows, {1});
    if (mode_ == BagMode::mean) return e.mean(rows, {1});
    return e.op(Op::Max, {rows}, {{"axes", IntList{1}}});
  }

 private:
  int64_t num_, dim_;
  BagMode mode_;
};

/// Training: x · mask / (1 - p) with mask ~ Bernoulli(1 - p) drawn from the graph's
/// Philox stream (a fresh key per module use and per step). Eval, or p = 0: identity.
class DropoutModule : public UnaryModule {
 public:
  explicit DropoutModule(double p) : p_(p) {}

  std::string describe() const override { return "Dropout(" + format_float(p_) + ")"; }

  ValueId forward1(Emitter& e, ValueId x) override {
    if (!(p_ >= 0 && p_ < 1)) {
      e.fail(describe() + ": the drop probability p must be in [0, 1), got " + format_float(p_));
    }
    if (!e.training()) return x;
    return functional::dropout(e, x, p_).y;
  }

 private:
  double p_;
};

/// Checks an NCHW input for a pooling module and fails naming it.
void check_nchw(Emitter& e, const std::string& module, ValueId x) {
  if (e.rank(x) != 4) {
    e.fail(module + " expects an NCHW input [N,C,H,W], got " + e.type(x).to_string());
  }
}

/// Square-window pooling on 1 to 3 spatial dims through functional::pool (the 2-D pooling
/// ops; 1-D on a unit height, 3-D separably over (H, W), then D).
class PoolModule : public UnaryModule {
 public:
  PoolModule(int spatial, bool max, int64_t kernel, int64_t stride, int64_t padding)
      : spatial_(spatial), max_(max), kernel_(kernel), stride_(stride == 0 ? kernel : stride),
        padding_(padding) {}

  std::string describe() const override {
    return std::string(max_ ? "MaxPool" : "AvgPool") + std::to_string(spatial_) + "d(k" +
           std::to_string(kernel_) +
           ", s" + std::to_string(stride_) + ", p" + std::to_string(padding_) + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    if (kernel_ < 1 || stride_ < 1 || padding_ < 0 || 2 * padding_ > kernel_) {
      e.fail(describe() + ": kernel and stride must be >= 1 and padding in [0, kernel/2]");
    }
    if (spatial_ == 2) {
      check_nchw(e, describe(), x);
    } else if (e.rank(x) != spatial_ + 2) {
      e.fail(describe() + (spatial_ == 1 ? " expects an NCL input [N,C,L], got "
                                         : " expects an NCDHW input [N,C,D,H,W], got ") +
             e.type(x).to_string());
    }
    const Shape s = e.shape(x);
    for (int a = 0; a < spatial_; ++a) {
      if (s[2 + a] + 2 * padding_ < kernel_) {
        e.fail(describe() + ": the window is larger than the padded input " +
               e.type(x).to_string());
      }
    }
    return functional::pool(e, x, {.max = max_,
                                   .kernel = IntList(spatial_, kernel_),
                                   .stride = IntList(spatial_, stride_),
                                   .padding = IntList(spatial_, padding_)});
  }

 private:
  int spatial_;
  bool max_;
  int64_t kernel_, stride_, padding_;
};

/// The evenly dividing case of PyTorch's adaptive average pooling: every output pixel
/// averages an (H/out_h) x (W/out_w) block, an avg_pool2d with kernel = stride.
class AdaptiveAvgPoolModule : public UnaryModule {
 public:
  AdaptiveAvgPoolModule(int64_t oh, int64_t ow) : oh_(oh), ow_(ow) {}

  std::string describe() const override {
    return "AdaptiveAvgPool2d(" + std::to_string(oh_) + "x" + std::to_string(ow_) + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    check_nchw(e, describe(), x);
    const Shape s = e.shape(x);
    if (oh_ < 1 || ow_ < 1 || s[2] % oh_ != 0 || s[3] % ow_ != 0) {
      e.fail(describe() + " needs the input's spatial size to be a multiple of the output's " +
             std::to_string(oh_) + "x" + std::to_string(ow_) + ", got " + e.type(x).to_string() +
             " (" + std::to_string(s[2]) + "x" + std::to_string(s[3]) + "); uneven windows are "
             "not supported");
    }
    const IntList window = {s[2] / oh_, s[3] / ow_};
    return e.op(Op::AvgPool2d, {x}, {{"kernel", window}, {"stride", window}});
  }

 private:
  int64_t oh_, ow_;
};

class FlattenModule : public UnaryModule {
 public:
  FlattenModule(int64_t start, int64_t end) : start_(start), end_(end) {}

  std::string describe() const override {
    return "Flatten(" + std::to_string(start_) + ", " + std::to_string(end_) + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Shape s = e.shape(x);
    // A scalar flattens like a 1-D tensor, as in PyTorch.
    const int64_t rank = std::max(s.rank(), 1);
    int64_t start = start_ < 0 ? start_ + rank : start_;
    int64_t end = end_ < 0 ? end_ + rank : end_;
    if (start < 0 || start >= rank || end < 0 || end >= rank || start > end) {
      e.fail(describe() + ": dims " + std::to_string(start_) + ".." + std::to_string(end_) +
             " are not an ordered range of the input " + e.type(x).to_string());
    }
    if (s.rank() == 0) return e.reshape(x, {1});
    IntList out(s.dims.begin(), s.dims.begin() + start);
    int64_t merged = 1;
    for (int64_t i = start; i <= end; ++i) merged *= s[static_cast<int>(i)];
    out.push_back(merged);
    out.insert(out.end(), s.dims.begin() + end + 1, s.dims.end());
    return e.reshape(x, out);
  }

 private:
  int64_t start_, end_;
};

}  // namespace

ModulePtr Embedding(int64_t num_embeddings, int64_t embedding_dim) {
  return std::make_shared<EmbeddingModule>(num_embeddings, embedding_dim);
}

ModulePtr EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, BagMode mode) {
  return std::make_shared<EmbeddingBagModule>(num_embeddings, embedding_dim, mode);
}

ModulePtr Dropout(double p) { return std::make_shared<DropoutModule>(p); }

ModulePtr MaxPool1d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<PoolModule>(1, /*max=*/true, kernel, stride, padding);
}

ModulePtr MaxPool2d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<PoolModule>(2, /*max=*/true, kernel, stride, padding);
}

ModulePtr MaxPool3d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<PoolModule>(3, /*max=*/true, kernel, stride, padding);
}

ModulePtr AvgPool3d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<PoolModule>(3, /*max=*/false, kernel, stride, padding);
}

ModulePtr AvgPool1d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<PoolModule>(1, /*max=*/false, kernel, stride, padding);
}

ModulePtr AvgPool2d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<PoolModule>(2, /*max=*/false, kernel, stride, padding);
}

ModulePtr AdaptiveAvgPool2d(int64_t out_h, int64_t out_w) {
  return std::make_shared<AdaptiveAvgPoolModule>(out_h, out_w);
}

ModulePtr Flatten(int64_t start_dim, int64_t end_dim) {
  return std::make_shared<FlattenModule>(start_dim, end_dim);
}

}  // namespace weft
