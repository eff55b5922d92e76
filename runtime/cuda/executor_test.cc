// The CUDA executor against the reference interpreter, on hand-built Programs: cuBLAS
// matmuls (every transpose combination, batched and broadcast), a host fallback, copies,
// all_reduce, updates, generated kernels from hand-written PTX (so the generated path is
// tested apart from the code generator), contractions, and the pinned errors. Without a
// GPU every device test skips with unavailable_reason(), and the "no CUDA device" error
// is pinned instead.
#include "runtime/cuda/executor.h"
#include "runtime/cuda/test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/backend.h"
#include "training/data/loader.h"
#include "runtime/reference/interpreter.h"

namespace weft::cuda {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!available()) GTEST_SKIP() << unavailable_reason()

BufferRef arena(int64_t offset, Type type) { return {Space::arena, -1, offset, std::move(type)}; }
BufferRef input(int32_t index, Type type) { return {Space::input, index, 0, std::move(type)}; }

// A copy invocation (a reshape's bytes) from `from` to `to`.
Invocation copy_of(BufferRef from, BufferRef to) {
  Invocation inv;
  inv.kind = Invocation::Kind::copy;
  inv.node.op = Op::Reshape;
  inv.operands = {std::move(from)};
  inv.results = {std::move(to)};
  return inv;
}

// Generated kernel `kernel` on `operands` into `result`.
Invocation generated(int kernel, std::vector<BufferRef> operands, BufferRef result) {
  Invocation inv;
  inv.kind = Invocation::Kind::generated;
  inv.node.op = Op::Fused;
  inv.kernel = kernel;
  inv.operands = std::move(operands);
  inv.results = {std::move(result)};
  return inv;
}

using test_util::random_tensor;

