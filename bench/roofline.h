#pragma once
// The roofline bound of one training step, measured on this machine.
//
// A step cannot be faster than either of:
//  - compute: every matmul and convolution of the step graph (the weft worker's
//    `gemm_shapes`, [m, n, k, count] per step) run at the sgemm throughput oneDNN
//    reaches on this machine for that very shape, Σ count·2mnk / throughput(m, n, k);
//  - memory: the training state streamed once, kStateTrafficFactor·state_bytes at the
//    measured memory bandwidth (state_bytes = parameters + gradients + optimizer state).
// The bound of an epoch is kStepsPerEpoch × max(compute, memory):
//
//   roofline_ms = 50 · max(Σ count·2mnk / sgemm_flops(m, n, k),
//                          2 · state_bytes / triad_bandwidth) · 1000
//
// The factor 2 is "every byte of state read once and written once". With Adam the state
// is 4p (param, grad, m, v, p bytes each): the update reads param, grad, m, v and
// writes param, m, v (7p), and the backward pass writes the gradient (1p): 8p = 2·state.
// Activations, elementwise ops and the loss are not counted, so the bound is optimistic.
//
//   std::vector<GemmShape> shapes = {{64, 512, 256, 3}};
//   SgemmTable sgemm;  // measures each distinct shape once, on first use
//   Roofline r = roofline(shapes, [&](const GemmShape& s) { return sgemm.flops(s); },
//                         /*state_bytes=*/16 << 20, measure_triad_bandwidth());

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

namespace weft::bench {

/// Steps per epoch (bench/PROTOCOL.md).
inline constexpr int kStepsPerEpoch = 50;
/// Bytes moved per byte of training state per step: read once and written once.
inline constexpr double kStateTrafficFactor = 2.0;

/// One matmul shape of the step graph, C[m, n] = A[m, k]·B[k, n], occurring `count`
/// times per step.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, count = 1;

  /// 2·m·n·k: one multiply and one add per term.
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  bool operator<(const GemmShape& o) const {
    return std::tie(m, n, k) < std::tie(o.m, o.n, o.k);
  }
};

/// The two bounds of one step and the bound of an epoch, in milliseconds.
struct Roofline {
  double flops_per_step = 0;         ///< Σ count·2mnk.
  double memory_bytes_per_step = 0;  ///< kStateTrafficFactor · state_bytes.
  double compute_ms_per_step = 0;    ///< Σ count·2mnk / throughput(shape).
  double memory_ms_per_step = 0;     ///< memory_bytes_per_step / bandwidth.
  double bandwidth_bytes_per_s = 0;  ///< The bandwidth used.
  std::vector<double> sgemm_flops_per_s;  ///< The throughput used for each shape, in order.
  /// kStepsPerEpoch · max(compute_ms_per_step, memory_ms_per_step).
  double epoch_ms = 0;
  /// "compute" or "memory": whichever bound is larger.
  const char* bound_by() const {
    return compute_ms_per_step >= memory_ms_per_step ? "compute" : "memory";
  }
};

/// The roofline of a step whose matmuls are `shapes` and whose training state is
/// `state_bytes`, given the sgemm throughput of each shape (FLOP/s) and the memory
/// bandwidth (bytes/s). Pure arithmetic: the measurements come from the callers.
Roofline roofline(const std::vector<GemmShape>& shapes,
                  const std::function<double(const GemmShape&)>& sgemm_flops_per_s,
                  int64_t state_bytes, double bandwidth_bytes_per_s);

/// Measures the single-precision GEMM throughput (FLOP/s) of oneDNN's `dnnl_sgemm` on
/// a row-major, non-transposed m×k by k×n product, with as many threads as the library
/// takes by default (every core here): repeated calls until each timing covers about
/// 20 ms, the best of `trials` timings.
double measure_sgemm_flops(int64_t m, int64_t n, int64_t k, int trials = 5);

/// Measures the memory bandwidth (bytes/s) with a STREAM-style triad a = b + s·c over
/// three float arrays of `total_bytes` together, split across every core: 3 arrays'
/// bytes counted per pass (write-allocate traffic is not counted), the best of
/// `trials` passes after one untimed pass that faults the pages in.
double measure_triad_bandwidth(size_t total_bytes = size_t{256} << 20, int trials = 5);

/// Measures each distinct (m, n, k) once and remembers it.
class SgemmTable {
 public:
  double flops(const GemmShape& shape);
  /// Every shape measured so far with its FLOP/s.
  const std::map<GemmShape, double>& measured() const { return measured_; }

 private:
  std::map<GemmShape, double> measured_;
};

}  // namespace weft::bench
