// NCCL all-reduce bandwidth for buffers of 1 to 256 MiB (f32, sum, in place) on this
// rank's GPU, printed as a table with NCCL-tests' definitions: time per call (the mean
// of `--iters` calls after 5 warm-up ones, CUDA events on the communication stream),
// algbw = bytes / time, busbw = algbw · 2(n-1)/n for n ranks. With one rank (one GPU:
// NCCL refuses two ranks on one device) busbw is 0 by that formula and the time is the
// call's own cost (a local copy); algbw is then the figure to record. A benchmark: it
// asserts nothing. Usage: nccl_bandwidth [--iters=20]; LOCAL_RANK picks the GPU.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/collective/communicator.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/nccl_communicator.h"

namespace weft::cuda {
namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "nccl_bandwidth: %s\n", what.c_str());
  return 1;
}

// Mean milliseconds of one in-place sum all-reduce of `bytes` over `iters` calls.
StatusOr<double> time_all_reduce(NcclCommunicator& nccl, void* data, int64_t bytes, int iters) {
  cudaStream_t s = nccl.stream();
  const int64_t count = bytes / 4;
  for (int i = 0; i < 5; ++i) WEFT_RETURN_IF_ERROR(nccl.device_all_reduce(data, count, DType::f32, collective::Reduction::sum, s));
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, s);
  for (int i = 0; i < iters; ++i) WEFT_RETURN_IF_ERROR(nccl.device_all_reduce(data, count, DType::f32, collective::Reduction::sum, s));
  cudaEventRecord(stop, s);
  float ms = 0;
  const cudaError_t e = cudaEventSynchronize(stop);
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (e != cudaSuccess) return Error{std::string("cudaEventSynchronize: ") + cudaGetErrorString(e)};
  return static_cast<double>(ms) / iters;
}

int run(int iters) {
  if (!available()) return fail("no GPU: " + unavailable_reason());
  const char* local = std::getenv("LOCAL_RANK");
  StatusOr<std::shared_ptr<NcclCommunicator>> nccl =
      NcclCommunicator::create(collective::single_process(), local ? std::atoi(local) : 0);
  if (!nccl.ok()) return fail(nccl.error().to_string());
  const int n = (*nccl)->world_size();
  std::printf("%s, %d calls per size\n", (*nccl)->describe().c_str(), iters);
  std::printf("%10s %12s %14s %14s\n", "bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)");
  const int64_t most = int64_t{256} << 20;
  void* data = nullptr;
  if (cudaMalloc(&data, most) != cudaSuccess) return fail("cudaMalloc of 256 MiB");
  cudaMemset(data, 0, most);
  for (int64_t bytes = int64_t{1} << 20; bytes <= most; bytes *= 2) {
    StatusOr<double> ms = time_all_reduce(**nccl, data, bytes, iters);
    if (!ms.ok()) return fail(ms.error().to_string());
    const double algbw = static_cast<double>(bytes) / (*ms * 1e-3) / 1e9;
    const double busbw = algbw * 2.0 * (n - 1) / n;
    std::printf("%10lld %12.1f %14.2f %14.2f\n", static_cast<long long>(bytes), *ms * 1e3, algbw, busbw);
  }
  cudaFree(data);
  return 0;
}

}  // namespace
}  // namespace weft::cuda

int main(int argc, char** argv) {
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--iters=", 8) == 0) {
      iters = std::atoi(argv[i] + 8);
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "usage: nccl_bandwidth [--iters=N]\n"
          "NCCL all-reduce bandwidth on this rank's GPU (LOCAL_RANK picks it) for buffers of\n"
          "1 to 256 MiB (f32, sum, in place): time per call (the mean of N calls, default 20,\n"
          "after 5 warm-up ones), algbw and busbw as NCCL-tests define them.\n");
      return 0;
    } else {
      std::fprintf(stderr, "usage: nccl_bandwidth [--iters=N] (unknown argument '%s'); LOCAL_RANK picks the GPU\n",
                   argv[i]);
      return 2;
    }
  }
  return weft::cuda::run(iters > 0 ? iters : 20);
}
