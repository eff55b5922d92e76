#pragma once
// What runtime/cuda/executor_test.cc and executor_kernels_test.cc share: hand-built
// Programs (buffers, invocations, one-op programs, PTX kernels), running them, and the
// reference interpreter's results to compare with.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/executor.h"
#include "runtime/cuda/test_util.h"
#include "runtime/reference/interpreter.h"

namespace weft::cuda::executor_testing {

#define SKIP_WITHOUT_GPU() \
  if (!available()) GTEST_SKIP() << unavailable_reason()

inline BufferRef arena(int64_t offset, Type type) { return {Space::arena, -1, offset, std::move(type)}; }
inline BufferRef input(int32_t index, Type type) { return {Space::input, index, 0, std::move(type)}; }

// A copy invocation (a reshape's bytes) from `from` to `to`.
inline Invocation copy_of(BufferRef from, BufferRef to) {
  Invocation inv;
  inv.kind = Invocation::Kind::copy;
  inv.node.op = Op::Reshape;
  inv.operands = {std::move(from)};
  inv.results = {std::move(to)};
  return inv;
}

// Generated kernel `kernel` on `operands` into `result`.
inline Invocation generated(int kernel, std::vector<BufferRef> operands, BufferRef result) {
  Invocation inv;
  inv.kind = Invocation::Kind::generated;
  inv.node.op = Op::Fused;
  inv.kernel = kernel;
  inv.operands = std::move(operands);
  inv.results = {std::move(result)};
  return inv;
}

using test_util::random_tensor;

inline int64_t round_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// A Program running one library op on its inputs in0, in1, ... into arena+0, which is
// its one output.
inline Program one_op(Op op, Attrs attrs, const std::vector<Type>& operands, const Type& result) {
  Program p;
  p.name = "one_op";
  Invocation inv;
  inv.kind = Invocation::Kind::library;
  inv.node.op = op;
  inv.node.attrs = std::move(attrs);
  for (size_t i = 0; i < operands.size(); ++i) {
    p.inputs.push_back({"in" + std::to_string(i), operands[i], InputKind::data});
    inv.operands.push_back(input(static_cast<int32_t>(i), operands[i]));
  }
  inv.results = {arena(0, result)};
  inv.label = "r";
  p.code = {inv};
  p.outputs = {arena(0, result)};
  p.arena_bytes = round_up(static_cast<int64_t>(result.bytes()));
  return p;
}

// The same op on the reference interpreter.
inline Tensor reference_op(Op op, const Attrs& attrs, const std::vector<Tensor>& args, const Type& result) {
  Node node;
  node.op = op;
  node.attrs = attrs;
  return test_util::reference_node(node, args, result);
}

// The hand-built Programs use softmax as their op without a CUDA kernel: the host
// fallback is allowed here (library.h's check is tested in library_plan_test).
inline const ExecutorOptions kDebug{.allow_host_fallback = true};

inline std::unique_ptr<Executor> create_or_die(Program p, std::string ptx = "",
                                        std::vector<std::string> symbols = {}) {
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(std::move(p), std::move(ptx),
                                                            std::move(symbols), kDebug);
  WEFT_CHECK(ex.ok(), ex.status().to_string());
  return std::move(*ex);
}

// Runs `p` on its inputs `args` (in order) and returns its outputs.
inline std::vector<Tensor> run_program(Executor& ex, const std::vector<Tensor>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    Status s = ex.set_input(static_cast<int>(i), args[i]);
    WEFT_CHECK(s.ok(), s.to_string());
  }
  Status s = ex.run();
  WEFT_CHECK(s.ok(), s.to_string());
  std::vector<Tensor> out;
  for (int i = 0; i < ex.num_outputs(); ++i) out.push_back(ex.output(i));
  return out;
}

// A PTX entry `name`(p0, p1, p2) computing p2[i] = p0[i] OP p1[i] (f32) for i < n in a
// grid-stride loop: the generated-kernel ABI.
inline std::string ptx_entry(const std::string& name, const std::string& op, int64_t n) {
  const std::string count = std::to_string(n);
  return ".visible .entry " + name +
         "(.param .u64 p0, .param .u64 p1, .param .u64 p2)\n"
         "{\n"
         "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<8>;\n"
         "  ld.param.u64 %rd1, [p0];\n  ld.param.u64 %rd2, [p1];\n  ld.param.u64 %rd3, [p2];\n"
         "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
         "  cvta.to.global.u64 %rd3, %rd3;\n"
         "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
         "  mad.lo.s32 %r4, %r1, %r2, %r3;\n"
         "  mov.u32 %r5, %nctaid.x;\n  mul.lo.s32 %r6, %r5, %r2;\n"
         "  setp.ge.s32 %p1, %r4, " + count + ";\n"
         "  @%p1 bra $DONE;\n"
         "$LOOP:\n"
         "  mul.wide.s32 %rd4, %r4, 4;\n"
         "  add.s64 %rd5, %rd1, %rd4;\n  add.s64 %rd6, %rd2, %rd4;\n  add.s64 %rd7, %rd3, %rd4;\n"
         "  ld.global.f32 %f1, [%rd5];\n  ld.global.f32 %f2, [%rd6];\n"
         "  " + op + ".rn.f32 %f3, %f1, %f2;\n"
         "  st.global.f32 [%rd7], %f3;\n"
         "  add.s32 %r4, %r4, %r6;\n"
         "  setp.lt.s32 %p1, %r4, " + count + ";\n"
         "  @%p1 bra $LOOP;\n"
         "$DONE:\n"
         "  ret;\n"
         "}\n";
}

inline std::string ptx_module(const std::vector<std::string>& entries) {
  std::string out = ".version 7.8\n.target sm_80\n.address_size 64\n\n";
  for (const std::string& e : entries) out += e + "\n";
  return out;
}

inline GeneratedKernel kernel(const std::string& name, int64_t rows, int64_t row_length) {
  GeneratedKernel k;
  k.name = name;
  k.rows = rows;
  k.row_length = row_length;
  return k;
}

inline void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-4) {
  std::string why;
  EXPECT_TRUE(all_close(got, want, tol, &why)) << why;
}

}  // namespace weft::cuda::executor_testing
