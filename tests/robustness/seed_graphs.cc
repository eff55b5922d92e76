#include "tests/robustness/seed_graphs.h"

namespace weft::robustness {
namespace {

// examples/mlp/mlp.wir, as of this writing.
constexpr std::string_view kMlp = R"wir(
# weft's first flagship example: a two-layer MLP classifier on a batch of 8 flattened
# 4x4 images. One step: forward pass, softmax, cross-entropy loss, and a hand-written
# SGD update of the output bias (autodiff arrives with the [Training] issue).
#
#   bazel run //:weftc -- run examples/mlp/mlp.wir --out out/mlp \
#       --input x=examples/mlp/x.npy --input labels=examples/mlp/labels.npy ...
#
# (tools/example --full runs exactly this.)
graph @mlp(%x: f32[8,16], %labels: i64[8],
           %w1: f32[16,32] {param}, %b1: f32[32] {param},
           %w2: f32[32,10] {param}, %b2: f32[10] {param},
           %lr: f32[]) -> (f32[], f32[8,10]) {
  %h = matmul(%x, %w1)
  %hb = add(%h, %b1)
  %a = gelu(%hb) {approximate="tanh"}
  %z = matmul(%a, %w2)
  %logits = add(%z, %b2)
  %p = softmax(%logits) {axis=1}
  %loss = cross_entropy(%logits, %labels) {reduction="mean"}

  # d loss / d b2 = mean over the batch of (softmax(logits) - one_hot(labels))
  %y = one_hot(%labels) {depth=10, dtype=f32}
  %d = sub(%p, %y)
  %g = mean(%d) {axes=[0]}
  %step = mul(%g, %lr)
  %b2_new = sub(%b2, %step)
  assign(%b2, %b2_new)
  return %loss, %p
}
)wir";

// A small conv net: builder-path locations, every pooling and padding op, state update.
constexpr std::string_view kConvNet = R"wir(
graph @convnet(%img: f32[2,3,8,8], %k: f32[4,3,3,3] {param}, %gamma: f32[4] {param},
               %beta: f32[4] {param}, %seen: i64[] {state}) -> (f32[2,10], f32[]) {
  %c = conv2d(%img, %k) {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} loc("net.cc":10:3, "net > Conv2d(3->4)")
  %r = relu(%c) loc("net.cc":11:3, "net > ReLU")
  %m = max_pool2d(%r) {kernel=[2,2], stride=[2,2], padding=[0,0]} loc("net.cc":12:3, "net > MaxPool")
  %a = avg_pool2d(%m) {kernel=[2,2]} loc(unknown)
  %t = transpose(%a) {perm=[0,2,3,1]} : f32[2,2,2,4]
  %n = layer_norm(%t, %gamma, %beta) {axes=[-1], eps=1e-05}
  %p = pad(%n) {low=[0,0,1,0], high=[0,1,0,0], value=-0.5}
  %s = slice(%p) {start=[0,0,0,0], stop=[2,3,3,4], step=[1,1,1,2]}
  %f = reshape(%s) {shape=[2,-1]}
  %cat = concat(%f, %f, %f) {axis=1}
  %w = full() {shape=[54,10], value=0.01, dtype=f32}
  %logits = matmul(%cat, %w)
  %ls = log_softmax(%logits) {axis=-1}
  %e = exp(%ls)
  %mx = max(%e) {axes=[1], keepdims=true}
  %mn = min(%e) {axes=[0,1]}
  %sc = mul(%mx, %mn)
  %bc = broadcast_to(%sc) {shape=[2,10]}
  %tot = sum(%bc) {axes=[0,1], keepdims=false}
  %one = full() {shape=[], value=1, dtype=i64}
  %seen2 = add(%seen, %one)
  assign(%seen, %seen2)
  return %bc, %tot
}
)wir";

