// Normalization layers. BatchNorm, InstanceNorm, RMSNorm and GroupNorm are written with primitives
// (mean, sub, mul, rsqrt), so autodiff needs no rules of their own.
#include "frontend/functional.h"
#include "frontend/modules.h"

namespace weft {
namespace {

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string out;
  for (int64_t d : dims) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

/// The axes of the trailing dims `shape` of x (what a norm over `shape` reduces), or a
/// build error naming the module (`who`) and the input's type.
IntList trailing_axes(Emitter& e, ValueId x, const std::vector<int64_t>& shape,
                      const std::string& who) {
  const Shape s = e.shape(x);
  const int k = static_cast<int>(shape.size());
  bool fits = s.rank() >= k;
  for (int i = 0; fits && i < k; ++i) fits = s[s.rank() - k + i] == shape[i];
  if (!fits) {
    e.fail(who + " normalizes trailing dims " + Shape(shape).to_string() + " but the input is " +
           e.type(x).to_string());
  }
  IntList axes;
  for (int i = 0; i < k; ++i) axes.push_back(s.rank() - k + i);
  return axes;
}

class LayerNormModule : public UnaryModule {
 public:
  LayerNormModule(std::vector<int64_t> shape, double eps, bool affine)
      : shape_(std::move(shape)), eps_(eps), affine_(affine) {}

  std::string describe() const override { return "LayerNorm(" + dims_string(shape_) + ")"; }

