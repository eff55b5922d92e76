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

}  // namespace
}  // namespace weft
