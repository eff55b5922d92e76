// attention's backward kernel (launch_attention_backward, attention_kernels.h) called
// directly on device buffers, against the f64 host reference of attention_testing.h on
// its cases (backward_cases: Sq != Sk, odd lengths, head dims 16 to 128, causal, a
// padding mask, a row with every key masked, several problems), each run twice for
// bit-identical results; and the forward (launch_attention) against the reference's y,
// a problem without keys included (y = 0). Part of executor_test; without a GPU each case skips with
// unavailable_reason(), but the head-dim refusal, which touches no device, runs anywhere.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/cuda/attention_kernels.h"
#include "runtime/cuda/attention_testing.h"
#include "runtime/cuda/executor.h"

namespace weft::cuda {
namespace {

using namespace attention_testing;

/// A device copy of a host vector, freed with the test.
template <typename T>
struct DeviceBuffer {
  explicit DeviceBuffer(size_t count) : bytes(count * sizeof(T)) {
    EXPECT_EQ(cudaMalloc(&ptr, bytes > 0 ? bytes : 1), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(ptr, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return static_cast<T*>(ptr); }
  std::vector<T> read() const {
    std::vector<T> host(bytes / sizeof(T));
    EXPECT_EQ(cudaMemcpy(host.data(), ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  void* ptr = nullptr;
  size_t bytes;
};

/// Runs the kernel twice on case `c` with random inputs: both runs bit-identical, the
/// first against the host reference.
void check(const Case& c, uint32_t seed) {
  const AttentionShape& s = c.s;
  const Inputs in = inputs(c, seed);
  const Grads& want = in.want;
  DeviceBuffer<float> q(in.q), k(in.k), v(in.v), y(want.y), dy(in.dy);
  DeviceBuffer<uint8_t> mask(c.mask);
  DeviceBuffer<float> dq(want.dq.size()), dk(want.dk.size()), dv(want.dv.size());
  DeviceBuffer<uint8_t> workspace(attention_backward_workspace_bytes(s));
  std::vector<float> first[3];
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(launch_attention_backward(q.get(), k.get(), v.get(), y.get(), dy.get(),
                                        c.mask.empty() ? nullptr : mask.get(), c.map, dq.get(),
                                        dk.get(), dv.get(), workspace.get(), s, c.scale, c.causal,
                                        /*stream=*/nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got[3] = {dq.read(), dk.read(), dv.read()};
    if (run == 0) {
      expect_close(got[0], want.dq, "dq");
      expect_close(got[1], want.dk, "dk");
      expect_close(got[2], want.dv, "dv");
      for (int t = 0; t < 3; ++t) first[t] = got[t];
    } else {
      for (int t = 0; t < 3; ++t) {
        EXPECT_EQ(0, std::memcmp(first[t].data(), got[t].data(), got[t].size() * sizeof(float)))
            << "output " << t << " differs between two runs";
      }
    }
  }
  DeviceBuffer<float> forward(want.y.size());
  ASSERT_EQ(launch_attention(q.get(), k.get(), v.get(), c.mask.empty() ? nullptr : mask.get(), c.map,
                             forward.get(), s, c.scale, c.causal, /*stream=*/nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_close(forward.read(), want.y, "y");
}

#define SKIP_WITHOUT_GPU() \
  if (!available()) GTEST_SKIP() << unavailable_reason()

TEST(AttentionBackwardKernel, MatchesTheHostReference) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = backward_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check(cases[i], static_cast<uint32_t>(4 * i + 1));
  }
}

TEST(AttentionBackwardKernel, RefusesHeadDimsAbove128) {
  // No device call is made before the refusal: runs without a GPU.
  const AttentionShape s{.batch = 1, .sq = 4, .sk = 4, .d = 129, .dv = 8};
  EXPECT_EQ(launch_attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, {}, nullptr,
                                      nullptr, nullptr, nullptr, s, 1.0f, false, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace weft::cuda
