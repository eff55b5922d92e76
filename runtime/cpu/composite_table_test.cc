// The CPU's column of the composite table (ir/kernel_support.h, library_composite_gap)
// against the CPU's kernels: every composite op in every float dtype a training step can
// hold (f32, f64, f16, bf16), bound on the host. The table states a kernel exactly where
// make_composite_kernel binds one, and cpu_library_gap (which reads the table, in f32 for
// the halves it widens) agrees with make_library_kernel. A composite op added to the op
// table with a kernel but no column entry, or a column entry with no kernel, fails here.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "ir/composite_testing.h"
#include "ir/kernel_support.h"
#include "runtime/cpu/kernels_internal.h"
#include "runtime/tensor.h"

namespace weft::cpu {
namespace {

TEST(CompositeTable, TheCpuColumnStatesExactlyTheCompositeKernels) {
  int kernels = 0, gaps = 0;
  for (const weft::testing::CompositeCase& c : weft::testing::every_composite_example()) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(c.graph.ok()) << c.graph.error().to_string();
    const Node& node = c.graph->nodes()[0];
    LibraryCall call{node, {}, c.graph->type(node.result())};
    std::vector<Tensor> inputs;
    std::vector<const void*> pointers;
    for (ValueId v : node.operands) {
      call.operand_types.push_back(c.graph->type(v));
      inputs.emplace_back(c.graph->type(v));
    }
    for (const Tensor& t : inputs) pointers.push_back(t.raw_data());
    Tensor out(call.result_type);

    StatusOr<std::unique_ptr<BoundKernel>> own = make_composite_kernel(call, pointers, out.raw_data());
    ASSERT_TRUE(own.ok()) << own.error().to_string();
    const std::optional<std::string_view> gap = library_composite_gap(c.op, c.dtype, CodeTarget::cpu);
    EXPECT_EQ(*own != nullptr, !gap.has_value())
        << (*own ? "composite.cc has a kernel the CPU column of the composite table does "
                   "not state (ir/kernel_support.cc)"
                 : "the CPU column of the composite table states a kernel composite.cc "
                   "does not have");
    (*own ? kernels : gaps) += 1;

    StatusOr<std::unique_ptr<BoundKernel>> library = make_library_kernel(call, pointers, out.raw_data());
    ASSERT_TRUE(library.ok()) << library.error().to_string();
    EXPECT_EQ(*library != nullptr, !cpu_library_gap(call).has_value())
        << "cpu_library_gap disagrees with make_library_kernel";
  }
  std::printf("  cpu composites: %d op x dtype pairs on a kernel of their own, %d stated gaps\n",
              kernels, gaps);
  EXPECT_GT(kernels, 0);
}

}  // namespace
}  // namespace weft::cpu
