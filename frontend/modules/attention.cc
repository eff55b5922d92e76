// MultiheadAttention: batch-first self-attention built from primitives (matmul,
// reshape, transpose, select, softmax), so autodiff and fusion need nothing special.
//
//   q, k, v = split(x·W_inᵀ + b_in)                 [B, S, D] each
//   per head h (head_dim = D / H):
//     scores = (q_h / sqrt(head_dim))·k_hᵀ            [B, H, S, S]
//     scores = select(masked, -inf, scores)          causal and/or key padding
//     y_h    = dropout(softmax(scores))·v_h
//   out = concat_h(y_h)·W_outᵀ + b_out
//
// The order of operations (q scaled before the product, masks as -inf) is PyTorch 1.13's
// `F.multi_head_attention_forward`, so results agree to float rounding.
#include <cmath>
#include <limits>

#include "frontend/modules.h"

namespace weft {
namespace {

class MultiheadAttentionModule : public Module {
 public:
  MultiheadAttentionModule(int64_t embed_dim, int64_t num_heads, AttentionOptions options)
      : dim_(embed_dim), heads_(num_heads), options_(options) {}

  std::string describe() const override {
    std::string s =
        "MultiheadAttention(" + std::to_string(dim_) + ", heads=" + std::to_string(heads_);
    if (options_.causal) s += ", causal";
    return s + ")";
  }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    check_config(e);
    const size_t want = options_.key_padding_mask ? 2 : 1;
    if (inputs.size() != want) {
      e.fail(describe() + " takes " +
             (options_.key_padding_mask
                  ? std::string("two inputs (the stream [batch, seq, dim] and the key padding "
                                "mask bool [batch, seq] from uses(...))")
                  : std::string("one input (the stream [batch, seq, dim]); set "
                                "AttentionOptions::key_padding_mask to pass a mask")) +
             ", but " + std::to_string(inputs.size()) + " were given");
    }
    ValueId x = inputs[0];
    const Type& xt = e.type(x);
    if (xt.shape.rank() != 3 || xt.shape[2] != dim_ || !is_floating(xt.dtype)) {
      e.fail(describe() + " expects a float input [batch, seq, " + std::to_string(dim_) +
             "] (batch first), got " + xt.to_string());
    }
    const DType dtype = xt.dtype;
    const int64_t batch = xt.shape[0], seq = xt.shape[1], head_dim = dim_ / heads_;

    ValueId mask = kNoValue;
    if (options_.key_padding_mask) {
      mask = inputs[1];
      const Type& mt = e.type(mask);
      if (mt.dtype != DType::boolean || mt.shape != Shape({batch, seq})) {
        e.fail(describe() + ": the key padding mask must be bool [batch, seq] = " +
               Type{DType::boolean, Shape({batch, seq})}.to_string() +
               " (true marks padding), got " + mt.to_string());
      }
    }

    // Projections to q, k, v: [B, S, D] each.
    ValueId q, k, v;
    if (options_.packed_qkv) {
      ValueId w = e.param("in_proj_weight", {3 * dim_, dim_}, Initializer::xavier_uniform(), dtype);
      ValueId qkv = e.matmul(x, e.transpose(w, {1, 0}));
      if (options_.bias) {
        qkv = e.add(qkv, e.param("in_proj_bias", {3 * dim_}, Initializer::zeros(), dtype));
      }
      auto part = [&](int64_t i) {
        return e.op(
            Op::Slice, {qkv},
            {{"start", IntList{0, 0, i * dim_}}, {"stop", IntList{batch, seq, (i + 1) * dim_}}});
      };
      q = part(0);
      k = part(1);
      v = part(2);
    } else {
      // PyTorch's separate-projection layout (used when kdim/vdim differ) initializes each
      // square matrix with xavier_uniform on its own.
      auto project = [&](const std::string& name) {
        ValueId w = e.param(name + ".weight", {dim_, dim_}, Initializer::xavier_uniform(), dtype);
        ValueId y = e.matmul(x, e.transpose(w, {1, 0}));
        if (!options_.bias) return y;
        return e.add(y, e.param(name + ".bias", {dim_}, Initializer::zeros(), dtype));
      };
      q = project("q_proj");
      k = project("k_proj");
      v = project("v_proj");
    }