// Gathers, creation and random ops, every dtype, every elementwise op, a quoted name.
constexpr std::string_view kMisc = R"wir(
graph @misc(%x: f32[3,4], %idx: i64[2], %key: i64[2], %h: f16[3], %b: bf16[2,2],
            %d: f64[3], %q: i32[3], %u: u8[3], %flag: bool[3],
            %acc: f32[3,4] {state}, %lr: f64[] {param}) -> (f32[2,4], i64[3], f32[3,4]) {
  %g = gather(%x, %idx) {axis=0}
  %src = full() {shape=[2,4], value=2.5}
  %sa = scatter_add(%x, %idx, %src) {axis=0}
  %oh = one_hot(%idx) {depth=5, dtype=f64}
  %io = iota() {shape=[3,4], axis=1, dtype=i64}
  %am = argmax(%x) {axis=1, keepdims=false}
  %ru = random_uniform(%key) {shape=[3,4], dtype=f32}
  %rb = random_bernoulli(%key) {shape=[3], p=0.25, dtype=bool}
  %c1 = cast(%h) {dtype=f32}
  %c2 = cast(%b) {dtype=f64}
  %gl = gelu(%ru) {approximate="none"}
  %lt = lt(%x, %ru)
  %sel = select(%lt, %x, %ru)
  %nt = not(%flag)
  %an = and(%nt, %rb)
  %dn = div(%d, %d)
  %pw = pow(%q, %q)
  %ab = abs(%q)
  %ru8 = relu(%u)
  %mse = mse(%sel, %gl) {reduction="sum"}
  %ce = cross_entropy(%x, %am) {reduction="none"}
  %sm = softmax(%x)
  %mean = mean(%sm) {axes=[-1], keepdims=true}
  %mean2 = mean(%c2)
  %step = mul(%lr, %mean2)
  %acc2 = add(%acc, %sa)
  assign(%acc, %acc2)
  %"odd name" = sqrt(%gl) loc("gen.py":7:1, "a \"quoted\" > path\\x")
  %e1 = erf(%"odd name")
  %sg = sign(%e1)
  %fl = floor(%sg)
  %ng = neg(%fl)
  %l1 = log1p(%gl)
  %rs = rsqrt(%c1)
  %th = tanh(%rs)
  %sgm = sigmoid(%th)
  %sn = sin(%sgm)
  %cs = cos(%sn)
  %lg = log(%cs)
  %mxm = maximum(%lg, %rs)
  %mnm = minimum(%mxm, %c1)
  %sb = sub(%mnm, %c1)
  %eq1 = eq(%q, %q)
  %ne1 = ne(%u, %u)
  %le1 = le(%d, %d)
  %ge1 = ge(%d, %d)
  %gt1 = gt(%d, %d)
  %or1 = or(%eq1, %ne1)
  return %g, %am, %sel
}
)wir";

// The backward ops of conv and pooling; no `-> (...)` header.
constexpr std::string_view kBackward = R"wir(
graph @backward(%x: f32[1,2,6,6], %w: f32[3,2,3,3] {param}, %gy: f32[1,3,4,4],
                %py: f32[1,2,3,3]) {
  %gx = conv2d_backward_input(%gy, %w) {input_shape=[1,2,6,6], stride=[1,1], padding=[0,0], dilation=[1,1], groups=1} loc("train.cc":1:1, "grad > conv")
  %gw = conv2d_backward_weight(%x, %gy) {weight_shape=[3,2,3,3]} loc("train.cc":2:1, "grad > conv")
  %mp = max_pool2d(%x) {kernel=[2,2]}
  %mb = max_pool2d_backward(%x, %py) {kernel=[2,2], stride=[2,2], padding=[0,0]}
  %ab = avg_pool2d_backward(%py) {input_shape=[1,2,6,6], kernel=[2,2], padding=[0,0]}
  %tot = add(%mb, %ab)
  %all = add(%tot, %gx)
  return %all, %gw, %mp
}
)wir";

}  // namespace

const std::vector<SeedGraph>& seed_graphs() {
  static const std::vector<SeedGraph> seeds = {
      {"mlp.wir", kMlp},
      {"convnet.wir", kConvNet},
      {"misc.wir", kMisc},
      {"backward.wir", kBackward},
  };
  return seeds;
}

}  // namespace weft::robustness
