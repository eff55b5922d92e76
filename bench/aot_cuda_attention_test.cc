// What `bench:suite --device=cuda --fuse-attention` runs (#31), checked on the host: the
// CUDA worker's transformer has a fused-attention library (transformer_cuda_fa, compiled
// with weft_library's fuse_attention), whose step runs each encoder layer's attention on
// runtime/cuda's attention kernels — the forward and attention_grad (dq, dk, dv in one
// library invocation) — while the transformer's default library runs none, and every
// other model has no such library (the worker refuses --fuse-attention for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "bench/aot_suite.h"
#include "bench/suite_options.h"
#include "runtime/cuda/library.h"

namespace weft::bench {
namespace {

struct AttentionInvocations {
  int forward = 0, backward = 0;
};

AttentionInvocations attention_invocations(const Program& step) {
  AttentionInvocations n;
  for (const Invocation& inv : step.code) {
    if (inv.node.op != Op::Attention && inv.node.op != Op::AttentionGrad) continue;
    std::vector<Type> types;
    for (const BufferRef& r : inv.operands) types.push_back(r.type);
    EXPECT_EQ(inv.kind, Invocation::Kind::library) << inv.label;
    if (inv.node.op == Op::Attention) {
      EXPECT_EQ(cuda::library_kind(inv.node, types, inv.results[0].type), cuda::LibraryKind::attention)
          << inv.label;
      ++n.forward;
    } else {
      EXPECT_EQ(cuda::library_kind(inv.node, types, inv.results[0].type),
                cuda::LibraryKind::attention_grad)
          << inv.label;
      EXPECT_EQ(inv.results.size(), 3u) << inv.label;  // dq, dk, dv
      ++n.backward;
    }
  }
  return n;
}

TEST(AotCudaAttention, TheTransformersFusedLibraryRunsTheAttentionKernels) {
  const std::vector<std::string>& with = suite_attention_models();
  for (const AotModel& m : aot_models()) {
    SCOPED_TRACE(m.name);
    const bool has = std::find(with.begin(), with.end(), m.name) != with.end();
    ASSERT_EQ(m.fused_attention_table != nullptr, has);
    const AttentionInvocations plain = attention_invocations(m.table().step_program());
    EXPECT_EQ(plain.forward, 0);
    EXPECT_EQ(plain.backward, 0);
    if (!has) continue;
    const aot::ModelTable& fused = m.fused_attention_table();
    EXPECT_NE(fused.options.find("--fuse_attention"), std::string::npos) << fused.options;
    EXPECT_EQ(fused.options.find("--precision"), std::string::npos) << fused.options;  // f32
    EXPECT_EQ(fused.backend, "cuda");
    const Program step = fused.step_program();
    const AttentionInvocations n = attention_invocations(step);
    EXPECT_EQ(n.forward, 4);  // one per encoder layer
    EXPECT_EQ(n.backward, 4);
    EXPECT_TRUE(cuda::check_device_only(step).ok());
    // The same parameters under the same names: one INIT file serves both libraries.
    ASSERT_EQ(fused.values.size(), m.table().values.size());
    for (size_t i = 0; i < fused.values.size(); ++i) {
      EXPECT_EQ(fused.values[i].name, m.table().values[i].name);
      EXPECT_EQ(fused.values[i].type, m.table().values[i].type) << fused.values[i].name;
    }
  }
}

}  // namespace
}  // namespace weft::bench