    // [B, S, D] -> [B, H, S, head_dim].
    auto heads = [&](ValueId t) {
      return e.transpose(e.reshape(t, {batch, seq, heads_, head_dim}), {0, 2, 1, 3});
    };
    q = e.mul(heads(q), e.constant(1.0 / std::sqrt(static_cast<double>(head_dim)), dtype));
    ValueId scores = e.matmul(q, e.transpose_last2(heads(k)));  // [B, H, S, S]

    const ValueId neg_inf = e.constant(-std::numeric_limits<double>::infinity(), dtype);
    if (options_.causal) {
      // Query i may not see key j > i.
      ValueId row = e.op(Op::Iota, {}, {{"shape", IntList{seq, seq}}, {"axis", int64_t{0}}});
      ValueId col = e.op(Op::Iota, {}, {{"shape", IntList{seq, seq}}, {"axis", int64_t{1}}});
      scores = e.op(Op::Select, {e.op(Op::Gt, {col, row}), neg_inf, scores});
    }
    if (mask != kNoValue) {
      scores = e.op(Op::Select, {e.reshape(mask, {batch, 1, 1, seq}), neg_inf, scores});
    }
    ValueId weights = e.op(Op::Softmax, {scores}, {{"axis", int64_t{-1}}});
    if (e.training() && options_.dropout > 0) weights = dropout(e, weights);

    ValueId y = e.matmul(weights, heads(v));  // [B, H, S, head_dim]
    y = e.reshape(e.transpose(y, {0, 2, 1, 3}), {batch, seq, dim_});
    // out_proj is PyTorch's NonDynamicallyQuantizableLinear: Linear's weight init, bias 0.
    ValueId wo = e.param("out_proj.weight", {dim_, dim_},
                         Initializer::kaiming_uniform(std::sqrt(5.0)), dtype);
    y = e.matmul(y, e.transpose(wo, {1, 0}));
    if (options_.bias) y = e.add(y, e.param("out_proj.bias", {dim_}, Initializer::zeros(), dtype));
    return y;
  }

 private:
  void check_config(Emitter& e) const {
    if (dim_ <= 0 || heads_ <= 0) {
      e.fail(describe() + ": embed_dim and num_heads must be positive");
    }
    if (dim_ % heads_ != 0) {
      e.fail(describe() + ": embed_dim " + std::to_string(dim_) +
             " is not divisible by num_heads " + std::to_string(heads_) +
             "; each head gets embed_dim / num_heads features");
    }
    if (!(options_.dropout >= 0 && options_.dropout <= 1)) {
      e.fail(describe() + ": dropout probability must be in [0, 1], got " +
             format_float(options_.dropout));
    }
  }

  // PyTorch's F.dropout on the attention weights: keep with probability 1 - p, scale the
  // kept ones by 1 / (1 - p).
  ValueId dropout(Emitter& e, ValueId w) const {
    const Type& t = e.type(w);
    if (options_.dropout >= 1) return e.full(t.shape, 0.0, t.dtype);
    ValueId keep =
        e.op(Op::RandomBernoulli, {e.random_key()},
             {{"shape", t.shape.dims}, {"p", 1.0 - options_.dropout}, {"dtype", t.dtype}});
    return e.mul(e.mul(w, keep), e.constant(1.0 / (1.0 - options_.dropout), t.dtype));
  }

  int64_t dim_, heads_;
  AttentionOptions options_;
};

}  // namespace

ModulePtr MultiheadAttention(int64_t embed_dim, int64_t num_heads, AttentionOptions options) {
  return std::make_shared<MultiheadAttentionModule>(embed_dim, num_heads, options);
}

}  // namespace weft
