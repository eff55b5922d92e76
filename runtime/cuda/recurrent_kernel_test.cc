// The persistent loop kernel's host API (recurrent_kernel.h). Without a GPU: a malformed
// program is refused before any device is asked, and the no-device error. On a GPU
// (skipped without one): a plan refused for a CUDA failure leaves no last error; every case of recurrent_testing.h planned with
// plan_recurrent_launch and launched, and with k forced into 2, 3 and 5 ranges (split-K),
// then in bf16 and f16 (tensor cores and SIMT), then captured in a CUDA graph and
// replayed twice
// (the capture of a cooperative launch, and the barrier counter reused across launches),
// and a launch past 48 KiB of dynamic shared memory, plainly and captured; each run
// against the host oracle.
#include "runtime/cuda/recurrent_kernel.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cuda/recurrent_reference.h"
#include "runtime/cuda/recurrent_testing.h"

namespace weft::cuda {
namespace {

using namespace recurrent_testing;

bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(RecurrentKernel, MalformedProgramIsRefusedBeforeTheDevice) {
  Case c = kernel_cases()[0];
  Program program = c.build(host_bases(c.initial));
  program.phases[0].b = 9;
  const StatusOr<RecurrentLaunch> launch = plan_recurrent_launch(program.view(), 0);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(launch.error().message, "persistent loop program: phase 0: buffer 9 out of range");
}

TEST(RecurrentKernel, WithoutAGpuPlanningSaysWhy) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  Case c = kernel_cases()[0];
  const Program program = c.build(host_bases(c.initial));
  const StatusOr<RecurrentLaunch> launch = plan_recurrent_launch(program.view(), 0);
  ASSERT_FALSE(launch.ok());
  int device = 0;
  const cudaError_t e = cudaGetDevice(&device);  // here: "CUDA driver version is insufficient …"
  ASSERT_NE(e, cudaSuccess);
  EXPECT_EQ(launch.error().message, std::string("persistent loop kernel: cudaGetDevice failed: ") + cudaGetErrorString(e));
}

// launch_recurrent refuses, before any CUDA call (so with or without a GPU), a program
// with phases whose view has no placements table, or one worked out for another grid or
// other shared bytes than the launch's; an empty program needs none.
TEST(RecurrentKernel, ALaunchWithoutItsPlacementsIsRefused) {
  Case c = kernel_cases()[0];
  const Program program = c.build(host_bases(c.initial));
  RecurrentLaunch launch;
  launch.blocks = 3, launch.threads = 64, launch.shared_bytes = recurrent_shared_bytes(program.view(), 3, 1 << 20);
  const std::vector<MatmulPlacement> table = matmul_placements(program.view(), launch);
  unsigned barrier = 0;
  EXPECT_EQ(launch_recurrent(program.view(), &barrier, launch, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_recurrent(with_placements(program.view(), table.data(), 4, launch.shared_bytes), &barrier, launch,
                             nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_recurrent(with_placements(program.view(), table.data(), 3, kMatmulStageBytes), &barrier, launch,
                             nullptr),
            cudaErrorInvalidValue);
  RecurrentProgramView empty = program.view();
  empty.phase_count = 0;
  EXPECT_EQ(launch_recurrent(empty, &barrier, launch, nullptr), cudaSuccess);
}

// A plan refused for a CUDA failure (here a device ordinal past the last) names the call,
// keeps the current device and leaves no last error behind, as cuda_status does
// (executor.cc): bind_loop then binds the loop per trip, and a later launch's check
// (cudaGetLastError, e.g. attention_kernels.cu) would otherwise report this error against
// an innocent kernel. On a GPU only: without one the driver's error stays the last error
// whatever is cleared.
TEST(RecurrentKernel, AFailedPlanNamesTheCallAndLeavesNoLastError) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Case c = kernel_cases()[0];
  const Program program = c.build(host_bases(c.initial));
  int count = 0, before = -1, after = -1;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  const StatusOr<RecurrentLaunch> launch = plan_recurrent_launch(program.view(), count);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(launch.error().message,
            std::string("persistent loop kernel: cudaSetDevice failed: ") + cudaGetErrorString(cudaErrorInvalidDevice));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before);
}

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

/// A case's arrays and program on the device.
class OnDevice {
 public:
  /// Copies case `c`'s arrays and program to the device (the program's addresses the
  /// device's) and plans its launch on device 0; `k_splits` > 0 then forces that many k
  /// ranges on its matmuls, with the slices that fit the planned shared memory and the
  /// scratch they need; `blocks` > 0 runs it on that many blocks instead, with the slices
  /// that fit the device's opt-in shared memory per block (the limit the plan raised
  /// cudaFuncAttributeMaxDynamicSharedMemorySize to).
  explicit OnDevice(const Case& c, int k_splits = 0, int blocks = 0) : storage_(c.initial) {
    for (const std::vector<float>& v : storage_) bases_.push_back(reinterpret_cast<uint64_t>(copy(v)));
    host_program = c.build(bases_);
    view = host_program.view();
    view.buffers = copy(host_program.buffers);
    view.phases = copy(host_program.phases);
    view.maps = copy(host_program.maps);
    view.instrs = copy(host_program.instrs);
    launch = plan_recurrent_launch(host_program.view(), 0);
    if (launch.ok() && blocks > 0) {
      int optin = 0;
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
      launch->blocks = blocks;
      launch->k_splits = k_splits;
      launch->shared_bytes = recurrent_shared_bytes(host_program.view(), blocks, static_cast<uint64_t>(optin), k_splits);
      launch->workspace_bytes = recurrent_workspace_bytes(host_program.view(), blocks, k_splits);
    } else if (launch.ok() && k_splits > 0) {
      launch->k_splits = k_splits;
      launch->shared_bytes = recurrent_shared_bytes(host_program.view(), launch->blocks, launch->shared_bytes, k_splits);
      launch->workspace_bytes = recurrent_workspace_bytes(host_program.view(), launch->blocks, k_splits);
    }
    if (launch.ok()) {
      // The table the kernel reads, worked out on the host for the launch as planned above.
      placements_ = matmul_placements(host_program.view(), *launch);
      view = with_placements(view, copy(placements_), launch->blocks, launch->shared_bytes);
    }
    const size_t bytes = recurrent_barrier_bytes() + (launch.ok() ? launch->workspace_bytes : 0);
    barrier = allocate(bytes);
    cudaMemset(barrier, 0, bytes);
  }
  ~OnDevice() {
    for (void* p : allocations_) cudaFree(p);
  }