  ValueId forward1(Emitter& e, ValueId x) override {
    IntList axes = trailing_axes(e, x, shape_, describe());
    DType dtype = e.type(x).dtype;
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


/// Training: y = (x - mean) / sqrt(var + eps) · weight + bias with the batch statistics
/// over every axis but the channels (1) and the biased variance; the running statistics
/// move towards the batch ones (running_var towards the unbiased variance) and
/// num_batches_tracked counts the steps, as in PyTorch. Eval: the running statistics
/// normalize. `dims` is 1 ([N,C] or [N,C,L]), 2 ([N,C,H,W]) or 3 ([N,C,D,H,W]).
class BatchNormModule : public UnaryModule {
 public:
  BatchNormModule(int dims, int64_t channels, BatchNormOptions options)
      : dims_(dims),
        channels_(channels),
        eps_(options.eps),
        momentum_(options.momentum),
        sync_(options.sync) {}

  std::string describe() const override {
    return "BatchNorm" + std::to_string(dims_) + "d(" + std::to_string(channels_) + (sync_ ? ", sync)" : ")");
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    const int rank = t.shape.rank();
    const bool rank_ok = dims_ == 1 ? (rank == 2 || rank == 3) : rank == dims_ + 2;
    if (!rank_ok || t.shape[1] != channels_) {
      const std::string c = std::to_string(channels_);
      const std::string layout = dims_ == 1 ? "an input [N," + c + "] or [N," + c + ",L]"
                                 : dims_ == 2 ? "an NCHW input [N," + c + ",H,W]"
                                              : "an NCDHW input [N," + c + ",D,H,W]";
      e.fail(describe() + " expects " + layout + ", got " + t.to_string());
    }
    const DType dtype = t.dtype;
    const int64_t c = channels_;
    ValueId weight = e.param("weight", {c}, Initializer::ones(), dtype);
    ValueId bias = e.param("bias", {c}, Initializer::zeros(), dtype);
    ValueId running_mean = e.state("running_mean", {c}, Initializer::zeros(), dtype);
    ValueId running_var = e.state("running_var", {c}, Initializer::ones(), dtype);
    ValueId batches = e.state("num_batches_tracked", {}, Initializer::zeros(), DType::i64);
    if (e.training() && functional::batch_norm_count(t.shape) < 2) {
      e.fail(describe() + " in training needs more than one value per channel to compute "
             "the batch variance, got " + t.to_string());
    }
    functional::BatchNormParams p{weight, bias, running_mean, running_var, eps_, momentum_, sync_};
    ValueId y = functional::batch_norm(e, x, p, /*batch_stats=*/e.training()).y;
    if (e.training()) e.assign(batches, e.add(batches, e.constant(1, DType::i64)));
    return y;
  }

 private:
  int dims_;
  int64_t channels_;
  double eps_, momentum_;
  bool sync_;
};

/// Normalizes each sample's channels over their spatial dims with the biased variance,
/// then (with `affine`) a per-channel weight and bias. No running statistics, as
/// PyTorch's default track_running_stats=False: training and eval compute the same.
class InstanceNormModule : public UnaryModule {
 public:
  InstanceNormModule(int dims, int64_t channels, double eps, bool affine)
      : dims_(dims), channels_(channels), eps_(eps), affine_(affine) {}

  std::string describe() const override {
    return "InstanceNorm" + std::to_string(dims_) + "d(" + std::to_string(channels_) +
           (affine_ ? ", affine)" : ")");
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (t.shape.rank() != dims_ + 2 || t.shape[1] != channels_) {
      e.fail(describe() + " expects an input [N," + std::to_string(channels_) + "," +
             std::to_string(dims_) + " spatial dims], got " + t.to_string());
    }
    IntList axes, channel_shape(t.shape.rank(), 1);
    for (int i = 2; i < t.shape.rank(); ++i) axes.push_back(i);
    channel_shape[1] = channels_;
    const DType dtype = t.dtype;
    ValueId y = functional::normalize(e, x, axes, eps_);
    if (!affine_) return y;
    ValueId weight = e.param("weight", {channels_}, Initializer::ones(), dtype);
    ValueId bias = e.param("bias", {channels_}, Initializer::zeros(), dtype);
    return e.add(e.mul(y, e.reshape(weight, channel_shape)), e.reshape(bias, channel_shape));
  }

 private:
  int dims_;
  int64_t channels_;
  double eps_;
  bool affine_;
};

/// y = x / sqrt(mean(x², trailing dims) + eps) · weight.
class RMSNormModule : public UnaryModule {
 public:
  RMSNormModule(std::vector<int64_t> shape, double eps) : shape_(std::move(shape)), eps_(eps) {}

  std::string describe() const override { return "RMSNorm(" + dims_string(shape_) + ")"; }

  ValueId forward1(Emitter& e, ValueId x) override {
    IntList axes = trailing_axes(e, x, shape_, describe());
    DType dtype = e.type(x).dtype;
    ValueId ms = e.mean(e.mul(x, x), axes, /*keepdims=*/true);
    ValueId inv = e.op(Op::Rsqrt, {e.add(ms, e.constant(eps_, dtype))});
    return e.mul(e.mul(x, inv), e.param("weight", shape_, Initializer::ones(), dtype));
  }

 private:
  std::vector<int64_t> shape_;
  double eps_;
};

/// Normalizes each sample's channel groups over (channels in the group, spatial dims),
/// with the biased variance, then a per-channel affine (weight ones, bias zeros).
class GroupNormModule : public UnaryModule {
 public:
  GroupNormModule(int64_t groups, int64_t channels, double eps)
      : groups_(groups), channels_(channels), eps_(eps) {}

  std::string describe() const override {
    return "GroupNorm(" + std::to_string(groups_) + ", " + std::to_string(channels_) + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    if (groups_ < 1 || channels_ % groups_ != 0) {
      e.fail(describe() + ": groups=" + std::to_string(groups_) + " must divide the " +
             std::to_string(channels_) + " channels");
    }
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (t.shape.rank() < 2 || t.shape[1] != channels_) {
      e.fail(describe() + " expects an input [N," + std::to_string(channels_) + ",...], got " +
             t.to_string());
    }
    const DType dtype = t.dtype;
    const int64_t n = t.shape[0];
    ValueId normalized =
        e.reshape(functional::normalize(e, e.reshape(x, {n, groups_, -1}), {2}, eps_), t.shape.dims);
    IntList affine_shape(t.shape.rank(), 1);
    affine_shape[1] = channels_;
    ValueId weight = e.param("weight", {channels_}, Initializer::ones(), dtype);
    ValueId bias = e.param("bias", {channels_}, Initializer::zeros(), dtype);
    return e.add(e.mul(normalized, e.reshape(weight, affine_shape)), e.reshape(bias, affine_shape));
  }

 private:
  int64_t groups_, channels_;
  double eps_;
};

}  // namespace

ModulePtr BatchNorm1d(int64_t channels, BatchNormOptions options) {
  return std::make_shared<BatchNormModule>(1, channels, options);
}

ModulePtr BatchNorm2d(int64_t channels, BatchNormOptions options) {
  return std::make_shared<BatchNormModule>(2, channels, options);
}

ModulePtr BatchNorm3d(int64_t channels, BatchNormOptions options) {
  return std::make_shared<BatchNormModule>(3, channels, options);
}

ModulePtr BatchNorm1d(int64_t channels, double eps, double momentum) {
  return BatchNorm1d(channels, BatchNormOptions{.eps = eps, .momentum = momentum});
}

ModulePtr BatchNorm2d(int64_t channels, double eps, double momentum) {
  return BatchNorm2d(channels, BatchNormOptions{.eps = eps, .momentum = momentum});
}

ModulePtr BatchNorm3d(int64_t channels, double eps, double momentum) {
  return BatchNorm3d(channels, BatchNormOptions{.eps = eps, .momentum = momentum});
}

ModulePtr InstanceNorm1d(int64_t channels, double eps, bool affine) {
  return std::make_shared<InstanceNormModule>(1, channels, eps, affine);
}

ModulePtr InstanceNorm2d(int64_t channels, double eps, bool affine) {
  return std::make_shared<InstanceNormModule>(2, channels, eps, affine);
}

ModulePtr InstanceNorm3d(int64_t channels, double eps, bool affine) {
  return std::make_shared<InstanceNormModule>(3, channels, eps, affine);
}

ModulePtr RMSNorm(std::vector<int64_t> normalized_shape, double eps) {
  return std::make_shared<RMSNormModule>(std::move(normalized_shape), eps);
}

ModulePtr GroupNorm(int64_t groups, int64_t channels, double eps) {
  return std::make_shared<GroupNormModule>(groups, channels, eps);
}

ModulePtr LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine) {
  return std::make_shared<LayerNormModule>(std::move(normalized_shape), eps, elementwise_affine);
}

ModulePtr LayerNorm(int64_t normalized_size, double eps) {
  return LayerNorm(std::vector<int64_t>{normalized_size}, eps, true);
}

}  // namespace weft
