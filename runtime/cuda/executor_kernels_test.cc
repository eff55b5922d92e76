// The CUDA executor's kernels against the reference interpreter, on hand-built Programs:
// generated kernels from hand-written PTX (so the generated path is tested apart from the
// code generator), contractions with their epilogue, cuDNN convolutions and the pooling
// kernels. Part of executor_test (executor_test.cc has the rest). Without a GPU each test
// skips with unavailable_reason().
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/cuda/executor.h"
#include "runtime/cuda/executor_testing.h"
#include "runtime/reference/interpreter.h"

namespace weft::cuda {
namespace {

using namespace executor_testing;

TEST(CudaExecutor, GeneratedKernelsFromPtx) {
  SKIP_WITHOUT_GPU();
  const int64_t n = 1000;
  const Type t{DType::f32, {n}};
  Program p;
  p.name = "generated";
  p.inputs = {{"x", t, InputKind::data}, {"y", t, InputKind::data}};
  p.kernels = {kernel("k0", 10, 100), kernel("k1", 10, 100)};
  // The copy writes bytes that k0's clear range must zero.
  const Invocation copy = copy_of(input(0, t), arena(8192, t));
  Invocation add = generated(0, {input(0, t), input(1, t)}, arena(0, t));
  add.clear = {arena(8192, Type{DType::u8, {n * 4}})};
  Invocation mul = add;
  mul.kernel = 1;
  mul.operands = {arena(0, t), input(1, t)};
  mul.results = {arena(4096, t)};
  mul.clear = {};
  p.code = {copy, add, mul};
  p.outputs = {arena(0, t), arena(4096, t), arena(8192, t)};
  p.arena_bytes = 12288;
  const std::string ptx =
      ptx_module({ptx_entry("weft_add", "add", n), ptx_entry("weft_mul", "mul", n)});
  std::unique_ptr<Executor> ex = create_or_die(p, ptx, {"weft_add", "weft_mul"});
  EXPECT_EQ(ex->fallbacks(), 0);
  EXPECT_EQ(ex->describe(),
            "0  copy 4000 bytes\n1  generated k0 (4 blocks of 256)\n"
            "2  generated k1 (4 blocks of 256)\n");
  const Tensor x = random_tensor(t, 10), y = random_tensor(t, 11);
  const std::vector<Tensor> out = run_program(*ex, {x, y});
  const Tensor sum = reference_op(Op::Add, {}, {x, y}, t);
  expect_close(out[0], sum, 0);
  expect_close(out[1], reference_op(Op::Mul, {}, {sum, y}, t), 0);
  EXPECT_EQ(out[2], Tensor(t));
}

TEST(CudaExecutor, GeneratedKernelLoopsOverMoreThanOneGrid) {
  SKIP_WITHOUT_GPU();
  const int64_t n = int64_t{65535} * 256 + 1000;  // 65535 blocks, each thread twice at most
  const Type t{DType::f32, {n}};
  Program p;
  p.name = "large";
  p.inputs = {{"x", t, InputKind::data}, {"y", t, InputKind::data}};
  p.kernels = {kernel("k0", 1, n)};
  p.code = {generated(0, {input(0, t), input(1, t)}, arena(0, t))};
  p.outputs = {arena(0, t)};
  p.arena_bytes = round_up(static_cast<int64_t>(t.bytes()));
  std::unique_ptr<Executor> ex =
      create_or_die(p, ptx_module({ptx_entry("add_large", "add", n)}), {"add_large"});
  EXPECT_EQ(ex->describe(), "0  generated k0 (65535 blocks of 256)\n");
  const Tensor x = random_tensor(t, 12), y = random_tensor(t, 13);
  expect_close(run_program(*ex, {x, y})[0], reference_op(Op::Add, {}, {x, y}, t), 0);
}

// matmul(a, bᵀ) + r with the add as the epilogue, C in place (gemm_result 0) or kept as
// a value of its own (gemm_result 1).
TEST(CudaExecutor, ContractionRunsTheEpilogueOnC) {
  SKIP_WITHOUT_GPU();
  const Type a{DType::f32, {64, 48}}, b{DType::f32, {32, 48}}, c{DType::f32, {64, 32}};
  const Attrs attrs{{"transpose_b", Attribute(true)}};
  for (int gemm_result : {0, 1}) {
    SCOPED_TRACE(gemm_result);
    Program p;
    p.name = "contraction";
    p.inputs = {{"a", a, InputKind::data}, {"b", b, InputKind::param}, {"r", c, InputKind::data}};
    p.kernels = {kernel("k0", 64, 32)};
    Invocation inv;
    inv.kind = Invocation::Kind::contraction;
    inv.node.op = Op::Matmul;
    inv.node.attrs = attrs;
    inv.kernel = 0;
    inv.gemm_result = gemm_result;
    inv.operands = {input(0, a), input(1, b), input(2, c)};
    inv.results = {arena(0, c)};
    if (gemm_result == 1) inv.results.push_back(arena(8192, c));
    p.code = {inv};
    p.outputs = inv.results;
    p.arena_bytes = 16384;
    std::unique_ptr<Executor> ex =
        create_or_die(p, ptx_module({ptx_entry("epilogue", "add", 64 * 32)}), {"epilogue"});
    EXPECT_EQ(ex->describe(), "0  cublas sgemm 64x32x48 + generated k0 (8 blocks of 256)\n");
    const std::vector<Tensor> args = {random_tensor(a, 14), random_tensor(b, 15),
                                      random_tensor(c, 16)};
    const std::vector<Tensor> out = run_program(*ex, args);
    const Tensor product = reference_op(Op::Matmul, attrs, {args[0], args[1]}, c);
    expect_close(out[0], reference_op(Op::Add, {}, {product, args[2]}, c));
    if (gemm_result == 1) expect_close(out[1], product);
  }
}

// Convolutions through cuDNN: each op on geometries with strides, padding, dilation and
// groups, f32 and f64, within 2e-5 of the reference (FMA math, no TF32), the same bits on
// a second step (a deterministic algorithm).
TEST(CudaExecutor, ConvolutionsRunOnCudnn) {
  SKIP_WITHOUT_GPU();
  struct Geometry {
    Shape x, w, y;
    IntList stride, padding, dilation;
    int64_t groups;
  };
  const std::vector<Geometry> geometries = {
      {{4, 3, 16, 16}, {8, 3, 3, 3}, {4, 8, 8, 8}, {2, 2}, {1, 1}, {1, 1}, 1},
      {{2, 4, 11, 9}, {6, 2, 3, 2}, {2, 6, 11, 10}, {1, 1}, {2, 1}, {2, 1}, 2},
      {{2, 6, 8, 8}, {6, 1, 3, 3}, {2, 6, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 6},
  };
  for (const Geometry& g : geometries) {
    for (DType dtype : {DType::f32, DType::f64}) {
      SCOPED_TRACE(g.x.to_string() + " by " + g.w.to_string() + " " +
                   std::string(dtype_name(dtype)));
      const Type xt{dtype, g.x}, wt{dtype, g.w}, yt{dtype, g.y};
      const Attrs conv = {{"stride", g.stride}, {"padding", g.padding},
                          {"dilation", g.dilation}, {"groups", g.groups}};
      Attrs data = conv, filter = conv;
      data["input_shape"] = g.x.dims;
      filter["weight_shape"] = g.w.dims;
      struct OpCase {
        Op op;
        const Attrs& attrs;
        std::vector<Type> operands;
        Type result;
        const char* call;
      };
      for (const OpCase& c : {OpCase{Op::Conv, conv, {xt, wt}, yt, "forward"},
                              OpCase{Op::ConvBackwardInput, data, {yt, wt}, xt, "backward_data"},
                              OpCase{Op::ConvBackwardWeight, filter, {xt, yt}, wt,
                                     "backward_filter"}}) {
        std::unique_ptr<Executor> ex = create_or_die(one_op(c.op, c.attrs, c.operands, c.result));
        EXPECT_EQ(ex->fallbacks(), 0);
        const std::string line = "0  cudnn " + std::string(op_name(c.op)) + " " + c.call + " ";
        EXPECT_EQ(ex->describe().rfind(line, 0), 0u) << ex->describe();
        const std::vector<Tensor> args = {random_tensor(c.operands[0], 7),
                                          random_tensor(c.operands[1], 8)};
        const Tensor first = run_program(*ex, args)[0];
        expect_close(first, reference_op(c.op, c.attrs, args, c.result),
                     dtype == DType::f32 ? 2e-5 : 1e-12);
        EXPECT_EQ(run_program(*ex, args)[0], first) << "a second step differs";
      }
    }
  }
}

// Pooling on pool.cu's kernels: every op, f32 and f64, on values with many ties, the
// reference's results to the last bit (the first maximum, the same summation order).
TEST(CudaExecutor, PoolingRunsOnPoolKernels) {
  SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::f32, DType::f64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Type xt{dtype, {2, 3, 9, 8}}, yt{dtype, {2, 3, 5, 4}};
    const Attrs pool = {{"kernel", IntList{3, 2}}, {"stride", IntList{2, 2}},
                        {"padding", IntList{1, 0}}};
    Attrs avg_backward = pool;
    avg_backward["input_shape"] = xt.shape.dims;
    Tensor x = random_tensor(xt, 9);
    for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::round(x.get_double(i) * 3) / 3);
    struct OpCase {
      Op op;
      const Attrs& attrs;
      std::vector<Tensor> args;
      Type result;
    };
    for (const OpCase& c :
         {OpCase{Op::MaxPool2d, pool, {x}, yt}, OpCase{Op::AvgPool2d, pool, {x}, yt},
          OpCase{Op::MaxPool2dBackward, pool, {x, random_tensor(yt, 10)}, xt},
          OpCase{Op::AvgPool2dBackward, avg_backward, {random_tensor(yt, 11)}, xt},
          OpCase{Op::MaxPool2dSelect, pool, {x, random_tensor(xt, 12)}, yt}}) {
      SCOPED_TRACE(op_name(c.op));
      std::vector<Type> types;
      for (const Tensor& t : c.args) types.push_back(t.type());
      std::unique_ptr<Executor> ex = create_or_die(one_op(c.op, c.attrs, types, c.result));
      EXPECT_EQ(ex->fallbacks(), 0);
      EXPECT_EQ(ex->describe().rfind("0  pool " + std::string(op_name(c.op)) + " ", 0), 0u)
          << ex->describe();
      EXPECT_EQ(run_program(*ex, c.args)[0], reference_op(c.op, c.attrs, c.args, c.result));
    }
  }
}

}  // namespace
}  // namespace weft::cuda
