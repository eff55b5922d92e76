// third_party:cublas_lazy: cuBLAS is not in the process until a cuBLAS function runs,
// then the call reaches the real library; a library that cannot be opened gives an error
// naming the symbol and the library.
#include "third_party/cublas_lazy.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <string>

namespace weft::cuda_lazy {
namespace {

TEST(CublasLazy, OpensCublasAtTheFirstCallOnly) {
  EXPECT_EQ(cublas_soname(), "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
  EXPECT_FALSE(cublas_loaded()) << "linked, not opened on first use";
  // Answered by the real cuBLAS (no GPU needed): its text, not a load error.
  const std::string text = cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_TRUE(cublas_loaded());
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.find("cannot load"), std::string::npos) << text;
}

TEST(CublasLazy, MissingLibraryOrSymbolIsAnError) {
  std::string error;
  EXPECT_EQ(find_symbol("libweft_no_such_library.so.1", "cublasCreate_v2", &error), nullptr);
  EXPECT_EQ(error.rfind("cannot load cublasCreate_v2 from libweft_no_such_library.so.1: ", 0),
            0u)
      << error;
  EXPECT_EQ(find_symbol(cublas_soname(), "weft_no_such_symbol", &error), nullptr);
  EXPECT_EQ(error.rfind("cannot load weft_no_such_symbol from " + cublas_soname() + ": ", 0), 0u)
      << error;
  EXPECT_NE(find_symbol(cublas_soname(), "cublasCreate_v2", &error), nullptr);
}

// cuBLASLt's functions (runtime/cuda/gemm_lt.cc) reach the real libcublasLt: its host-side
// descriptors are made without a GPU.
TEST(CublasLazy, ForwardsCublasLtToItsLibrary) {
  EXPECT_EQ(cublaslt_soname(), "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const uint32_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, 24, 32, 24), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
}  // namespace weft::cuda_lazy
