// The CUDA executor against the reference interpreter, on hand-built Programs: cuBLAS
// matmuls (every transpose combination, batched and broadcast), a host fallback, copies,
// all_reduce, updates, the memory limit, and the pinned errors. Generated kernels from
// hand-written PTX, contractions, convolutions and pooling are in executor_kernels_test.cc;
// the helpers both use in executor_testing.h. Without a GPU every device test skips with
// unavailable_reason(), and the "no CUDA device" error is pinned instead.
#include "runtime/cuda/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <future>
#include <thread>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/backend.h"
#include "runtime/cuda/backend.h"
#include "runtime/cuda/device.h"
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

// #31's input overlap. A matmul of a data input x by w, and x's bytes copied out: what
// each step read of x shows in both outputs.
Program prefetch_program() {
  const Type x{DType::f32, {32, 64}}, w{DType::f32, {64, 48}}, y{DType::f32, {32, 48}}, flat{DType::f32, {32 * 64}};
  Program p = one_op(Op::Matmul, {}, {x, w}, y);
  p.name = "prefetch";
  const int64_t at = round_up(static_cast<int64_t>(y.bytes()));
  p.code.push_back(copy_of(input(0, x), arena(at, flat)));
  p.outputs.push_back(arena(at, flat));
  p.arena_bytes = at + round_up(static_cast<int64_t>(flat.bytes()));
  return p;
}

std::unique_ptr<Executor> prefetch_executor(bool prefetch, bool graph) {
  StatusOr<std::unique_ptr<Executor>> ex =
      Executor::create(prefetch_program(), "", {}, {.cuda_graph = graph, .input_prefetch = prefetch});
  WEFT_CHECK(ex.ok(), ex.status().to_string());
  return std::move(*ex);
}

// The option's plumbing (host-only): BindOptions::input_prefetch and $WEFT_INPUT_PREFETCH
// reach cuda::ExecutorOptions through the backend's one conversion.
TEST(CudaExecutor, InputPrefetchFollowsBindOptionsAndTheEnvironment) {
  const Program p = prefetch_program();
  unsetenv("WEFT_INPUT_PREFETCH");
  EXPECT_TRUE(executor_options(BindOptions{}, p)->input_prefetch);
  EXPECT_FALSE(executor_options(BindOptions{.input_prefetch = false}, p)->input_prefetch);
  setenv("WEFT_INPUT_PREFETCH", "0", 1);
  EXPECT_FALSE(executor_options(BindOptions{}, p)->input_prefetch);
  setenv("WEFT_INPUT_PREFETCH", "1", 1);
  EXPECT_TRUE(executor_options(BindOptions{}, p)->input_prefetch);
  unsetenv("WEFT_INPUT_PREFETCH");
  EXPECT_TRUE(ExecutorOptions{}.input_prefetch);
}

// Batches from the data Loader's pinned buffers, held two at a time as the driver holds
// them (training/data/loader.h), each prefetched before the step before it runs, give
// bitwise the outputs of set_input's plain copies, step after step with changing batches,
// as one CUDA graph and launch by launch. A prefetched input costs two slots of device
// memory.
TEST(CudaExecutor, PrefetchedInputsGiveTheBitsOfPlainCopies) {
  SKIP_WITHOUT_GPU();
  StatusOr<const Backend*> cuda = find_backend("cuda");
  ASSERT_TRUE(cuda.ok()) << cuda.error().to_string();
  const Program p = prefetch_program();
  const Type x = p.inputs[0].type, w = p.inputs[1].type;
  const int64_t steps = 7;
  for (bool graph : {true, false}) {
    std::unique_ptr<Executor> on = prefetch_executor(true, graph), off = prefetch_executor(false, graph);
    EXPECT_EQ(on->uses_cuda_graph(), graph);
    Loader loader(/*first=*/0, /*end=*/steps, {x},
                  [&](int64_t n, std::vector<Tensor>& into) -> Status {
                    const Tensor v = random_tensor(x, static_cast<unsigned>(300 + n));
                    std::memcpy(into[0].raw_data(), v.raw_data(), v.bytes());
                    return Status();
                  },
                  HostPinning{(*cuda)->pin_host_memory, (*cuda)->unpin_host_memory}, /*held=*/2);
    ASSERT_TRUE(loader.pinned());
    StatusOr<const std::vector<Tensor>*> ahead = loader.next();
    ASSERT_TRUE(ahead.ok());
    ASSERT_TRUE(on->prefetch_input(0, (*ahead)->at(0)).ok());
    for (int64_t n = 0; n < steps; ++n) {
      const std::vector<Tensor>* batch = *ahead;
      if (n + 1 < steps) {
        ahead = loader.next();
        ASSERT_TRUE(ahead.ok());
        ASSERT_TRUE(on->prefetch_input(0, (*ahead)->at(0)).ok());  // copied while step n runs
      }
      const Tensor wn = random_tensor(w, static_cast<unsigned>(400 + n));
      const std::vector<Tensor> got = run_program(*on, {batch->at(0), wn});
      const std::vector<Tensor> want = run_program(*off, {batch->at(0), wn});
      EXPECT_EQ(got[0], want[0]) << "step " << n << (graph ? " (graph)" : "");
      EXPECT_EQ(got[1], want[1]) << "step " << n;
      Tensor sent(p.outputs[1].type);
      std::memcpy(sent.raw_data(), batch->at(0).raw_data(), sent.bytes());
      EXPECT_EQ(got[1], sent) << "step " << n << " did not read its own batch";
    }
    EXPECT_EQ(on->device_bytes() - off->device_bytes(), 2 * static_cast<int64_t>(x.bytes()));
  }
}

