#pragma once
// WEFT_HD marks a function that CUDA device code and host code both call: `__host__
// __device__` under nvcc, nothing for the host compiler. The one definition, for the
// header-only helpers nvcc and the host compiler both read (runtime/half_bits.h,
// runtime/cuda/index_maps.h). Dependency-free.

#if defined(__CUDACC__)
#define WEFT_HD __host__ __device__
#else
#define WEFT_HD
#endif
