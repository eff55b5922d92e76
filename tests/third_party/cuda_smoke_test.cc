// CUDA runtime, cuBLAS, cuDNN, NCCL and NVRTC link and answer a version query. With no
// GPU, cudaGetDeviceCount fails (error 35 on these machines) and the test reports that
// no GPU is present instead of failing.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <nvrtc.h>

#include <cstdio>

TEST(CudaSmoke, LibrariesAnswer) {
  EXPECT_GE(cudnnGetVersion(), 9000u);
  int nccl_version = 0;
  EXPECT_EQ(ncclGetVersion(&nccl_version), ncclSuccess);
  EXPECT_GT(nccl_version, 0);
  int major = 0, minor = 0;
  EXPECT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_GE(major, 12);
}

TEST(CudaSmoke, DeviceCountOrNoGpu) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("no GPU present (%s)\n", cudaGetErrorString(err));
    GTEST_SKIP() << "no GPU present";
  }
  cublasHandle_t handle;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  int version = 0;
  EXPECT_EQ(cublasGetVersion(handle, &version), CUBLAS_STATUS_SUCCESS);
  cublasDestroy(handle);
}
