// The cases that are whole training steps built by the Trainer (its reference backend:
// only the step graph is used): the hand-picked steps (training_cases), the suite's ten
// models (--suite, --suite-bf16), the data-parallel steps and the fused attention steps.
#include <algorithm>
#include <string>
#include <vector>

#include "bench/models.h"
#include "frontend/flow.h"
#include "frontend/losses.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "tests/cuda/gen_cases.h"

namespace weft::gen_cases {

/// Whole training steps built by the Trainer (reference backend: only its step graph is
/// used), run `steps` times by the test.
std::vector<GraphCase> training_cases() {
  std::vector<GraphCase> cases;
  auto add = [&](const std::string& name, StatusOr<FlowPtr> net, std::vector<InputSpec> inputs,
                 LossSpec loss, OptimizerSpec opt, int steps) {
    WEFT_CHECK(net.ok(), net.ok() ? "" : net.error().to_string());
    StatusOr<Trainer> t = Trainer::compile(*net, inputs, loss, opt, {.seed = 3, .backend = "reference"});
    WEFT_CHECK(t.ok(), t.ok() ? "" : t.error().to_string());
    cases.push_back({name, t->step_graph(), steps});
  };
  add("mlp_adam_step",
      FlowBuilder::from(Linear(16, 32)).through(GELU()).through(Linear(32, 32)).through(ReLU())
          .through(Linear(32, 4)).build(),
      {{"x", f32({8, 16})}}, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2), 5);
  // The step_bench model (DESIGN.md's MLP; bench/pytorch/cuda_mlp.py is the peer).
  add("mlp784_adam_step",
      FlowBuilder::from(Linear(784, 256)).through(ReLU()).through(Linear(256, 256))
          .through(ReLU()).through(Linear(256, 10)).build(),
      {{"x", f32({128, 784})}}, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-3), 2);
  // A causal attention block's step with fuse-attention (#31: the forward on the attention
  // kernel, the gradients decomposed) and without (its A/B twin for step_bench).
  for (const bool fuse : {true, false}) {
    auto net = FlowBuilder::from(Identity())
                   .also(MultiheadAttention(64, 2, {.causal = true}))
                   .through(LayerNorm(64))
                   .through(Linear(64, 5))
                   .build();
    WEFT_CHECK(net.ok(), net.ok() ? "" : net.error().to_string());
    StatusOr<Trainer> t = Trainer::compile(
        *net, {{"x", f32({3, 7, 64})}}, LossSpec::mse(), OptimizerSpec::adam(1e-2),
        {.seed = 3, .backend = "reference", .fuse_attention = fuse});
    WEFT_CHECK(t.ok(), t.ok() ? "" : t.error().to_string());
    cases.push_back({fuse ? "attention_block_fused_adam_step" : "attention_block_adam_step",
                     t->step_graph(), 2});
  }
  // Layer norm and softmax rows of 64 forward and backward: warp-per-row kernels.
  add("layer_norm_adam_step",
      FlowBuilder::from(Linear(64, 64)).through(LayerNorm(64)).through(GELU())
          .through(Linear(64, 64)).through(LayerNorm(64)).through(Linear(64, 5)).build(),
      {{"x", f32({16, 64})}}, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2), 3);
  add("cnn_sgd_step",
      FlowBuilder::from(Conv2d(1, 4, {.kernel = 3, .padding = 1}))
          .through(BatchNorm2d(4)).through(ReLU()).through(MaxPool2d(2)).through(Flatten())
          .through(Linear(4 * 4 * 4, 3)).build(),
      {{"x", f32({6, 1, 8, 8})}}, LossSpec::cross_entropy(),
      OptimizerSpec::sgd(0.05, /*momentum=*/0.9, /*dampening=*/0, /*weight_decay=*/1e-3), 3);
  // Loops trained: a two-layer LSTM (one loop per layer and its reverse loop), a GRU, and
  // per-sample halting (a carried mask and select) with until_cond.
  add("lstm_adam_step",
      FlowBuilder::from(LSTM(5, 8, {.layers = 2, .last = true})).through(Linear(8, 3)).build(),
      {{"x", f32({4, 6, 5})}}, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2), 3);
  // #31: the GRU's cell (three gates, r gating the hidden part of n) as gru_seq runs it.
  add("gru_adam_step",
      FlowBuilder::from(GRU(5, 8, {.last = true})).through(Linear(8, 3)).build(),
      {{"x", f32({4, 6, 5})}}, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2), 3);
  add("until_adam_step",
      FlowBuilder::from(Linear(6, 8)).loop_body(Linear(8, 8)).until_cond(Linear(8, 1), 4)
          .through(Linear(8, 3)).build(),
      {{"x", f32({5, 6})}}, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2), 3);
  // Parameter groups (the encoder's own lr input and weight decay) and gradient
  // accumulation (the update on every 2nd step, select-guarded assigns), 4 steps.
  add("groups_accumulate_step",
      FlowBuilder::from(FlowBuilder::from(Linear(6, 8)).through(Tanh()).label("encoder").build().value())
          .through(Linear(8, 3)).build(),
      {{"x", f32({5, 6})}}, LossSpec::cross_entropy(),
      OptimizerSpec::adamw(1e-2).with_group("encoder", {.lr = 1e-3, .weight_decay = 0.0})
          .with_accumulation(2),
      4);
  return cases;
}

