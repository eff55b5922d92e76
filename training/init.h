#pragma once
// Materializes a parameter's Initializer (ir/initializer.h) as a tensor, deterministically
// and identically on every machine:
//
//   WEFT_ASSIGN_OR_RETURN(Tensor w, weft::materialize(Initializer::kaiming_uniform(std::sqrt(5.0)),
//                                                     {DType::f32, {256, 784}}, seed, stream));
//
// Element i (row-major) is a function of (seed, stream, i) alone: its bits come from the
// Philox block runtime/philox.h defines for key (seed, offset = stream) and counter i,
// the block a `random_*` op with key [seed, stream] draws for element i. So a tensor
// does not depend on the order parameters are created in, on threads, or on its
// neighbours; giving each parameter its own stream (frontend/init_params.h hashes its
// name) makes adding a parameter leave the others unchanged.
//
// Distributions and bounds follow torch.nn.init (fans from `compute_fans`):
//   uniform(a, b)        a + (b - a)·u, u the 53-bit uniform of the block (words 0, 1)
//   normal(mean, std)    mean + std·z, z by Box–Muller from the block's two 53-bit
//                        uniforms: sqrt(-2 ln(1 - u0))·cos(2π·u1)
//   truncated_normal     PyTorch's inverse-CDF method: u uniform on [Φ(α), Φ(β)] with
//                        α, β the cuts in std units, x = mean + std·Φ⁻¹(u), clamped to
//                        [low, high] (the cuts are absolute values, as in PyTorch)
//   xavier_*, kaiming_*  uniform/normal with PyTorch's bound or std
//   orthogonal(gain)     torch.nn.init.orthogonal_: a normal [rows, numel/rows] matrix
//                        (element i drawn as above), transposed if wide, orthonormalized
//                        (QR with a positive diagonal of R, here by twice-applied modified
//                        Gram–Schmidt in f64), transposed back, times gain
//   constant(v)          every element v, in any dtype
// Values are computed in f64 and rounded to the dtype (f32, f64, f16, bf16) once.

#include <cstdint>
#include <string_view>

#include "ir/initializer.h"
#include "ir/shape.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft {

/// A tensor of `type` initialized by `init` from Philox key (seed, stream). Errors: a
/// random initializer for a non-float dtype, orthogonal on fewer than two dimensions, a
/// negative std or gain, an empty uniform or truncation range.
StatusOr<Tensor> materialize(const Initializer& init, const Type& type, uint64_t seed,
                             uint64_t stream);

/// The Philox stream of the parameter (or optimizer slot) named `name`: 64-bit FNV-1a of
/// the name's bytes. The Trainer and AOT binaries both initialize a value with
/// materialize(init, type, seed, parameter_stream(name)), so they start from the same
/// values. Part of the checkpoint format's reproducibility: never change it.
uint64_t parameter_stream(std::string_view name);

/// The standard normal quantile Φ⁻¹(p) for p in (0, 1), accurate to ~1e-15 (Acklam's
/// rational approximation refined by one Halley step); ±inf at 0 and 1.
double normal_quantile(double p);

}  // namespace weft
