// The CUDA column of the composite table (ir/kernel_support.h, library_composite_gap)
// against the CUDA library, decided on the host (no GPU): every composite op in every
// float dtype a training step can hold (f32, f64, f16, bf16). The table states a kernel
// exactly where library_kind sends the node to one, and library_gap's reason for the rest
// is the table's. A composite op added with a CUDA kernel but no column entry, or a column
// entry with no kernel, fails here.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "ir/composite_testing.h"
#include "ir/kernel_support.h"
#include "runtime/cuda/library.h"

namespace weft::cuda {
namespace {

TEST(CompositeTable, TheCudaColumnStatesExactlyTheCompositeKernels) {
  int kernels = 0, gaps = 0;
  for (const weft::testing::CompositeCase& c : weft::testing::every_composite_example()) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(c.graph.ok()) << c.graph.error().to_string();
    const Node& node = c.graph->nodes()[0];
    std::vector<Type> operands;
    for (ValueId v : node.operands) operands.push_back(c.graph->type(v));
    const Type result = c.graph->type(node.result());
    const LibraryKind kind = library_kind(node, operands, result);
    const std::optional<std::string_view> gap = library_composite_gap(c.op, c.dtype, CodeTarget::gpu);
    EXPECT_EQ(kind != LibraryKind::host, !gap.has_value())
        << (kind != LibraryKind::host
                ? std::string("the CUDA library runs it (") + library_kind_name(kind) +
                      ") but the CUDA column of the composite table states no kernel "
                      "(ir/kernel_support.cc)"
                : "the CUDA column of the composite table states a kernel library_kind "
                  "does not send it to");
    if (gap) {
      EXPECT_EQ(library_gap(node, operands, result), gap);
      ++gaps;
    } else {
      ++kernels;
    }
  }
  std::printf("  cuda composites: %d op x dtype pairs on a kernel of their own, %d stated gaps\n",
              kernels, gaps);
  EXPECT_GT(kernels, 0);
}

// A kernel the table states may refuse a node's shapes: the backend says why itself.
TEST(CompositeTable, AShapeTheAttentionKernelRefusesHasTheBackendsOwnReason) {
  Graph g("wide");
  std::vector<ValueId> in;
  for (const char* name : {"q", "k", "v"}) {
    in.push_back(g.add_input(name, Type{DType::f32, Shape{{2, 4, 256}}}));
  }
  StatusOr<ValueId> r = add_typed_node(g, Op::Attention, in, {{"scale", 0.1}}, Location{});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Node& node = g.nodes()[0];
  const std::vector<Type> operands(3, Type{DType::f32, Shape{{2, 4, 256}}});
  EXPECT_FALSE(library_composite_gap(Op::Attention, DType::f32, CodeTarget::gpu));
  EXPECT_EQ(library_kind(node, operands, g.type(*r)), LibraryKind::host);
  EXPECT_EQ(library_gap(node, operands, g.type(*r)),
            "the attention kernel takes head dims up to 128 (plan_attention); the CUDA "
            "lowering decomposes the others");
}

// attention_grad's kernel: the same head-dim limit, said with its own plan's name; and
// the A/B switch WEFT_ATTENTION_GRAD_KERNEL=0 sends every attention_grad to the host (the
// CUDA lowering decomposes it) with the switch named as the reason.
TEST(CompositeTable, AttentionGradRefusedByItsPlanOrTheSwitchHasItsReason) {
  const auto grad = [](int64_t d) {
    auto g = std::make_unique<Graph>("grad");
    const Type qt{DType::f32, Shape{{2, 4, d}}};
    std::vector<ValueId> in;
    for (const char* name : {"q", "k", "v", "y", "dy"}) in.push_back(g->add_input(name, qt));
    StatusOr<ValueId> r = add_typed_node(*g, Op::AttentionGrad, in, {{"scale", 0.1}}, Location{});
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return g;
  };
  const auto kind_and_gap = [](const Graph& g) {
    const Node& node = g.nodes()[0];
    std::vector<Type> operands;
    for (ValueId v : node.operands) operands.push_back(g.type(v));
    const Type result = g.type(node.result());
    return std::make_pair(library_kind(node, operands, result), library_gap(node, operands, result));
  };
  const auto wide = grad(256), narrow = grad(64);
  EXPECT_EQ(kind_and_gap(*wide).first, LibraryKind::host);
  EXPECT_EQ(kind_and_gap(*wide).second,
            "the attention_grad kernel takes head dims up to 128 and q, k, v, y, dy of one "
            "rank (plan_attention_grad says which); the CUDA lowering decomposes the others");
  EXPECT_EQ(kind_and_gap(*narrow).first, LibraryKind::attention_grad);
  EXPECT_EQ(kind_and_gap(*narrow).second, std::nullopt);
  setenv(kAttentionGradSwitch, "0", /*overwrite=*/1);
  EXPECT_EQ(kind_and_gap(*narrow).first, LibraryKind::host);
  EXPECT_EQ(kind_and_gap(*narrow).second,
            "WEFT_ATTENTION_GRAD_KERNEL=0 turns the attention_grad kernel off; the CUDA "
            "lowering decomposes attention_grad");
  unsetenv(kAttentionGradSwitch);
  EXPECT_EQ(kind_and_gap(*narrow).first, LibraryKind::attention_grad);
}

}  // namespace
}  // namespace weft::cuda