// Opens a gate that a host function holds the copy stream with, when it goes out of scope
// (before the executor waits for that stream in its destructor).
struct Gate {
  std::atomic<bool> open{false};
  ~Gate() { open = true; }
  static void CUDART_CB hold(void* gate) {
    while (!static_cast<Gate*>(gate)->open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

// Step n does not wait for batch n+1's copy: with the copy stream held shut, step n runs
// to its end while the copy of n+1 is still queued (its event not reached); once the
// stream opens, step n+1 waits for that copy and reads batch n+1.
TEST(CudaExecutor, AStepDoesNotWaitForTheNextBatchsCopy) {
  SKIP_WITHOUT_GPU();
  const Program p = prefetch_program();
  const Type x = p.inputs[0].type, w = p.inputs[1].type;
  // Pinned, as the Loader's buffers are: a copy from pageable memory would wait for the
  // copy stream (staging) on the host, behind the gate.
  Tensor x0 = random_tensor(x, 1), x1 = random_tensor(x, 2);
  const Tensor w0 = random_tensor(w, 3);
  ASSERT_EQ(cudaHostRegister(x0.raw_data(), x0.bytes(), cudaHostRegisterDefault), cudaSuccess);
  ASSERT_EQ(cudaHostRegister(x1.raw_data(), x1.bytes(), cudaHostRegisterDefault), cudaSuccess);
  struct Unpin {
    std::vector<void*> pinned;
    ~Unpin() {
      for (void* q : pinned) cudaHostUnregister(q);
    }
  } unpin{{x0.raw_data(), x1.raw_data()}};
  std::unique_ptr<Executor> ex = prefetch_executor(true, true);
  Gate gate;  // opened before the executor waits for its copy stream
  ASSERT_TRUE(ex->prefetch_input(0, x0).ok());
  Executor::Device& d = ex->device_state();
  ASSERT_NE(d.copy_stream, nullptr);
  ASSERT_EQ(cudaStreamSynchronize(d.copy_stream), cudaSuccess);  // x0 is in its slot
  ASSERT_EQ(cudaLaunchHostFunc(d.copy_stream, &Gate::hold, &gate), cudaSuccess);
  ASSERT_TRUE(ex->prefetch_input(0, x1).ok());  // behind the gate
  ASSERT_TRUE(ex->set_input(0, x0).ok());
  ASSERT_TRUE(ex->set_input(1, w0).ok());
  std::future<Status> step = std::async(std::launch::async, [&] { return ex->run(); });
  if (step.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    gate.open = true;
    FAIL() << "step 0 waited for batch 1's copy";
  }
  ASSERT_TRUE(step.get().ok());
  const int s1 = 1;  // x1's slot: x0 went to slot 0 (executor_prefetch.h's PrefetchRing)
  EXPECT_EQ(cudaEventQuery(d.prefetched[0].copied[s1]), cudaErrorNotReady) << "batch 1 was copied before step 0 ended";
  cudaGetLastError();  // leave no "not ready" behind for the executor's launch checks
  Tensor want(p.outputs[1].type);
  std::memcpy(want.raw_data(), x0.raw_data(), want.bytes());
  EXPECT_EQ(ex->output(1), want);
  gate.open = true;
  const std::vector<Tensor> out = run_program(*ex, {x1, w0});
  std::memcpy(want.raw_data(), x1.raw_data(), want.bytes());
  EXPECT_EQ(out[1], want);
}

// A value that was not prefetched (another tensor) is copied from the host as before, and
// the prefetch it passed over stays for the set_input that takes it.
TEST(CudaExecutor, SetInputOfAnotherTensorCopiesItAndKeepsThePrefetch) {
  SKIP_WITHOUT_GPU();
  const Program p = prefetch_program();
  const Type x = p.inputs[0].type, w = p.inputs[1].type;
  std::unique_ptr<Executor> ex = prefetch_executor(true, true);
  const Tensor x0 = random_tensor(x, 5), other = random_tensor(x, 6), w0 = random_tensor(w, 7);
  ASSERT_TRUE(ex->prefetch_input(0, x0).ok());
  Tensor want(p.outputs[1].type);
  std::memcpy(want.raw_data(), other.raw_data(), want.bytes());
  EXPECT_EQ(run_program(*ex, {other, w0})[1], want);
  std::memcpy(want.raw_data(), x0.raw_data(), want.bytes());
  EXPECT_EQ(run_program(*ex, {x0, w0})[1], want);
  EXPECT_EQ(ex->prefetch_input(0, w0).error().message,
            "input %in0 of program @prefetch is f32[32,64], but the value given is f32[64,48]");
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