/// The benchmark suite's ten models (bench/models.h) at the paper preset: their training
/// steps (Adam) at `precision` (TrainOptions::precision: f32 for `gen_cases --suite`,
/// bf16 under autocast for `--suite-bf16`), for step_bench's suite binaries, timed only.
std::vector<GraphCase> suite_cases(DType precision) {
  std::vector<GraphCase> cases;
  for (const std::string& name : bench::bench_model_names()) {
    StatusOr<bench::BenchModel> m = bench::make_bench_model(name, bench::Preset::paper);
    WEFT_CHECK(m.ok(), m.ok() ? "" : m.error().to_string());
    StatusOr<Trainer> t = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr),
                                           {.seed = 0, .backend = "reference", .precision = precision});
    WEFT_CHECK(t.ok(), t.ok() ? "" : t.error().to_string());
    Graph step = t->step_graph();
    const bool loops = std::any_of(step.nodes().begin(), step.nodes().end(),
                                   [](const Node& n) { return n.op == Op::Scan; });
    cases.push_back({name, step, 2});
    // The loop models once more with their loops unrolled: looped against unrolled on
    // the GPU (step_bench reads the same INIT file for both).
    if (loops) cases.push_back({name + "@unrolled", std::move(step), 2, /*unroll=*/true});
  }
  return cases;
}

/// [Distributed] on the GPU, after every other case (so theirs keep their inputs): the
/// MLP step with its gradients' all_reduce ops (a Trainer given single_process(): the
/// ops, each changing nothing on one rank), and the same step accumulating gradients over
/// 2 micro-batches (its gradients' all_reduce predicated on the window's last). cases_test
/// checks them against the reference; nccl_step_test runs them through NCCL with one rank
/// against the same step without (the accumulating one with its two captured graphs).
std::vector<GraphCase> data_parallel_cases() {
  StatusOr<FlowPtr> net = FlowBuilder::from(Linear(784, 256)).through(ReLU()).through(Linear(256, 256))
                              .through(ReLU()).through(Linear(256, 10)).build();
  WEFT_CHECK(net.ok(), net.ok() ? "" : net.error().to_string());
  std::vector<GraphCase> cases;
  for (const int64_t accumulate : {1, 2}) {
    StatusOr<Trainer> t = Trainer::compile(*net, {{"x", f32({128, 784})}}, LossSpec::cross_entropy(),
                                           OptimizerSpec::adam(1e-3).with_accumulation(accumulate),
                                           {.seed = 3, .backend = "reference",
                                            .bind = {.communicator = collective::single_process()}});
    WEFT_CHECK(t.ok(), t.ok() ? "" : t.error().to_string());
    cases.push_back({accumulate == 1 ? "mlp784_adam_all_reduce_step" : "mlp784_adam_accumulate2_all_reduce_step",
                     t->step_graph(), accumulate == 1 ? 3 : 4});
  }
  return cases;
}

/// #31: an attention block's training step with fuse-attention (attention_grad on
/// FlashAttention-2's backward kernel) and its two twins, the same step graph lowered with
/// the kernel switched off (WEFT_ATTENTION_GRAD_KERNEL=0: decomposed) and the step without
/// fuse-attention; causal, and padded (a key padding mask, not causal, so that no query
/// loses every key to the mask). cases_test's FusedAttentionStepsMatchTheirTwins runs
/// each three steps against its twins; appended last so every earlier case keeps its
/// index and its seeded inputs.
std::vector<GraphCase> attention_step_cases() {
  std::vector<GraphCase> cases;
  for (const bool padded : {false, true}) {
    const std::string name = padded ? "attention_fa2_padded_step" : "attention_fa2_causal_step";
    for (const bool fuse : {true, false}) {
      FlowBuilder b = padded ? FlowBuilder::from(Identity())
                                   .input({"mask"})
                                   .also(MultiheadAttention(32, 2, {.key_padding_mask = true}))
                                   .uses({"mask"})
                             : FlowBuilder::from(Identity())
                                   .also(MultiheadAttention(32, 2, {.causal = true}));
      auto net = b.through(LayerNorm(32)).through(Linear(32, 5)).build();
      WEFT_CHECK(net.ok(), net.ok() ? "" : net.error().to_string());
      std::vector<InputSpec> inputs = {{"x", f32({3, 12, 32})}};
      if (padded) inputs.push_back({"mask", Type{DType::boolean, {3, 12}}});
      StatusOr<Trainer> t = Trainer::compile(
          *net, inputs, LossSpec::mse(), OptimizerSpec::adam(1e-2),
          {.seed = 5, .backend = "reference", .fuse_attention = fuse});
      WEFT_CHECK(t.ok(), t.ok() ? "" : t.error().to_string());
      int grads = 0;
      for (const Node& n : t->step_graph().nodes()) grads += n.op == Op::AttentionGrad;
      WEFT_CHECK(grads == (fuse ? 1 : 0), name + ": fuse-attention did not find the block");
      if (fuse) {
        cases.push_back({name, t->step_graph(), 3});
        cases.push_back({name + "_kernel_off", t->step_graph(), 3, false,
                         /*decompose_attention_grad=*/true});
      } else {
        cases.push_back({name + "_unfused", t->step_graph(), 3});
      }
    }
  }
  return cases;
}

}  // namespace weft::gen_cases
