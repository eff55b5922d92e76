#pragma once
// split-reductions: a reduction over the innermost axes and over outer axes, with kept
// axes between them, and few results (a batch norm's per-channel statistics: [N, C, H, W]
// reduced over N, H and W) becomes two: over the innermost axes first (one short row per
// N·C pair), then over what is left. The GPU emitter gives a reduction one thread, warp
// or block per result, so 64 results over 524,288 elements each ran on 64 blocks of a
// 132-SM GPU, and 512 results over 16-element rows on 512 threads; split, the first
// reduction has N·C rows and the second reads N·C values.
//
//   graph @f(%x: f32[8,4,6,5]) {
//     %m = mean(%x) {axes=[0, 2, 3], keepdims=true} : f32[1,4,1,1]
//     return %m
//   }
// becomes
//   graph @f(%x: f32[8,4,6,5]) {
//     %0 = mean(%x) {axes=[2, 3], keepdims=true} : f32[8,4,1,1]
//     %1 = mean(%0) {axes=[0, 2, 3], keepdims=true} : f32[1,4,1,1]
//     return %1
//   }
// (a mean of equal-sized groups' means is the mean; sum, max and min split the same
// way). The second reduction takes every original axis, the inner ones being 1 by then,
// so keepdims and the result's type stay as they were.
//
// A column reduction over several axes (a bias gradient summed over batch and sequence,
// [32, 128, 512] to [512]: 16 blocks of 32 columns) splits the same way, its last
// reduced axis first (32·512 results of 128 rows each), then the others.
//
// Applies to float sum, mean, max and min with fewer than `max_results` results: when
// the innermost axis is reduced, to a run of reduced axes at the end of at least
// `min_inner` elements with a kept axis before it and a reduced one further out; when it
// is kept, to the last reduced axis (at least `min_inner` long) with another reduced
// axis before it. Requires: a
// type-inferred graph. Guarantees: the same values up to float rounding (sums and means
// add in a different order and round the partial results to the element type).
// The GPU pipeline runs it (codegen/cuda_program.cc) before fusion, so an elementwise
// chain feeding the reduction fuses into the first part; the CPU's row kernels do not
// need it.

#include <cstdint>

#include "passes/pass.h"

namespace weft {

struct SplitReductionsOptions {
  int64_t max_results = 4096;
  int64_t min_inner = 4;
};

class SplitReductionsPass : public Pass {
 public:
  explicit SplitReductionsPass(SplitReductionsOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "split-reductions"; }
  StatusOr<bool> run(Graph& g) override;

 private:
  SplitReductionsOptions options_;
};

}  // namespace weft
