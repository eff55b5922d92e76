// The per-backend completeness tests of the op table (ir/kernel_support.h): every
// elementwise op × every dtype its shape rule takes, built as a one-node graph, on
//  - the CPU backend: it runs a generated kernel exactly where the table says the CPU's
//    generated code covers the op (no silent interpreter fallback: an op whose MLIR math
//    is missing fails here), the reference interpreter where the table states a gap, and
//    either way computes what the reference interpreter computes;
//  - the CUDA backend (decided on the host, no GPU needed): every op runs on the device in
//    f32, and where neither the generated code nor a CUDA library kernel covers an op the
//    backend refuses it for a reason the table states; every library kernel covers a gap.
// The way gradcheck_test holds every op to a gradient rule or a stated reason.

#include <cstdio>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "codegen/cpu_backend.h"
#include "codegen/emit_elementwise.h"
#include "codegen/emit_gpu.h"
#include "codegen/kernel_test_util.h"
#include "ir/kernel_support.h"
#include "ir/shape_rules.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/library_plan.h"
#include "runtime/reference/interpreter.h"

namespace weft::codegen {
namespace {

struct OneOp {
  Graph graph{"one_op"};
  DType data = DType::f32;  // The operand dtype the table is asked about.
};

// A one-node graph of elementwise `op` on operands of data dtype `d` (select: a bool
// condition; cast: to f32, or to i32 from f32), or nullopt when the shape rule refuses `d`.
std::optional<OneOp> one_op(Op op, DType d) {
  const OpInfo& info = op_info(op);
  std::vector<Type> types(static_cast<size_t>(info.arity), Type{d, Shape{{5, 7}}});
  if (op == Op::Select) types[0].dtype = DType::boolean;
  Attrs attrs;
  if (op == Op::Cast) attrs["dtype"] = d == DType::f32 ? DType::i32 : DType::f32;
  Node probe;
  probe.op = op;
  probe.attrs = attrs;
  StatusOr<Type> result = infer_node_type(probe, types);
  if (!result.ok()) return std::nullopt;
  OneOp o;
  o.data = d;
  std::vector<ValueId> in;
  for (size_t i = 0; i < types.size(); ++i) {
    in.push_back(o.graph.add_input("x" + std::to_string(i), types[i]));
  }
  o.graph.add_output(o.graph.add_node(op, in, attrs, {}, *result));
  return o;
}

const Node& the_node(const OneOp& o) { return o.graph.nodes()[0]; }

/// one_op for every elementwise op and every dtype its shape rule takes, with "exp on f64"
/// naming each.
std::vector<std::pair<std::string, OneOp>> every_elementwise_op() {
  std::vector<std::pair<std::string, OneOp>> all;
  for (Op op : all_ops()) {
    if (op_info(op).math == MathClass::None) continue;
    for (DType d : kAllDTypes) {
      if (std::optional<OneOp> o = one_op(op, d)) {
        all.emplace_back(std::string(op_name(op)) + " on " + std::string(dtype_name(d)),
                         std::move(*o));
      }
    }
  }
  return all;
}

TEST(KernelCoverage, TheCpuRunsEveryElementwiseOpAsTheTableSays) {
  std::mt19937_64 rng(29);
  int generated = 0, interpreted = 0;
  for (auto& [what, one] : every_elementwise_op()) {
    SCOPED_TRACE(what);
    const std::optional<std::string_view> gap = elementwise_gap(one.graph, the_node(one),
                                                                CodeTarget::cpu);
    EXPECT_EQ(emit_supports(one.graph, the_node(one)), !gap.has_value());
    StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(one.graph);
    ASSERT_TRUE(ex.ok()) << ex.error().to_string();
    EXPECT_EQ((*ex)->fallbacks(), gap ? 1 : 0)
        << (gap ? "the table states a gap (" + std::string(*gap) + ") but a kernel ran"
                : std::string("no generated kernel: give the op its MLIR math "
                              "(codegen/emit_elementwise.cc)"))
        << "\n" << (*ex)->describe();
    (gap ? interpreted : generated)++;
    // Values in [0.5, 2] keep every op's domain (log, rsqrt, integer div) well defined.
    std::vector<Tensor> inputs = testing::random_inputs(one.graph, rng, 0.5, 2.0);
    StatusOr<reference::RunResult> want = reference::run(one.graph, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    StatusOr<reference::RunResult> got = run_on_cpu(one.graph, inputs);
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    std::string why;
    EXPECT_TRUE(all_close(got->outputs[0], want->outputs[0], 1e-5, &why)) << why;
  }
  std::printf("  cpu: %d op x dtype pairs generated, %d on the interpreter (stated gaps)\n",
              generated, interpreted);
}

TEST(KernelCoverage, TheGpuRunsEveryElementwiseOpInF32AndRefusesOnlyStatedGaps) {
  int refused = 0;
  for (auto& [what, one] : every_elementwise_op()) {
    SCOPED_TRACE(what);
    const DType d = one.data;
    const Node& node = the_node(one);
    const std::optional<std::string_view> gap = elementwise_gap(one.graph, node,
                                                                CodeTarget::gpu);
    EXPECT_EQ(gpu_supports(one.graph, node), !gap.has_value());
    if (!gap) continue;
    std::vector<Type> operands;
    for (ValueId v : node.operands) operands.push_back(one.graph.type(v));
    const bool library = cuda::library_kind(node, operands, one.graph.type(node.result())) !=
                         cuda::LibraryKind::host;
    EXPECT_TRUE(library || d != DType::f32)
        << "no CUDA kernel for an f32 op: the generated code lacks it (" << *gap
        << ") and the CUDA library has none (runtime/cuda/library_plan.cc)";
    if (!library) {
      ++refused;
      if (d != DType::f16 && d != DType::bf16) {  // f16/bf16: planned, every op alike.
        std::printf("  cuda refuses %-13s %s; the CUDA library has no kernel for it\n",
                    what.c_str(), std::string(*gap).c_str());
      }
    }
  }
  std::printf("  cuda: %d op x dtype pairs refused, each for its stated gap\n", refused);
}

TEST(KernelCoverage, EveryCudaLibraryElementwiseKernelCoversAGapOfTheGeneratedCode) {
  for (Op op : all_ops()) {
    if (!cuda::library_elementwise_op(op)) continue;
    bool covers = false;
    for (DType d : {DType::f32, DType::f64}) {
      covers = covers || generated_code_gap(op, d, d, CodeTarget::gpu).has_value();
    }
    EXPECT_TRUE(covers) << "the CUDA library's " << op_name(op)
                        << " kernel is never used: the generated code covers the op";
  }
}

}  // namespace
}  // namespace weft::codegen
