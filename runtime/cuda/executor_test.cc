// The CUDA executor against the reference interpreter, on hand-built Programs: cuBLAS
// matmuls (every transpose combination, batched and broadcast), a host fallback, copies,
// all_reduce, updates, the memory limit, and the pinned errors. Generated kernels from
// hand-written PTX, contractions, convolutions and pooling are in executor_kernels_test.cc;
// the helpers both use in executor_testing.h. Without a GPU every device test skips with
// unavailable_reason(), and the "no CUDA device" error is pinned instead.
#include "runtime/cuda/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/backend.h"
#include "runtime/cuda/executor_testing.h"
#include "runtime/cuda/test_util.h"
#include "training/data/loader.h"
#include "runtime/reference/interpreter.h"

namespace weft::cuda {
namespace {

using namespace executor_testing;

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

}  // namespace
}  // namespace weft::cuda