int64_t round_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// A Program running one library op on its inputs in0, in1, ... into arena+0, which is
// its one output.
Program one_op(Op op, Attrs attrs, const std::vector<Type>& operands, const Type& result) {
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
Tensor reference_op(Op op, const Attrs& attrs, const std::vector<Tensor>& args, const Type& result) {
  Node node;
  node.op = op;
  node.attrs = attrs;
  return test_util::reference_node(node, args, result);
}

// The hand-built Programs use softmax as their op without a CUDA kernel: the host
// fallback is allowed here (library.h's check is tested in library_plan_test).
const ExecutorOptions kDebug{.allow_host_fallback = true};

std::unique_ptr<Executor> create_or_die(Program p, std::string ptx = "",
                                        std::vector<std::string> symbols = {}) {
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(std::move(p), std::move(ptx),
                                                            std::move(symbols), kDebug);
  WEFT_CHECK(ex.ok(), ex.status().to_string());
  return std::move(*ex);
}

// Runs `p` on its inputs `args` (in order) and returns its outputs.
std::vector<Tensor> run_program(Executor& ex, const std::vector<Tensor>& args) {
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
std::string ptx_entry(const std::string& name, const std::string& op, int64_t n) {
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

std::string ptx_module(const std::vector<std::string>& entries) {
  std::string out = ".version 7.8\n.target sm_80\n.address_size 64\n\n";
  for (const std::string& e : entries) out += e + "\n";
  return out;
}

GeneratedKernel kernel(const std::string& name, int64_t rows, int64_t row_length) {
  GeneratedKernel k;
  k.name = name;
  k.rows = rows;
  k.row_length = row_length;
  return k;
}

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-4) {
  std::string why;
  EXPECT_TRUE(all_close(got, want, tol, &why)) << why;
}

TEST(CudaExecutor, WithoutAGpuCreateSaysWhy) {
  if (available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(unavailable_reason().empty());
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(Program{}, "", {});
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.error().message, "no CUDA device: " + unavailable_reason());
  EXPECT_EQ(ex.error().message.rfind("no CUDA device: cudaGetDeviceCount: ", 0), 0u)
      << ex.error().message;
}

struct Transposes {
  bool a, b;
};

void PrintTo(const Transposes& t, std::ostream* os) {
  *os << "transpose_a=" << t.a << " transpose_b=" << t.b;
}

class CudaMatmulTest : public ::testing::TestWithParam<Transposes> {};

TEST_P(CudaMatmulTest, MatchesReference) {
  SKIP_WITHOUT_GPU();
  const auto [ta, tb] = GetParam();
  const Type a{DType::f32, ta ? Shape{48, 64} : Shape{64, 48}};
  const Type b{DType::f32, tb ? Shape{32, 48} : Shape{48, 32}};
  const Type c{DType::f32, {64, 32}};
  Attrs attrs{{"transpose_a", Attribute(ta)}, {"transpose_b", Attribute(tb)}};
  std::unique_ptr<Executor> ex = create_or_die(one_op(Op::Matmul, attrs, {a, b}, c));
  EXPECT_EQ(ex->fallbacks(), 0);
  EXPECT_EQ(ex->describe(), "0  cublas sgemm 64x32x48\n");
  const std::vector<Tensor> args = {random_tensor(a, 1), random_tensor(b, 2)};
  expect_close(run_program(*ex, args)[0], reference_op(Op::Matmul, attrs, args, c));
}

INSTANTIATE_TEST_SUITE_P(Transposes, CudaMatmulTest,
                         ::testing::Values(Transposes{false, false}, Transposes{true, false},
                                           Transposes{false, true}, Transposes{true, true}));

TEST(CudaExecutor, BatchedMatmulMatchesReference) {
  SKIP_WITHOUT_GPU();
  struct Case {
    DType dtype;
    Shape a, b, c;
    bool ta, tb;
    std::string describe;
  };
  const std::vector<Case> cases = {
      {DType::f32, {4, 16, 24}, {4, 24, 8}, {4, 16, 8}, false, false,
       "cublas sgemm_strided_batched 16x8x24 batch 4"},
      {DType::f32, {4, 24, 16}, {4, 8, 24}, {4, 16, 8}, true, true,
       "cublas sgemm_strided_batched 16x8x24 batch 4"},
      {DType::f32, {2, 3, 16, 24}, {24, 8}, {2, 3, 16, 8}, false, false,
       "cublas sgemm 16x8x24 batch 6"},
      {DType::f64, {16, 24}, {4, 24, 8}, {4, 16, 8}, false, false,
       "cublas dgemm_strided_batched 16x8x24 batch 4"},
      {DType::f32, {2, 1, 8, 12}, {3, 12, 5}, {2, 3, 8, 5}, false, false,
       "cublas sgemm 8x5x12 batch 6 in 6 calls"},
      {DType::f64, {48}, {48, 32}, {32}, false, false, "cublas dgemm 1x32x48"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.describe);
    const Type a{k.dtype, k.a}, b{k.dtype, k.b}, c{k.dtype, k.c};
    Attrs attrs{{"transpose_a", Attribute(k.ta)}, {"transpose_b", Attribute(k.tb)}};
    std::unique_ptr<Executor> ex = create_or_die(one_op(Op::Matmul, attrs, {a, b}, c));
    EXPECT_EQ(ex->describe(), "0  " + k.describe + "\n");
    const std::vector<Tensor> args = {random_tensor(a, 3), random_tensor(b, 4)};
    expect_close(run_program(*ex, args)[0], reference_op(Op::Matmul, attrs, args, c));
  }
}

TEST(CudaExecutor, OpWithoutACudaKernelFallsBackToTheReference) {
  SKIP_WITHOUT_GPU();
  const Type x{DType::f32, {8, 10}};
  Attrs attrs{{"axis", Attribute(int64_t{-1})}};
  std::unique_ptr<Executor> ex = create_or_die(one_op(Op::Softmax, attrs, {x}, x));
  EXPECT_EQ(ex->fallbacks(), 1);
  EXPECT_EQ(ex->describe(), "0  reference softmax (no CUDA kernel)\n");
  const std::vector<Tensor> args = {random_tensor(x, 5)};
  expect_close(run_program(*ex, args)[0], reference_op(Op::Softmax, attrs, args, x), 1e-6);
  // An integer matmul has no cuBLAS call either.
  const Type i{DType::i32, {3, 3}};
  ex = create_or_die(one_op(Op::Matmul, {}, {i, i}, i));
  EXPECT_EQ(ex->fallbacks(), 1);
  const std::vector<Tensor> ints = {Tensor::from_vector<int32_t>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                                    Tensor::from_vector<int32_t>({3, 3}, {9, 8, 7, 6, 5, 4, 3, 2, 1})};
  EXPECT_EQ(run_program(*ex, ints)[0], reference_op(Op::Matmul, {}, ints, i));
}

TEST(CudaExecutor, OpsWithoutOperandsAreConstantsComputedOnce) {
  SKIP_WITHOUT_GPU();
  const Type t{DType::f32, {3, 5}};
  const Attrs full = {{"shape", std::vector<int64_t>{3, 5}}, {"value", 2.5}, {"dtype", DType::f32}};
  std::unique_ptr<Executor> ex = create_or_die(one_op(Op::Full, full, {}, t));
  EXPECT_EQ(ex->fallbacks(), 0);
  EXPECT_EQ(ex->describe(), "0  constant full 60 bytes (computed once)\n");
  for (int step = 0; step < 2; ++step) {
    EXPECT_EQ(run_program(*ex, {})[0], reference_op(Op::Full, full, {}, t));
  }
  const Type i{DType::i64, {4, 3}};
  const Attrs iota = {{"shape", std::vector<int64_t>{4, 3}}, {"axis", int64_t{1}}, {"dtype", DType::i64}};
  ex = create_or_die(one_op(Op::Iota, iota, {}, i));
  EXPECT_EQ(run_program(*ex, {})[0], reference_op(Op::Iota, iota, {}, i));
}

TEST(CudaExecutor, CopyAndOneProcessAllReduce) {
  SKIP_WITHOUT_GPU();
  const Type x{DType::f32, {4, 6}}, flat{DType::f32, {24}};
  Program p;
  p.name = "copies";
  p.inputs = {{"x", x, InputKind::data}};
  const Invocation copy = copy_of(input(0, x), arena(0, flat));
  Invocation reduce;
  reduce.kind = Invocation::Kind::library;
  reduce.node.op = Op::AllReduce;
  reduce.operands = {arena(0, flat)};
  reduce.results = {arena(256, flat)};
  Invocation in_place = reduce;
  in_place.operands = {arena(256, flat)};
  p.code = {copy, reduce, in_place};
  p.outputs = {arena(0, flat), arena(256, flat)};
  p.arena_bytes = 512;
  std::unique_ptr<Executor> ex = create_or_die(p);
  EXPECT_EQ(ex->fallbacks(), 0);
  EXPECT_EQ(ex->describe(),
            "0  copy 96 bytes\n"
            "1  all_reduce (one process): copy 96 bytes\n"
            "2  all_reduce (one process): copy 96 bytes (in place)\n");
  const Tensor value = random_tensor(x, 6);
  const std::vector<Tensor> out = run_program(*ex, {value});
  Tensor want(flat);
  std::memcpy(want.raw_data(), value.raw_data(), value.bytes());
  EXPECT_EQ(out[0], want);
  EXPECT_EQ(out[1], want);
}

// The data Loader's buffers pinned through the cuda backend (cudaHostRegister): CUDA sees
// them as page-locked host memory, set_input's asynchronous copies from them land before
// run() returns, and they are unpinned with the loader.
TEST(CudaExecutor, PinnedLoaderBuffersFeedTheSteps) {
  SKIP_WITHOUT_GPU();
  StatusOr<const Backend*> cuda = find_backend("cuda");
  ASSERT_TRUE(cuda.ok()) << cuda.error().to_string();
  ASSERT_NE((*cuda)->pin_host_memory, nullptr);
  const Type x{DType::f32, {4, 6}}, flat{DType::f32, {24}};
  Program p;
  p.name = "copy";
  p.inputs = {{"x", x, InputKind::data}};
  p.code = {copy_of(input(0, x), arena(0, flat))};
  p.outputs = {arena(0, flat)};
  p.arena_bytes = 256;
  std::unique_ptr<Executor> ex = create_or_die(p);
  {
    Loader loader(/*first=*/0, /*end=*/5, {x},
                  [&](int64_t n, std::vector<Tensor>& into) -> Status {
                    const Tensor v = random_tensor(x, static_cast<unsigned>(100 + n));
                    std::memcpy(into[0].raw_data(), v.raw_data(), v.bytes());
                    return Status();
                  },
                  HostPinning{(*cuda)->pin_host_memory, (*cuda)->unpin_host_memory});
    ASSERT_TRUE(loader.pinned()) << (loader.pin_error() ? loader.pin_error()->to_string() : "");
    for (int64_t n = 0; n < 5; ++n) {
      StatusOr<const std::vector<Tensor>*> batch = loader.next();
      ASSERT_TRUE(batch.ok()) << batch.error().to_string();
      const Tensor& value = (*batch)->at(0);
      cudaPointerAttributes attributes{};
      ASSERT_EQ(cudaPointerGetAttributes(&attributes, value.raw_data()), cudaSuccess);
      EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "batch " << n << " is not page-locked";
      const std::vector<Tensor> out = run_program(*ex, {value});
      Tensor want(flat);
      std::memcpy(want.raw_data(), value.raw_data(), value.bytes());
      EXPECT_EQ(out[0], want) << "batch " << n;
    }
  }
}

TEST(CudaExecutor, UpdatesLandAfterTheStep) {
  SKIP_WITHOUT_GPU();
  const Type t{DType::f32, {8}};
  Program p;
  p.name = "updates";
  p.inputs = {{"a", t, InputKind::param}, {"b", t, InputKind::param}, {"c", t, InputKind::state}};
  const Invocation copy = copy_of(input(0, t), arena(0, t));  // reads a's old value
  p.code = {copy};
  // a and b swap (each reads the other's old value); c takes the copy of a.
  p.updates = {{0, input(1, t)}, {1, input(0, t)}, {2, arena(0, t)}};
  p.outputs = {arena(0, t)};
  p.arena_bytes = 256;
  std::unique_ptr<Executor> ex = create_or_die(p);
  const Tensor a = random_tensor(t, 7), b = random_tensor(t, 8), c = random_tensor(t, 9);
  const std::vector<Tensor> out = run_program(*ex, {a, b, c});
  EXPECT_EQ(out[0], a);
  EXPECT_EQ(ex->input(0), b);
  EXPECT_EQ(ex->input(1), a);
  EXPECT_EQ(ex->input(2), a);
  // A second step sees the updated values.
  ASSERT_TRUE(ex->run().ok());
  EXPECT_EQ(ex->output(0), b);
  EXPECT_EQ(ex->input(0), a);
  EXPECT_EQ(ex->input(2), b);
}

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

TEST(CudaExecutor, RefusesAPlanLargerThanTheMemoryLimit) {
  SKIP_WITHOUT_GPU();
  const Type x{DType::f32, {256, 256}};
  Program p = one_op(Op::Softmax, {}, {x}, x);
  ExecutorOptions options;
  options.max_memory = 1;
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(p, "", {}, options);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.error().message,
            "program @one_op needs 512.0 KiB (arena 256.0 KiB + inputs 256.0 KiB) but only 1 B "
            "are available (the memory limit); largest buffers: %in0 f32[256,256] (input) 256.0 "
            "KiB, %r f32[256,256] (arena+0) 256.0 KiB; raise the limit (--max-memory, max_memory) "
            "or use a smaller batch");
}

TEST(CudaExecutor, Errors) {
  SKIP_WITHOUT_GPU();
  const Type t{DType::f32, {4}};
  std::unique_ptr<Executor> ex = create_or_die(one_op(Op::Softmax, {}, {t}, t));
  Status s = ex->set_input(0, Tensor(Type{DType::f32, {5}}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "input %in0 of program @one_op is f32[4], but the value given is f32[5]");
  s = ex->set_input("nope", Tensor(t));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "program @one_op has no input %nope");

  ExecutorOptions options;
  options.device = 1000;
  StatusOr<std::unique_ptr<Executor>> bad = Executor::create(one_op(Op::Softmax, {}, {t}, t), "",
                                                             {}, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("CUDA device 1000 does not exist (", 0), 0u)
      << bad.error().message;

  Program p = one_op(Op::Softmax, {}, {t}, t);
  p.kernels = {kernel("k0", 1, 4)};
  bad = Executor::create(p, ptx_module({ptx_entry("weft_add", "add", 4)}), {"missing"}, kDebug);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind(
                "cudaLibraryGetKernel (k0, symbol \"missing\" in the program's PTX): ", 0),
            0u)
      << bad.error().message;
  // PTX that does not compile: with lazy module loading (the default) the runtime compiles
  // it at the first kernel lookup (an H200 with driver 580 says "device kernel image is
  // invalid" there); with CUDA_MODULE_LOADING=EAGER, at the load.
  bad = Executor::create(p, "this is not PTX", {"weft_add"}, kDebug);
  ASSERT_FALSE(bad.ok());
  const std::string& m = bad.error().message;
  EXPECT_TRUE(m.rfind("cudaLibraryLoadData (the program's PTX): ", 0) == 0 ||
              m.rfind("cudaLibraryGetKernel (k0, symbol \"weft_add\" in the program's PTX): ", 0) == 0)
      << m;
  bad = Executor::create(p, "", {"weft_add"}, kDebug);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "program @one_op has 1 generated kernels but no PTX was given");
  // Without allow_host_fallback, an op with no CUDA kernel is refused before anything is
  // allocated (library.h, check_device_only).
  bad = Executor::create(one_op(Op::Softmax, {}, {t}, t), "", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("program @one_op would run 1 op on the host (no CUDA kernel "
                                      "for it):\n  softmax (%", 0),
            0u)
      << bad.error().message;
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
