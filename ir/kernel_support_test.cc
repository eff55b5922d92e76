// The op table's per-backend facts (ir/kernel_support.h) and the math classes they are read
// from: every elementwise op has a class, its shape rule takes what its class says, and the
// GPU's generated code covers no more than the CPU's.

#include "ir/kernel_support.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/composite_testing.h"
#include "ir/shape_rules.h"

namespace weft {
namespace {

// The operand types of elementwise `op` with data dtype `d` (select: a bool condition).
std::vector<Type> operands_of(Op op, DType d) {
  const Type t{d, Shape{{4}}};
  if (op == Op::Select) return {Type{DType::boolean, Shape{{4}}}, t, t};
  return std::vector<Type>(static_cast<size_t>(op_info(op).arity), t);
}

// The dtypes each class's shape rule must accept.
bool class_accepts(MathClass math, DType d) {
  const bool fl = is_floating(d), integer = is_integer(d), boolean = d == DType::boolean;
  switch (math) {
    case MathClass::Signed: return fl || d == DType::i32 || d == DType::i64;
    case MathClass::Numeric: return fl || integer;
    case MathClass::Algebraic:
    case MathClass::Transcendental: return fl;
    case MathClass::Arithmetic:
    case MathClass::Division:
    case MathClass::Power: return !boolean;
    case MathClass::Logical: return boolean;
    case MathClass::Comparison:
    case MathClass::Select:
    case MathClass::Cast: return true;
    case MathClass::None: return false;
  }
  return false;
}

TEST(KernelSupportTest, EveryElementwiseOpHasAMathClassAndNoOtherOpHasOne) {
  for (Op op : all_ops()) {
    const OpInfo& info = op_info(op);
    EXPECT_EQ(info.category == OpCategory::Elementwise, info.math != MathClass::None)
        << op_name(op) << " is " << category_name(info.category) << " with math class "
        << math_class_name(info.math);
  }
}

TEST(KernelSupportTest, EachShapeRuleTakesTheDTypesItsMathClassSays) {
  for (Op op : all_ops()) {
    const MathClass math = op_info(op).math;
    if (math == MathClass::None) continue;
    for (DType d : kAllDTypes) {
      Node node;
      node.op = op;
      if (op == Op::Cast) node.attrs["dtype"] = DType::f32;
      const bool accepted = infer_node_type(node, operands_of(op, d)).ok();
      EXPECT_EQ(accepted, class_accepts(math, d))
          << op_name(op) << " (" << math_class_name(math) << ") on " << dtype_name(d);
    }
  }
}

TEST(KernelSupportTest, TheGpusGeneratedCodeCoversNoMoreThanTheCpusAndEveryGapSaysWhy) {
  for (Op op : all_ops()) {
    const MathClass math = op_info(op).math;
    if (math == MathClass::None) {
      EXPECT_TRUE(generated_code_gap(op, DType::f32, DType::f32, CodeTarget::cpu).has_value());
      continue;
    }
    for (DType d : kAllDTypes) {
      if (!class_accepts(math, d)) continue;
      const DType result = math == MathClass::Comparison ? DType::boolean : d;
      const auto cpu = generated_code_gap(op, d, result, CodeTarget::cpu);
      const auto gpu = generated_code_gap(op, d, result, CodeTarget::gpu);
      if (cpu) {
        EXPECT_TRUE(gpu.has_value()) << op_name(op) << " " << dtype_name(d);
        EXPECT_GT(cpu->size(), 20u) << op_name(op);
      }
      if (gpu) {
        EXPECT_GT(gpu->size(), 20u) << op_name(op);
      }
    }
  }
}

TEST(KernelSupportTest, TheFactsTheBackendsRelyOn) {
  auto gap = [](Op op, DType d, CodeTarget t) { return generated_code_gap(op, d, d, t); };
  // Every transcendental op, gelu included, lacks f64 code on the GPU alone.
  for (Op op : all_ops()) {
    if (op_info(op).math != MathClass::Transcendental) continue;
    EXPECT_FALSE(gap(op, DType::f64, CodeTarget::cpu)) << op_name(op);
    EXPECT_FALSE(gap(op, DType::f32, CodeTarget::gpu)) << op_name(op);
    ASSERT_TRUE(gap(op, DType::f64, CodeTarget::gpu)) << op_name(op);
    EXPECT_NE(gap(op, DType::f64, CodeTarget::gpu)->find("libdevice"), std::string_view::npos);
  }
  EXPECT_EQ(op_info(Op::Gelu).math, MathClass::Transcendental);
  // sqrt has a native f64 instruction; pow has no NVPTX lowering in any dtype.
  EXPECT_FALSE(gap(Op::Sqrt, DType::f64, CodeTarget::gpu));
  EXPECT_TRUE(gap(Op::Pow, DType::f32, CodeTarget::gpu));
  EXPECT_FALSE(gap(Op::Pow, DType::f32, CodeTarget::cpu));
  // Integer division keeps the interpreter's division-by-zero error.
  EXPECT_TRUE(gap(Op::Div, DType::i32, CodeTarget::cpu));
  EXPECT_FALSE(gap(Op::Add, DType::i32, CodeTarget::cpu));
  // Half precision is generated for both (computed in f32, rounded as the reference
  // rounds); pow stays the GPU's gap in every float dtype.
  for (CodeTarget t : {CodeTarget::cpu, CodeTarget::gpu}) {
    EXPECT_FALSE(gap(Op::Add, DType::bf16, t));
    EXPECT_FALSE(gap(Op::Exp, DType::f16, t));
    EXPECT_FALSE(gap(Op::Gelu, DType::bf16, t));
    EXPECT_FALSE(generated_code_gap(Op::Cast, DType::f32, DType::f16, t));
    EXPECT_FALSE(generated_code_gap(Op::Cast, DType::bf16, DType::i32, t));
    EXPECT_FALSE(generated_code_gap(Op::Cast, DType::f64, DType::bf16, t));
  }
  EXPECT_TRUE(gap(Op::Pow, DType::bf16, CodeTarget::gpu));
  // Reductions: floats only, halves included.
  EXPECT_FALSE(generated_reduction_gap(DType::bf16, CodeTarget::cpu));
  EXPECT_FALSE(generated_reduction_gap(DType::f64, CodeTarget::gpu));
  EXPECT_FALSE(generated_reduction_gap(DType::f16, CodeTarget::gpu));
  EXPECT_EQ(generated_reduction_gap(DType::i32, CodeTarget::cpu),
            "integer and bool reductions run on the library kernels (they accumulate in "
            "64-bit integers)");
}

TEST(KernelSupportTest, EveryCompositeOpHasALineInTheCompositeTableAndAnExample) {
  for (Op op : all_ops()) {
    const bool composite = op_info(op).category == OpCategory::Composite;
    for (CodeTarget t : {CodeTarget::cpu, CodeTarget::gpu}) {
      const auto gap = library_composite_gap(op, DType::f32, t);
      EXPECT_EQ(composite, gap != "not a composite op") << op_name(op);
      for (DType d : kAllDTypes) {
        const auto why = library_composite_gap(op, d, t);
        if (composite && why) {
          EXPECT_GT(why->size(), 20u) << op_name(op);
        }
      }
    }
    if (!composite) {
      EXPECT_FALSE(composite_prefers_rows(op)) << op_name(op);
    }
  }
  // The backends' tests bind these: each composite op needs one in every float dtype.
  for (const testing::CompositeCase& c : testing::every_composite_example()) {
    EXPECT_TRUE(c.graph.ok()) << c.name << ": " << (c.graph.ok() ? "" : c.graph.error().to_string());
  }
}

TEST(KernelSupportTest, TheCompositeTableSaysWhatEachBackendRunsOnItsOwnKernel) {
  const auto runs = [](Op op, DType d, CodeTarget t) { return !library_composite_gap(op, d, t); };
  // The CPU: every composite but attention's two, in f32 and f64 (halves widen to f32).
  for (Op op : {Op::Softmax, Op::LogSoftmax, Op::LayerNorm, Op::CrossEntropy, Op::Mse}) {
    EXPECT_TRUE(runs(op, DType::f32, CodeTarget::cpu) && runs(op, DType::f64, CodeTarget::cpu))
        << op_name(op);
    EXPECT_FALSE(runs(op, DType::bf16, CodeTarget::cpu)) << op_name(op);
  }
  for (Op op : {Op::Attention, Op::AttentionGrad}) {
    EXPECT_FALSE(runs(op, DType::f32, CodeTarget::cpu)) << op_name(op);
  }
  // CUDA: the losses in f32 and f64, attention and attention_grad in f32; the rows are
  // generated.
  EXPECT_TRUE(runs(Op::CrossEntropy, DType::f64, CodeTarget::gpu));
  EXPECT_TRUE(runs(Op::Mse, DType::f32, CodeTarget::gpu));
  EXPECT_FALSE(runs(Op::Mse, DType::f16, CodeTarget::gpu));
  EXPECT_TRUE(runs(Op::Attention, DType::f32, CodeTarget::gpu));
  EXPECT_FALSE(runs(Op::Attention, DType::f64, CodeTarget::gpu));
  EXPECT_TRUE(runs(Op::AttentionGrad, DType::f32, CodeTarget::gpu));
  EXPECT_FALSE(runs(Op::AttentionGrad, DType::f64, CodeTarget::gpu));
  EXPECT_FALSE(runs(Op::AttentionGrad, DType::bf16, CodeTarget::gpu));
  EXPECT_FALSE(runs(Op::Softmax, DType::f32, CodeTarget::gpu));
  // The lowering prefers row kernels for the three row composites, on every backend.
  std::vector<std::string> rows;
  for (Op op : all_ops()) {
    if (composite_prefers_rows(op)) rows.emplace_back(op_name(op));
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"softmax", "log_softmax", "layer_norm"}));
}

}  // namespace
}  // namespace weft
