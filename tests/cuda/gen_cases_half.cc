// [Mixed precision] cases of gen_cases (gen_cases.h): f16/bf16 elementwise ops, casts,
// reductions and row kernels, tensor-core GEMMs, cuDNN convolutions and pooling, and whole
// training steps under autocast. gen_cases_main.cc lowers them after every other case.

#include <string>
#include <vector>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "tests/cuda/gen_cases.h"

namespace weft::gen_cases {

/// [Mixed precision] on the GPU, after every other case (so theirs keep their inputs):
/// f16 and bf16 elementwise ops fused as the GPU emitter fuses them (computed in f32,
/// rounded as the reference rounds), casts between the float dtypes, reductions and row
/// kernels in each GPU form, tensor-core GEMMs (with a fused epilogue) and cuDNN
/// convolutions, pooling computed in f32; then whole training steps under autocast
/// (TrainOptions::precision): an MLP, a layer-norm net, a BN CNN, a GRU and an LSTM in
/// bf16, the MLP in f16 with dynamic loss scaling.
std::vector<GraphCase> half_cases() {
  std::vector<GraphCase> cases;
  auto add = [&](const std::string& name, const std::string& inputs, const std::string& body,
                 const std::string& outs) {
    cases.push_back({name, parse(graph_text(name, inputs, body, outs))});
  };
  for (const char* d : {"bf16", "f16"}) {
    const std::string t(d);
    for (const char* op : {"neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "tanh",
                           "sigmoid", "relu", "sin", "cos", "erf", "sign", "floor"}) {
      // c = 2^-6: abs(x) + c is exact below 1 and 2 in both dtypes, so floor's steps do
      // not depend on whether the kernel rounds the sum (it does not since
      // round-at-stores, passes/round_at_stores.h; the reference rounds every op;
      // codegen/kernel_half_test.cc measures the chains against it on the CPU).
      add(std::string(op) + "_" + t, "%x: " + t + "[6,37]",
          "  %c = full() {shape=[], value=0.015625, dtype=" + t + "}\n" +
              "  %a = abs(%x)\n  %p = add(%a, %c)\n  %y = " + op + "(%p)\n  %z = " + op +
              "(%x)\n",
          "%y, %z");
    }
    // pow has no GPU kernel in any half dtype (ir/kernel_support.h): not a case.
    for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "lt", "ge"}) {
      add(std::string(op) + "_" + t, "%x: " + t + "[6,37], %y: " + t + "[37]",
          "  %z = " + std::string(op) + "(%x, %y)\n", "%z");
    }
    add("gelu_" + t, "%x: " + t + "[6,37]",
        "  %y = gelu(%x) {approximate=\"none\"}\n  %z = gelu(%x) {approximate=\"tanh\"}\n",
        "%y, %z");
    add("matmul_" + t, "%a: " + t + "[48,64], %b: " + t + "[64,40]", "  %c = matmul(%a, %b)\n",
        "%c");
    add("matmul_batched_tb_" + t, "%a: " + t + "[3,16,24], %b: " + t + "[3,8,24]",
        "  %c = matmul(%a, %b) {transpose_b=true}\n", "%c");
    add("gemm_epilogue_" + t,
        "%x: " + t + "[32,48], %w: " + t + "[48,24], %b: " + t + "[24], %r: " + t + "[32,24]",
        "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n  %t = relu(%s)\n  %u = add(%t, %r)\n",
        "%u");
    // Row kernels (a warp per row) from the primitives: the softmax and layer_norm ops
    // themselves stay f32 under autocast, and their half forms have no CUDA kernel.
    add("softmax_rows_" + t, "%x: " + t + "[12,48]",
        "  %m = max(%x) {axes=[-1], keepdims=true}\n  %d = sub(%x, %m)\n  %e = exp(%d)\n"
        "  %s = sum(%e) {axes=[-1], keepdims=true}\n  %p = div(%e, %s)\n",
        "%p");
    add("column_sum_groups_" + t, "%x: " + t + "[300,70]", "  %s = sum(%x) {axes=[0]}\n", "%s");
    add("bn_stats_block_" + t, "%x: " + t + "[16,8,40,40]",
        "  %s = mean(%x) {axes=[0, 2, 3]}\n  %m = max(%x) {axes=[0, 2, 3]}\n", "%s, %m");
    const std::string conv = "stride=[2, 2], padding=[1, 1], groups=2";
    add("conv2d_" + t, "%x: " + t + "[2,4,9,9], %w: " + t + "[6,2,3,3]",
        "  %y = conv(%x, %w) {" + conv + "}\n", "%y");
    add("conv_backward_input_" + t, "%g: " + t + "[2,6,5,5], %w: " + t + "[6,2,3,3]",
        "  %d = conv_backward_input(%g, %w) {input_shape=[2, 4, 9, 9], " + conv + "}\n", "%d");
    add("conv_backward_weight_" + t, "%x: " + t + "[2,4,9,9], %g: " + t + "[2,6,5,5]",
        "  %d = conv_backward_weight(%x, %g) {weight_shape=[6, 2, 3, 3], " + conv + "}\n", "%d");
    const std::string pool = "kernel=[3, 2], stride=[2, 2], padding=[1, 0]";
    add("max_pool2d_" + t, "%x: " + t + "[2,3,9,8], %g: " + t + "[2,3,5,4]",
        "  %y = max_pool2d(%x) {" + pool + "}\n  %d = max_pool2d_backward(%x, %g) {" + pool +
            "}\n  %a = avg_pool2d(%x) {" + pool + "}\n",
        "%y, %d, %a");
  }
  add("casts_half", "%x: f32[6,37], %b: bf16[6,37], %h: f16[6,37]",
      "  %a = cast(%x) {dtype=bf16}\n  %c = cast(%x) {dtype=f16}\n  %e = cast(%b) {dtype=f32}\n"
      "  %f = cast(%h) {dtype=bf16}\n  %g = cast(%b) {dtype=f16}\n  %i = cast(%b) {dtype=i32}\n"
      "  %j = cast(%h) {dtype=f64}\n",
      "%a, %c, %e, %f, %g, %i, %j");
  auto train = [&](const std::string& name, StatusOr<FlowPtr> net, std::vector<InputSpec> inputs,
                   OptimizerSpec opt, DType precision, int steps) {
    WEFT_CHECK(net.ok(), net.ok() ? "" : net.error().to_string());
    StatusOr<Trainer> t = Trainer::compile(*net, inputs, LossSpec::cross_entropy(), opt,
                                           {.seed = 3, .backend = "reference", .precision = precision});
    WEFT_CHECK(t.ok(), t.ok() ? "" : t.error().to_string());
    cases.push_back({name, t->step_graph(), steps});
  };
  const auto mlp = [] {
    return FlowBuilder::from(Linear(784, 256)).through(ReLU()).through(Linear(256, 256))
        .through(ReLU()).through(Linear(256, 10)).build();
  };
  train("mlp784_bf16_adam_step", mlp(), {{"x", f32({128, 784})}}, OptimizerSpec::adam(1e-3),
        DType::bf16, 2);
  train("mlp784_f16_adam_step", mlp(), {{"x", f32({128, 784})}}, OptimizerSpec::adam(1e-3),
        DType::f16, 2);
  train("layer_norm_bf16_adam_step",
        FlowBuilder::from(Linear(64, 64)).through(LayerNorm(64)).through(GELU())
            .through(Linear(64, 64)).through(LayerNorm(64)).through(Linear(64, 5)).build(),
        {{"x", f32({16, 64})}}, OptimizerSpec::adam(1e-2), DType::bf16, 3);
  train("cnn_bf16_sgd_step",
        FlowBuilder::from(Conv2d(1, 8, {.kernel = 3, .padding = 1}))
            .through(BatchNorm2d(8)).through(ReLU()).through(MaxPool2d(2)).through(Flatten())
            .through(Linear(8 * 4 * 4, 3)).build(),
        {{"x", f32({6, 1, 8, 8})}},
        OptimizerSpec::sgd(0.05, /*momentum=*/0.9, /*dampening=*/0, /*weight_decay=*/1e-3),
        DType::bf16, 3);
  // Loops in bf16 (#30 inside loop bodies, passes/autocast.h): a GRU's and an LSTM's
  // forward and gradient loops run their products in bf16, the recurrent weights passed
  // in as bf16 weight copies.
  train("gru_bf16_adam_step", FlowBuilder::from(GRU(16, 32, {.last = true})).through(Linear(32, 5)).build(),
        {{"x", f32({8, 6, 16})}}, OptimizerSpec::adam(1e-2), DType::bf16, 3);
  train("lstm_bf16_adam_step", FlowBuilder::from(LSTM(16, 32, {.last = true})).through(Linear(32, 5)).build(),
        {{"x", f32({8, 6, 16})}}, OptimizerSpec::adam(1e-2), DType::bf16, 3);
  return cases;
}

