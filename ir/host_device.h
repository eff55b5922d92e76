#pragma once
// WEFT_HD marks a function that CUDA device code and host code both call: `__host__
// __device__` under nvcc, nothing for the host compiler. The one definition, for every
// header nvcc and the host compiler both read: ir/scalar_math.h's functors (the persistent
// loop kernel computes its ops with them: runtime/cuda/recurrent_kernel_device.inc),
// runtime/half_bits.h, runtime/cuda/index_maps.h and the other runtime/cuda headers shared
// with device code. Dependency-free.

#if defined(__CUDACC__)
#define WEFT_HD __host__ __device__
#else
#define WEFT_HD
#endif
