// attention's kernels (attention_kernels_device.inc) run on the host without a GPU, each
// CUDA thread a fiber (cuda_emulation.h): the backward's two kernels on the cases
// of attention_testing.h against its f64 reference, the forward against the reference's
// y. It checks the kernels' arithmetic, indexing, masks, tile walks and barriers as
// written; attention_kernels_test runs the same cases on a GPU.
#include "runtime/cuda/cuda_emulation.h"  // first: CUDA's built-ins for the kernels' source

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/cuda/attention_testing.h"

namespace weft::cuda {
namespace {
/// The kernels' `extern __shared__` memory, the largest block's (attention_shape.h).
float shared[attention_grad_key_shared_bytes({.d = kAttentionMaxDim, .dv = kAttentionMaxDim}) / sizeof(float)];
}  // namespace
}  // namespace weft::cuda

#include "runtime/cuda/attention_kernels_device.inc"

namespace weft::cuda {
namespace {

using namespace attention_testing;
using emulation::run_grid;

constexpr float kUnwritten = 12345.0f;

TEST(AttentionKernelsEmulated, BackwardAndForwardMatchTheHostReference) {
  const std::vector<Case> cases = backward_cases();
  for (size_t n = 0; n < cases.size(); ++n) {
    SCOPED_TRACE("case " + std::to_string(n));
    const Case& c = cases[n];
    const AttentionShape& s = c.s;
    const Inputs in = inputs(c, static_cast<uint32_t>(4 * n + 1));
    const uint8_t* mask = c.mask.empty() ? nullptr : c.mask.data();
    const AttentionGradWorkspace w = attention_grad_workspace(s);
    std::vector<float> workspace(w.bytes / sizeof(float), kUnwritten);
    float* lse = workspace.data() + w.lse / sizeof(float);
    float* delta = workspace.data() + w.delta / sizeof(float);
    std::vector<float> dq(in.want.dq.size(), kUnwritten), dk(in.want.dk.size(), kUnwritten),
        dv(in.want.dv.size(), kUnwritten), y(in.want.y.size(), kUnwritten);
    // Shared memory starts as garbage, as on a device.
    std::memset(shared, 0x7f, sizeof(shared));
    const int64_t q_tiles = (s.sq + kGradRows - 1) / kGradRows, k_tiles = (s.sk + kGradRows - 1) / kGradRows;
    run_grid(s.batch * q_tiles, kWarps * 32, [&] {
      attention_grad_queries(in.q.data(), in.k.data(), in.v.data(), in.want.y.data(), in.dy.data(), mask, c.map,
                             dq.data(), lse, delta, s, c.scale, c.causal, q_tiles);
    });
    run_grid(s.batch * k_tiles, kWarps * 32, [&] {
      attention_grad_keys(in.q.data(), in.k.data(), in.v.data(), in.dy.data(), mask, c.map, dk.data(), dv.data(),
                          lse, delta, s, c.scale, c.causal, k_tiles);
    });
    const int64_t forward_tiles = (s.sq + kRows - 1) / kRows;
    run_grid(s.batch * forward_tiles, kWarps * 32, [&] {
      attention_forward(in.q.data(), in.k.data(), in.v.data(), mask, c.map, y.data(), s, c.scale, c.causal,
                        forward_tiles);
    });
    expect_close(dq, in.want.dq, "dq");
    expect_close(dk, in.want.dk, "dk");
    expect_close(dv, in.want.dv, "dv");
    // A problem without keys gives y = 0, as the reference does (not 0 / 0).
    expect_close(y, in.want.y, "y");
  }
}

}  // namespace
}  // namespace weft::cuda
