// autocast in a training step, lowered for the CPU (issue #30): what a bf16 step stores
// that an f32 step would not. Counts on the lowered Program, no timings.
//  - An attention's probabilities: autocast runs softmax in f32 and casts its result to
//    bf16 for the P·V matmul; softmax's gradient reads that bf16 copy widened
//    (autodiff/rules_composite.cc, kept_probabilities), so the step stores the
//    probabilities once, in bf16, instead of in bf16 and in f32.
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"

namespace weft {
namespace {

/// A residual attention block (2 heads of 8 over 12 tokens: probabilities [2, 2, 12, 12])
/// trained with MSE in `precision`.
StatusOr<Trainer> attention_block(DType precision) {
  auto net = FlowBuilder::from(Identity()).also(MultiheadAttention(16, 2)).through(LayerNorm(16)).build();
  if (!net.ok()) return net.error();
  return Trainer::compile(*net, {{"x", Type{DType::f32, {2, 12, 16}}}}, LossSpec::mse(),
                          OptimizerSpec::sgd(0.1), {.backend = "reference", .precision = precision});
}

bool is_probabilities(const Type& t) {
  return t.shape.rank() == 4 && t.shape.dims[2] == 12 && t.shape.dims[3] == 12;
}

/// The probabilities-shaped values of `dtype` that the lowered step's generated kernels
/// write (the softmax and its gradient; the GEMMs' scores and dP are not counted).
int written(const Program& p, DType dtype) {
  int n = 0;
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::generated) continue;
    for (const BufferRef& r : inv.results) n += is_probabilities(r.type) && r.type.dtype == dtype;
  }
  return n;
}

TEST(AutocastStepTest, SoftmaxGradientReadsTheBf16Probabilities) {
  StatusOr<Trainer> low = attention_block(DType::bf16);
  ASSERT_TRUE(low.ok()) << low.error().to_string();
  const Graph& g = low->step_graph();
  int softmaxes = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::Softmax) continue;
    ++softmaxes;
    EXPECT_EQ(g.type(n.result()).dtype, DType::f32);
    int uses = 0;
    for (const Node& user : g.nodes()) {
      for (ValueId v : user.operands) {
        if (v != n.result()) continue;
        ++uses;
        EXPECT_EQ(user.op, Op::Cast) << print_graph(g);
        if (user.op == Op::Cast) {
          EXPECT_EQ(user.dtype_attr("dtype"), DType::bf16);
        }
      }
    }
    EXPECT_EQ(uses, 1) << "the f32 probabilities: only their bf16 copy reads them\n" << print_graph(g);
  }
  EXPECT_EQ(softmaxes, 1);
}

TEST(AutocastStepTest, TheLoweredBf16StepStoresTheProbabilitiesOnceInBf16) {
  StatusOr<Trainer> low = attention_block(DType::bf16);
  ASSERT_TRUE(low.ok()) << low.error().to_string();
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(low->step_graph());
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  EXPECT_EQ(written(l->program, DType::f32), 0) << l->program.to_string();
  EXPECT_EQ(written(l->program, DType::bf16), 2) << l->program.to_string();  // P, dS

  // The CUDA lowering (compiled here without a GPU) lowers the same step graph.
  StatusOr<codegen::Lowering> gpu = codegen::lower_to_program(low->step_graph(), codegen::cuda_lower_options());
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  EXPECT_EQ(written(gpu->program, DType::f32), 0) << gpu->program.to_string();

  // The f32 step stores them once, in f32.
  StatusOr<Trainer> f32 = attention_block(DType::f32);
  ASSERT_TRUE(f32.ok()) << f32.error().to_string();
  StatusOr<codegen::Lowering> lf = codegen::lower_to_program(f32->step_graph());
  ASSERT_TRUE(lf.ok()) << lf.error().to_string();
  EXPECT_EQ(written(lf->program, DType::bf16), 0);
  EXPECT_EQ(written(lf->program, DType::f32), 2) << lf->program.to_string();  // P, dS
}

}  // namespace
}  // namespace weft
