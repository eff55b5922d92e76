// The shared math of frontend/functional.h: batch norm, dropout, pooling and the
// transposed convolution, for the modules and the ONNX importer alike.
#include "frontend/functional.h"

#include <algorithm>

namespace weft::functional {

int64_t batch_norm_count(const Shape& x) {
  int64_t n = 1;
  for (int d = 0; d < x.rank(); ++d) n *= d == 1 ? 1 : x[d];
  return n;
}

BatchNormResult batch_norm(Emitter& e, ValueId x, const BatchNormParams& p, bool batch_stats,
                           bool update_running) {
  const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
  const int rank = t.shape.rank();
  const int64_t c = t.shape[1];
  const DType dtype = t.dtype;
  IntList channel_shape(rank, 1), axes = {0};
  channel_shape[1] = c;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  auto per_channel = [&](ValueId v) { return e.reshape(v, channel_shape); };

  // SyncBatchNorm: a rank's statistic averaged over the ranks (equal shares of the
  // global batch, so the mean of the ranks' means is the global one).
  auto over_ranks = [&](ValueId v, const char* reduction) {
    return p.sync ? e.op(Op::AllReduce, {v}, {{"reduction", std::string(reduction)}}) : v;
  };

  BatchNormResult r;
  if (batch_stats) {
    const int64_t n = batch_norm_count(t.shape);
    r.mean = over_ranks(e.mean(x, axes, /*keepdims=*/true), "mean");
    ValueId centered = e.sub(x, r.mean);
    r.var = over_ranks(e.mean(e.mul(centered, centered), axes, /*keepdims=*/true), "mean");
    if (update_running) {
      // running = (1 - momentum) · running + momentum · batch.
      auto update = [&](ValueId running, ValueId batch) {
        return e.add(e.mul(running, e.constant(1.0 - p.momentum, dtype)),
                     e.mul(e.reshape(batch, {c}), e.constant(p.momentum, dtype)));
      };
      // n / (n - 1), n the values per channel of the (global) batch.
      ValueId correction = e.constant(static_cast<double>(n) / static_cast<double>(n - 1), dtype);
      if (p.sync) {
        ValueId global_n = over_ranks(e.constant(static_cast<double>(n), dtype), "sum");
        correction = e.div(global_n, e.sub(global_n, e.constant(1.0, dtype)));
      }
      ValueId unbiased = e.mul(r.var, correction);
      r.new_running_mean = update(p.running_mean, r.mean);
      r.new_running_var = update(p.running_var, unbiased);
      e.assign(p.running_mean, r.new_running_mean);
      e.assign(p.running_var, r.new_running_var);
    }
    ValueId scale =
        e.mul(e.op(Op::Rsqrt, {e.add(r.var, e.constant(p.eps, dtype))}), per_channel(p.weight));
    r.y = e.add(e.mul(centered, scale), per_channel(p.bias));
    return r;
  }
  ValueId scale = e.mul(e.op(Op::Rsqrt, {e.add(p.running_var, e.constant(p.eps, dtype))}), p.weight);
  r.y = e.add(e.mul(e.sub(x, per_channel(p.running_mean)), per_channel(scale)), per_channel(p.bias));
  return r;
}

ValueId normalize(Emitter& e, ValueId x, const IntList& axes, double eps) {
  const DType dtype = e.type(x).dtype;
  ValueId centered = e.sub(x, e.mean(x, axes, /*keepdims=*/true));
  ValueId var = e.mean(e.mul(centered, centered), axes, /*keepdims=*/true);
  return e.mul(centered, e.op(Op::Rsqrt, {e.add(var, e.constant(eps, dtype))}));
}

DropoutResult dropout(Emitter& e, ValueId x, double p) {
  if (p == 0) return {x, kNoValue};
  const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
  ValueId mask = e.op(Op::RandomBernoulli, {e.random_key()},
                      {{"shape", t.shape.dims}, {"p", 1.0 - p}, {"dtype", t.dtype}});
  return {e.mul(e.mul(x, mask), e.constant(1.0 / (1.0 - p), t.dtype)), mask};
}

namespace {

ValueId pool2d(Emitter& e, ValueId x, bool max, IntList kernel, IntList stride, IntList padding) {
  return e.op(max ? Op::MaxPool2d : Op::AvgPool2d, {x},
              {{"kernel", std::move(kernel)}, {"stride", std::move(stride)}, {"padding", std::move(padding)}});
}

}  // namespace

ValueId pool(Emitter& e, ValueId x, const PoolWindow& w) {
  const Shape s = e.shape(x);
  const auto& k = w.kernel;
  const auto& st = w.stride;
  const auto& p = w.padding;
  switch (s.rank() - 2) {
    case 1: {
      ValueId y = pool2d(e, e.reshape(x, {s[0], s[1], 1, s[2]}), w.max, {1, k[0]}, {1, st[0]}, {0, p[0]});
      return e.reshape(y, {s[0], s[1], e.shape(y)[3]});
    }
    case 2: return pool2d(e, x, w.max, {k[0], k[1]}, {st[0], st[1]}, {p[0], p[1]});
    default: {
      const ValueId planes = pool2d(e, e.reshape(x, {s[0], s[1] * s[2], s[3], s[4]}), w.max,
                                    {k[1], k[2]}, {st[1], st[2]}, {p[1], p[2]});
      const int64_t oh = e.shape(planes)[2], ow = e.shape(planes)[3];
      const ValueId depth = pool2d(e, e.reshape(planes, {s[0], s[1], s[2], oh * ow}), w.max,
                                   {k[0], 1}, {st[0], 1}, {p[0], 0});
      return e.reshape(depth, {s[0], s[1], e.shape(depth)[2], oh, ow});
    }
  }
}

ValueId conv_transpose(Emitter& e, ValueId x, ValueId w, const ConvTranspose& c) {
  const Shape xs = e.shape(x), ws = e.shape(w);
  const int spatial = xs.rank() - 2;
  // When the pads are symmetric and output_padding below the stride, the output is the
  // exact gradient of one forward convolution with that padding; otherwise that of the
  // unpadded one, cropped (or extended) by a pad op.
  bool direct = true;
  for (int a = 0; a < spatial; ++a) {
    direct = direct && c.pad_begin[a] == c.pad_end[a] && c.pad_begin[a] >= 0 &&
             c.output_padding[a] < c.stride[a];
  }
  // Otherwise positive amounts crop the unpadded output (a slice), negative ones extend
  // it with zeros (a pad).
  IntList input_shape = {xs[0], ws[1] * c.groups}, padding;
  IntList start = {0, 0}, stop = {xs[0], ws[1] * c.groups}, low = {0, 0}, high = {0, 0};
  bool crop = false, extend = false;
  for (int a = 0; a < spatial; ++a) {
    const int64_t span = c.dilation[a] * (ws[2 + a] - 1) + 1;
    const int64_t full = (xs[2 + a] - 1) * c.stride[a] + span;
    input_shape.push_back(direct ? full - 2 * c.pad_begin[a] + c.output_padding[a] : full);
    padding.push_back(direct ? c.pad_begin[a] : 0);
    const int64_t begin = c.pad_begin[a], end = c.pad_end[a] - c.output_padding[a];
    start.push_back(std::max<int64_t>(begin, 0));
    stop.push_back(full - std::max<int64_t>(end, 0));
    low.push_back(std::max<int64_t>(-begin, 0));
    high.push_back(std::max<int64_t>(-end, 0));
    crop = crop || begin > 0 || end > 0;
    extend = extend || begin < 0 || end < 0;
  }
  ValueId y = e.op(Op::ConvBackwardInput, {x, w},
                   {{"stride", c.stride},
                    {"padding", padding},
                    {"dilation", c.dilation},
                    {"groups", c.groups},
                    {"input_shape", input_shape}});
  if (direct) return y;
  if (crop) y = e.op(Op::Slice, {y}, {{"start", start}, {"stop", stop}});
  if (extend) y = e.op(Op::Pad, {y}, {{"low", low}, {"high", high}});
  return y;
}

}  // namespace weft::functional
