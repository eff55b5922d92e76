// The profiler's cost model (runtime/cpu/cost.h) on a compiled Program.

#include "runtime/cpu/cost.h"

#include <gtest/gtest.h>

#include "codegen/lower.h"
#include "ir/text.h"
#include "passes/pipeline.h"

namespace weft {
namespace {

TEST(InvocationCost, GemmConvAndGeneratedKernels) {
  StatusOr<Graph> g = parse_graph(R"(graph @f(%a: f32[8,16], %b: f32[32,16], %x: f32[2,3,10,10], %w: f32[4,3,3,3]) {
  %m = matmul(%a, %b) {transpose_b=true} : f32[8,32]
  %r = relu(%m) : f32[8,32]
  %e = exp(%r) : f32[8,32]
  %c = conv(%x, %w) : f32[2,4,8,8]
  return %e, %c
}
)", "f.wir");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_TRUE(default_pipeline().run_until(*g, "infer-types").ok());
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(*g);
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  bool saw_gemm = false, saw_conv = false, saw_kernel = false;
  for (const Invocation& inv : l->program.code) {
    const cpu::InvocationCost c = cpu::invocation_cost(l->program, inv);
    double bytes = 0;
    for (const BufferRef& r : inv.operands) bytes += r.type.bytes();
    for (const BufferRef& r : inv.results) bytes += r.type.bytes();
    EXPECT_EQ(c.bytes, bytes);
    if (inv.kind == Invocation::Kind::contraction) {
      // The GEMM with relu and exp as its epilogue (fuse-contraction-epilogue).
      saw_gemm = saw_kernel = true;
      EXPECT_EQ(inv.node.op, Op::Matmul);
      EXPECT_EQ(c.flops, 2.0 * 8 * 32 * 16 + 8 * 32 * 2);
    } else if (inv.kind == Invocation::Kind::generated) {
      saw_kernel = true;
      EXPECT_EQ(c.flops, 8 * 32 * 2);  // relu and exp on 256 elements
    } else if (inv.node.op == Op::Matmul) {
      saw_gemm = true;
      EXPECT_EQ(c.flops, 2.0 * 8 * 32 * 16);
    } else if (inv.node.op == Op::Conv) {
      saw_conv = true;
      EXPECT_EQ(c.flops, 2.0 * (2 * 4 * 8 * 8) * (3 * 3 * 3));
    }
  }
  EXPECT_TRUE(saw_gemm && saw_conv && saw_kernel) << l->program.to_string();
}

// A bf16 step's contractions (passes/autocast.h's output): the same flops as in f32 (the
// GEMM's 2·M·N·K, the convolutions' products, the epilogue), and bytes at two per
// element for every bf16 operand and result.
TEST(InvocationCost, Bf16ContractionsCountTwoBytesPerElement) {
  StatusOr<Graph> g = parse_graph(R"(graph @f(%a: bf16[8,16], %b: bf16[32,16], %x: bf16[2,3,10,10], %w: bf16[4,3,3,3], %gy: bf16[2,4,8,8]) {
  %m = matmul(%a, %b) {transpose_b=true} : bf16[8,32]
  %r = relu(%m) : bf16[8,32]
  %f = cast(%r) {dtype=f32} : f32[8,32]
  %c = conv(%x, %w) : bf16[2,4,8,8]
  %gx = conv_backward_input(%gy, %w) {input_shape=[2,3,10,10]} : bf16[2,3,10,10]
  %gw = conv_backward_weight(%x, %gy) {weight_shape=[4,3,3,3]} : bf16[4,3,3,3]
  return %f, %c, %gx, %gw
}
)", "f.wir");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_TRUE(default_pipeline().run_until(*g, "infer-types").ok());
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(*g);
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  int contractions = 0;
  for (const Invocation& inv : l->program.code) {
    const cpu::InvocationCost c = cpu::invocation_cost(l->program, inv);
    const Op op = inv.node.op;
    if (inv.kind == Invocation::Kind::contraction || op == Op::Matmul) {
      ++contractions;
      // A [8,16] and B [32,16] in, the [8,32] product (bf16, or f32 with the cast fused).
      const double out = static_cast<double>(inv.results[0].type.bytes());
      EXPECT_EQ(c.bytes, (8 * 16 + 32 * 16) * 2 + out) << inv.label;
      EXPECT_GE(c.flops, 2.0 * 8 * 32 * 16) << inv.label;
      EXPECT_LE(c.flops, 2.0 * 8 * 32 * 16 + 8 * 32 * 2) << inv.label;
    } else if (op == Op::Conv || op == Op::ConvBackwardInput || op == Op::ConvBackwardWeight) {
      ++contractions;
      const double products = 2 * 4 * 8 * 8 * (3 * 3 * 3);  // each is the same contraction
      EXPECT_EQ(c.flops, 2.0 * products) << inv.label;
      EXPECT_EQ(c.bytes, 2.0 * (2 * 3 * 10 * 10 + 4 * 3 * 3 * 3 + 2 * 4 * 8 * 8)) << inv.label;
    }
  }
  EXPECT_EQ(contractions, 4) << l->program.to_string();
}

}  // namespace
}  // namespace weft