/// #30's loss scaling where it acts, inside the step's CUDA graph: an f16 MLP whose summed
/// MSE makes the last Linear's weight gradient, summed over the batch in f16, overflow
/// f16's range at GradScaler's first scales (2^16 down), with no inf in any input. Each of
/// its 3 steps must skip the update (parameters and Adam's slots unchanged), halve
/// loss_scale and count the skip as the reference interpreter does
/// (frontend:loss_scale_f16_test pins the same decisions on the CPU backend).
std::vector<GraphCase> loss_scale_cases() {
  StatusOr<FlowPtr> net = FlowBuilder::from(Linear(64, 32)).through(ReLU()).through(Linear(32, 8)).build();
  WEFT_CHECK(net.ok(), net.ok() ? "" : net.error().to_string());
  LossSpec loss = LossSpec::mse();
  loss.reduction = Reduction::Sum;
  StatusOr<Trainer> t = Trainer::compile(*net, {{"x", f32({64, 64})}}, loss, OptimizerSpec::adam(1e-3),
                                         {.seed = 3, .backend = "reference", .precision = DType::f16});
  WEFT_CHECK(t.ok(), t.ok() ? "" : t.error().to_string());
  return {{"mlp_f16_overflow_adam_step", t->step_graph(), 3}};
}

}  // namespace weft::gen_cases