  Storage download() const {
    Storage out = storage_;
    for (size_t a = 0; a < out.size(); ++a) {
      cudaMemcpy(out[a].data(), reinterpret_cast<const void*>(bases_[a]), out[a].size() * sizeof(float),
                 cudaMemcpyDeviceToHost);
    }
    return out;
  }

  Program host_program;  ///< Device addresses, host arrays.
  RecurrentProgramView view;  ///< Device addresses, device arrays.
  void* barrier = nullptr;
  StatusOr<RecurrentLaunch> launch = Error("not planned");

 private:
  void* allocate(size_t bytes) {
    void* p = nullptr;
    cudaMalloc(&p, bytes > 0 ? bytes : 1);
    allocations_.push_back(p);
    return p;
  }
  template <typename T>
  T* copy(const std::vector<T>& v) {
    void* p = allocate(v.size() * sizeof(T));
    cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return static_cast<T*>(p);
  }

  Storage storage_;
  Bases bases_;
  std::vector<MatmulPlacement> placements_;
  std::vector<void*> allocations_;
};

void expect_close(const Storage& got, const Storage& want, ElementType type = ElementType::f32) {
  for (size_t a = 0; a < want.size(); ++a) {
    const std::vector<float> got_values = values(got[a], type), want_values = values(want[a], type);
    for (size_t i = 0; i < want[a].size(); ++i) {
      ASSERT_TRUE(close(got_values[i], want_values[i], type))
          << "array " << a << " element " << i << ": kernel " << got_values[i] << ", oracle " << want_values[i];
    }
  }
}

/// The oracle's arrays after `runs` runs of case `c`.
Storage oracle(const Case& c, int runs) {
  Storage want = c.initial;
  const Program program = c.build(host_bases(want));
  for (int r = 0; r < runs; ++r) EXPECT_TRUE(run_recurrent_on_host(program.view()).ok());
  return want;
}

/// Captures d's launch on a stream of its own in a CUDA graph (a cooperative kernel node)
/// and replays the graph twice.
void replay_captured_twice(const OnDevice& d) {
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreate(&stream));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  CUDA_OK(launch_recurrent(d.view, d.barrier, *d.launch, stream));
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(RecurrentKernel, CasesMatchTheOracleOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  for (const Case& c : kernel_cases()) {
    SCOPED_TRACE(c.name);
    OnDevice d(c);
    ASSERT_TRUE(d.launch.ok()) << d.launch.error().message;
    EXPECT_EQ(count_cached_phases(d.host_program.view(), d.launch->blocks, d.launch->shared_bytes).cached,
              c.cacheable);
    CUDA_OK(launch_recurrent(d.view, d.barrier, *d.launch, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    expect_close(d.download(), oracle(c, 1));
  }
}

// Split-K on the GPU: every case with k forced into 2, 3 and 5 ranges (the partials in
// the scratch after the barrier's counter, summed after a grid barrier).
TEST(RecurrentKernel, ForcedKSplitsMatchTheOracleOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  for (const Case& c : kernel_cases()) {
    SCOPED_TRACE(c.name);
    for (int k_splits : kForcedKSplits) {
      SCOPED_TRACE(std::to_string(k_splits) + " k ranges");
      OnDevice d(c, k_splits);
      ASSERT_TRUE(d.launch.ok()) << d.launch.error().message;
      CUDA_OK(launch_recurrent(d.view, d.barrier, *d.launch, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      expect_close(d.download(), oracle(c, 1));
    }
  }
}

// Every case in bf16 and f16 (recurrent_testing.h's in_type): on tensor cores where the
// device has them (sm_80 and later: the planned launch), then with them switched off (the
// SIMT matmul on converted values), then with 2 k ranges as planned.
TEST(RecurrentKernel, LowPrecisionCasesMatchTheOracleOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  for (ElementType type : {ElementType::bf16, ElementType::f16}) {
    for (const Case& f32 : kernel_cases()) {
      const Case c = in_type(f32, type);
      SCOPED_TRACE(c.name);
      for (int k_splits : {0, 2}) {
        OnDevice d(c, k_splits);
        ASSERT_TRUE(d.launch.ok()) << d.launch.error().message;
        EXPECT_EQ(d.launch->tensor_cores, major >= 8);
        for (bool tensor_cores : {d.launch->tensor_cores, false}) {
          SCOPED_TRACE(std::string(tensor_cores ? "tensor cores" : "SIMT") + ", k ranges " + std::to_string(k_splits));
          OnDevice run(c, k_splits);
          run.launch->tensor_cores = tensor_cores;
          CUDA_OK(launch_recurrent(run.view, run.barrier, *run.launch, nullptr));
          CUDA_OK(cudaDeviceSynchronize());
          expect_close(run.download(), oracle(c, 1), type);
        }
      }
    }
  }
}

// The tiling's edges on the GPU as the emulation runs them (recurrent_kernel_emulation_test's
// TilingEdgesMatchTheOracleOnBlocksOf256Threads and its tensor-core tiling cases): each
// case on 2 blocks of 256 threads, so that a block's tile is the whole
// 128-row and 64-column panels, the k splits of the SIMT panel and the tensor-core panel
// of up to 8 × 8 mma tiles (8 per warp) run on the device; the planned launches of the
// cases above spread these shapes over every multiprocessor's blocks (an H200's 264), a
// few columns each. In f32, then bf16 and f16 on tensor cores (where the device has them)
// and as SIMT.
TEST(RecurrentKernel, TilingCasesOnTwoBlocksMatchTheOracleOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  for (ElementType type : {ElementType::f32, ElementType::bf16, ElementType::f16}) {
    for (const Case& f32 : tiling_cases()) {
      const Case c = type == ElementType::f32 ? f32 : in_type(f32, type);
      SCOPED_TRACE(c.name);
      bool planned_tensor_cores = false;
      {
        OnDevice d(c, 0, /*blocks=*/2);
        ASSERT_TRUE(d.launch.ok()) << d.launch.error().message;
        planned_tensor_cores = d.launch->tensor_cores;
      }
      // Planned on tensor cores (bf16 and f16 on sm_80 and later): that, then SIMT.
      const std::vector<bool> runs = planned_tensor_cores ? std::vector<bool>{true, false} : std::vector<bool>{false};
      for (bool tensor_cores : runs) {
        SCOPED_TRACE(tensor_cores ? "tensor cores" : "SIMT");
        OnDevice d(c, 0, /*blocks=*/2);
        d.launch->tensor_cores = tensor_cores;
        CUDA_OK(launch_recurrent(d.view, d.barrier, *d.launch, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        expect_close(d.download(), oracle(c, 1), type);
      }
    }
  }
}

// Past 48 KiB of dynamic shared memory (recurrent_testing.h's kLargeSlice: 96 KiB per
// block in f32, 56 KiB in bf16 and f16 on tensor cores), which a launch gets only after
// plan_recurrent_launch's cudaFuncSetAttribute: launched, then captured in a CUDA graph
// (a cooperative kernel node with that much shared memory) and replayed twice, each
// against the oracle. The planned launches of kernel_cases stay under 48 KiB. Skipped
// where the device's opt-in limit is below the case's bytes (sm_75's 64 KiB, in f32).
TEST(RecurrentKernel, LaunchesPast48KiBOfSharedMemoryOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  int optin = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), cudaSuccess);
  for (ElementType type : {ElementType::f32, ElementType::bf16, ElementType::f16}) {
    const Case c = type == ElementType::f32 ? large_slice_case() : in_type(large_slice_case(), type);
    SCOPED_TRACE(c.name);
    if (static_cast<uint64_t>(optin) < large_slice_shared_bytes(type)) {
      std::printf("  %s skipped: the device's opt-in shared memory is %d bytes\n", c.name.c_str(), optin);
      continue;
    }
    {
      OnDevice d(c, kLargeSliceKSplits, kLargeSliceBlocks);
      ASSERT_TRUE(d.launch.ok()) << d.launch.error().message;
      ASSERT_EQ(d.launch->shared_bytes, large_slice_shared_bytes(type));
      EXPECT_EQ(count_cached_phases(d.host_program.view(), d.launch->blocks, d.launch->shared_bytes,
                                    kLargeSliceKSplits).cached,
                1);
      CUDA_OK(launch_recurrent(d.view, d.barrier, *d.launch, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      expect_close(d.download(), oracle(c, 1), type);
    }
    OnDevice d(c, kLargeSliceKSplits, kLargeSliceBlocks);
    ASSERT_TRUE(d.launch.ok()) << d.launch.error().message;
    ASSERT_NO_FATAL_FAILURE(replay_captured_twice(d));
    expect_close(d.download(), oracle(c, 2), type);
  }
}

TEST(RecurrentKernel, CapturedInACudaGraphAndReplayed) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  for (const Case& c : kernel_cases()) {
    SCOPED_TRACE(c.name);
    OnDevice d(c);
    ASSERT_TRUE(d.launch.ok()) << d.launch.error().message;
    ASSERT_NO_FATAL_FAILURE(replay_captured_twice(d));
    expect_close(d.download(), oracle(c, 2));  // the LSTM's c carries over, as in the oracle's two runs
  }
}

}  // namespace
}  // namespace weft::cuda
