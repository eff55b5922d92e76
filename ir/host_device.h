#pragma once
// WEFT_HD marks a function that CUDA device code and host code both call: `__host__
// __device__` under nvcc, nothing for the host compiler. For ir/'s headers that device code
// reads (ir/scalar_math.h's functors, which the persistent loop kernel computes its ops
// with: runtime/cuda/recurrent_kernel_device.inc). runtime/host_device.h defines the same
// macro, token for token (a benign redefinition where both are included), for runtime/'s
// headers; it is kept rather than made to include this one, which would recompile every
// CUDA object. Dependency-free.

#if defined(__CUDACC__)
#define WEFT_HD __host__ __device__
#else
#define WEFT_HD
#endif
