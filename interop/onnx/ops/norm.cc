// Normalization and dropout: BatchNormalization (every opset; functional::batch_norm, as
// the BatchNorm modules), InstanceNormalization, LayerNormalization (weft's layer_norm),
// LRN (the channel window's mean of squares as an avg_pool2d), MeanVarianceNormalization
// (its ONNX function body) and Dropout (identity, or functional::dropout in training).
//
// Training behaviour: BatchNormalization uses the batch statistics when the import is for
// training (a model trained in weft: the running statistics, state inputs, are assigned
// their PyTorch update, momentum 1 - m with the unbiased variance) or when the model asks
// for it (training_mode = 1; before opset 14 outputs beyond Y, and before opset 7
// is_test = 0); its optional outputs then
// hold ONNX's running statistics (m·running + (1 - m)·batch, biased variance).
#include "frontend/functional.h"
#include "interop/onnx/convert.h"
#include "interop/onnx/proto.h"
#include "ir/cast.h"

namespace weft::onnx_io {
namespace {
namespace norm {  // this file's names, apart in the importer's unity units

void batch_normalization(NodeContext& n) {
  n.expect_attrs({"consumed_inputs", "epsilon", "is_test", "momentum", "spatial", "training_mode"});
  Emitter& e = n.e();
  if (n.attr_int("spatial", 1) == 0) n.unsupported("spatial = 0 (statistics per activation)");
  ValueId x = n.input(0);
  const Type t = e.type(x);
  if (t.shape.rank() < 2) n.invalid("the input must be [N, C, ...], got " + t.to_string());
  const int64_t c = t.shape[1];
  const double momentum = n.attr_float("momentum", 0.9);
  // Inside a flow, the flow's mode decides (a model exported for training evaluates with
  // its running statistics); a graph of its own does what the model says.
  // Opsets 7 to 13 have no attribute for it: a node that names outputs beyond Y is in
  // training mode (the spec's "Output case #1"), as torch.onnx.export writes one.
  bool names_statistics = false;
  for (int i = 1; i <= 4; ++i) names_statistics = names_statistics || n.wants_output(i);
  const bool model_training = !n.flow_decides_mode() &&
                              ((n.opset() >= 14 && n.attr_int("training_mode", 0) != 0) ||
                               (n.opset() >= 7 && n.opset() < 14 && names_statistics) ||
                               (n.opset() < 7 && n.attr_int("is_test", 0) == 0));
  const bool batch_stats = n.training() || model_training;
  if (n.training() && functional::batch_norm_count(t.shape) < 2) {
    n.invalid("training needs more than one value per channel to compute the batch variance, got " +
              t.to_string());
  }
  functional::BatchNormParams p{n.input(1), n.input(2), n.state_input(3), n.state_input(4),
                                n.attr_float("epsilon", 1e-5), 1.0 - momentum, /*sync=*/false};
  for (ValueId v : {p.weight, p.bias, p.running_mean, p.running_var}) {
    if (e.shape(v) != Shape({c})) {
      n.invalid("scale, B, mean and var must be [" + std::to_string(c) + "], got " + e.type(v).to_string());
    }
  }
  // Training updates the running statistics in place: they must be state inputs.
  auto is_state = [&](ValueId v) {
    const int i = e.graph().input_index(v);
    return i >= 0 && e.graph().inputs()[static_cast<size_t>(i)].kind == InputKind::state;
  };
  if (n.training() && !(is_state(p.running_mean) && is_state(p.running_var))) {
    n.unsupported("training with a running mean or variance that is not an initializer (weft "
                  "updates them as state)");
  }
  functional::BatchNormResult r =
      functional::batch_norm(e, x, p, batch_stats, /*update_running=*/n.training());
  n.set_output(0, r.y);
  // Optional outputs: the running mean and variance as ONNX updates them (opset 14 on,
  // and before it with saved_mean and saved_var after them). saved_var is not computed
  // (implementations disagree on what it holds): refused where read, like the others
  // outside training, so torch.onnx.export's training-mode models (all five outputs
  // named, only Y read) import.
  const DType dtype = t.dtype;
  auto onnx_running = [&](ValueId running, ValueId batch) {
    return e.add(e.mul(running, e.constant(momentum, dtype)),
                 e.mul(e.reshape(batch, {c}), e.constant(1.0 - momentum, dtype)));
  };
  for (int i = 1; i <= 3; ++i) {
    if (!n.wants_output(i)) continue;
    // Outside training they are not computed: refused where something reads them.
    if (!batch_stats) continue;
    if (i == 1) n.set_output(1, onnx_running(p.running_mean, r.mean));
    if (i == 2) n.set_output(2, onnx_running(p.running_var, r.var));
    if (i == 3) n.set_output(3, e.reshape(r.mean, {c}));
  }
}

void instance_normalization(NodeContext& n) {
  n.expect_attrs({"consumed_inputs", "epsilon"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Shape s = e.shape(x);
  if (s.rank() < 3) n.invalid("the input must be [N, C, *spatial], got " + e.type(x).to_string());
  IntList axes, channel_shape(s.rank(), 1);
  for (int i = 2; i < s.rank(); ++i) axes.push_back(i);
  channel_shape[1] = s[1];
  ValueId y = functional::normalize(e, x, axes, n.attr_float("epsilon", 1e-5));
  y = e.mul(y, e.reshape(n.input(1), channel_shape));
  n.set_output(0, e.add(y, e.reshape(n.input(2), channel_shape)));
}

/// LayerNormalization (opset 17): statistics in the stash type (1: f32, 11: f64). When it
/// is the input's dtype this is weft's layer_norm; otherwise, as ONNX's function body
/// does, the normalization runs in the stash type and the scale and bias are applied
/// after the cast back.
void layer_normalization(NodeContext& n) {
  n.expect_attrs({"axis", "epsilon", "stash_type"});
  Emitter& e = n.e();
  const int64_t stash_type = n.attr_int("stash_type", 1);
  if (stash_type != onnx::TensorProto::FLOAT && stash_type != onnx::TensorProto::DOUBLE) {
    n.unsupported("stash_type " + std::to_string(stash_type) + " (weft has 1, float, and 11, double)");
  }
  const DType stash = stash_type == onnx::TensorProto::FLOAT ? DType::f32 : DType::f64;
  ValueId x = n.input(0);
  const Type t = e.type(x);
  const int rank = t.shape.rank();
  int64_t axis = n.attr_int("axis", -1);
  if (axis < -rank || axis >= rank) n.invalid("axis " + std::to_string(axis) + " is outside " + t.to_string());
  if (axis < 0) axis += rank;
  IntList axes, normalized;
  for (int64_t i = axis; i < rank; ++i) {
    axes.push_back(i);
    normalized.push_back(t.shape[static_cast<int>(i)]);
  }
  auto affine = [&](int i, double dflt) {
    if (!n.has_input(i)) return e.full(normalized, dflt, t.dtype);
    ValueId v = n.input(i);
    return e.shape(v).dims == normalized ? v : e.op(Op::BroadcastTo, {v}, {{"shape", normalized}});
  };
  const double eps = n.attr_float("epsilon", 1e-5);
  const Attrs attrs = {{"axes", axes}, {"eps", eps}};
  if (stash == t.dtype) {
    n.set_output(0, e.op(Op::LayerNorm, {x, affine(1, 1.0), affine(2, 0.0)}, attrs));
  } else {
    ValueId unit = e.op(Op::LayerNorm, {cast_to(e, x, stash), e.full(normalized, 1.0, stash), e.full(normalized, 0.0, stash)}, attrs);
    n.set_output(0, e.add(e.mul(cast_to(e, unit, t.dtype), affine(1, 1.0)), affine(2, 0.0)));
  }
  if (n.wants_output(1) || n.wants_output(2)) {
    // Mean and InvStdDev are of the stash type, computed in it.
    ValueId xs = cast_to(e, x, stash);
    ValueId mean = e.mean(xs, axes, /*keepdims=*/true);
    ValueId centered = e.sub(xs, mean);
    ValueId var = e.mean(e.mul(centered, centered), axes, /*keepdims=*/true);
    if (n.wants_output(1)) n.set_output(1, mean);
    if (n.wants_output(2)) n.set_output(2, e.op(Op::Rsqrt, {e.add(var, e.constant(eps, stash))}));
  }
}

/// y = x / (bias + alpha/size · Σ x² over the channel window)^beta, the window
/// [c - floor((size-1)/2), c + ceil((size-1)/2)] cut at the edges: the sum over the window
/// is size times an avg_pool2d (k×1, zero pads) of x² viewed as [N, 1, C, rest].
void lrn(NodeContext& n) {
  n.expect_attrs({"alpha", "beta", "bias", "size"});
  Emitter& e = n.e();
  if (!n.has_attr("size")) n.invalid("size is required");
  const int64_t size = n.attr_int("size", 1);
  if (size < 1) n.invalid("size must be >= 1");
  ValueId x = n.input(0);
  const Type t = e.type(x);
  if (t.shape.rank() < 2) n.invalid("the input must be [N, C, ...], got " + t.to_string());
  if (t.shape.numel() == 0) {  // an empty batch or no channels: nothing to normalize
    n.set_output(0, x);
    return;
  }
  const int64_t batch = t.shape[0], c = t.shape[1], rest = t.shape.numel() / (batch * c);
  ValueId sq = e.reshape(e.mul(x, x), {batch, 1, c, rest});
  sq = e.op(Op::Pad, {sq}, {{"low", IntList{0, 0, (size - 1) / 2, 0}}, {"high", IntList{0, 0, size / 2, 0}}});
  ValueId mean = e.op(Op::AvgPool2d, {sq},
                      {{"kernel", IntList{size, 1}}, {"stride", IntList{1, 1}}, {"padding", IntList{0, 0}}});
  mean = e.reshape(mean, t.shape.dims);
  const DType dt = t.dtype;
  ValueId base = e.add(e.constant(n.attr_float("bias", 1.0), dt), e.mul(mean, e.constant(n.attr_float("alpha", 1e-4), dt)));
  n.set_output(0, e.div(x, e.op(Op::Pow, {base, e.constant(n.attr_float("beta", 0.75), dt)})));
}

/// ONNX's function body: (x - E[x]) / (sqrt(E[x²] - E[x]²) + 1e-9) over `axes`.
void mean_variance_normalization(NodeContext& n) {
  n.expect_attrs({"axes"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const DType dt = e.type(x).dtype;
  const IntList axes = n.attr_ints("axes", {0, 2, 3});
  ValueId mean = e.mean(x, axes, /*keepdims=*/true);
  ValueId variance = e.sub(e.mean(e.mul(x, x), axes, /*keepdims=*/true), e.mul(mean, mean));
  ValueId std_dev = e.add(e.op(Op::Sqrt, {variance}), e.constant(1e-9, dt));
  n.set_output(0, e.div(e.sub(x, mean), std_dev));
}

/// Identity outside training (the mask all true); in training, the Dropout module's
/// functional::dropout. The ratio is an attribute before opset 12, an input from it on.
void dropout(NodeContext& n) {
  n.expect_attrs({"consumed_inputs", "is_test", "ratio", "seed"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Type t = e.type(x);
  const bool model_training =
      !n.flow_decides_mode() &&
      ((n.opset() >= 12 && n.has_input(2) && n.scalar_input(2, "training_mode") != 0) ||
       (n.opset() < 7 && n.attr_int("is_test", 0) == 0));
  // The ratio matters in training only (outside it, it may even be fed at run time).
  const double ratio = !(n.training() || model_training) ? 0
                       : n.opset() >= 12 ? (n.has_input(1) ? n.scalar_input(1, "the ratio") : 0.5)
                                         : n.attr_float("ratio", 0.5);
  const bool training = ratio != 0;
  // The mask is bool from opset 10 on, the input's type before.
  const DType mask_dtype = n.opset() >= 10 ? DType::boolean : t.dtype;
  if (!training) {
    n.set_output(0, x);
    if (n.wants_output(1)) n.set_output(1, e.full(t.shape, 1.0, mask_dtype));
    return;
  }
  if (!(ratio >= 0 && ratio < 1)) n.invalid("the ratio must be in [0, 1), got " + format_float(ratio));
  if (n.has_attr("seed")) n.unsupported("a seed in training (weft draws from the graph's Philox stream)");
  functional::DropoutResult r = functional::dropout(e, x, ratio);
  n.set_output(0, r.y);
  if (n.wants_output(1)) {
    n.set_output(1, cast_to(e, r.mask, mask_dtype));
  }
}

const OpConverter kOps[] = {
    {"BatchNormalization", 1, batch_normalization},
    {"InstanceNormalization", 1, instance_normalization},
    {"LayerNormalization", 17, layer_normalization},
    {"LRN", 1, lrn},
    {"MeanVarianceNormalization", 9, mean_variance_normalization},
    {"Dropout", 1, dropout},
};

}  // namespace norm
}  // namespace

std::span<const OpConverter> norm_converters() { return norm::kOps; }

}  // namespace weft::onnx_io
