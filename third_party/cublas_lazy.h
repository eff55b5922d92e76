// cuBLAS loaded on first use: the cuBLAS entry points weft's CUDA runtime calls
// (runtime/cuda), defined here to open libcublas with dlopen the first time one of them
// runs, instead of linking it. Linking libcublas maps cuBLASLt into every process that
// links the CUDA backend, and its relocations and initializers cost about 0.8 s of CPU
// at every start (a `weftc --help`, every test binary), GPU or not; a process that never
// multiplies on the GPU now never loads it.
//
// Link `//third_party:cublas_lazy` instead of `//third_party:cublas` and include
// <cublas_v2.h> (or <cublasLt.h>: its functions come from libcublasLt, opened the same
// way) as before. Only the functions defined in cublas_lazy.cc exist: calling
// another one fails to link (add it there). When the library cannot be opened, each
// function returns CUBLAS_STATUS_NOT_INITIALIZED and cublasGetStatusString says why.
#pragma once

#include <string>

namespace weft::cuda_lazy {

/// The address of `symbol` in the shared library `soname` (opened with dlopen on the
/// first call for that library and kept open), or nullptr with `*error` set to
/// "cannot load `symbol` from `soname`: <dlerror>".
void* find_symbol(const std::string& soname, const char* symbol, std::string* error);

/// The soname of the cuBLAS the headers describe ("libcublas.so.13").
std::string cublas_soname();

/// The soname of its cuBLASLt ("libcublasLt.so.13"), opened the same way by the cuBLASLt
/// functions cublas_lazy.cc defines (runtime/cuda/gemm_lt.cc's).
std::string cublaslt_soname();

/// Whether this process has opened cuBLAS (through a function of this library or
/// otherwise): true once a cuBLAS function has run.
bool cublas_loaded();

}  // namespace weft::cuda_lazy
