// attention's backward kernel (launch_attention_backward, attention_kernels.h) called
// directly on device buffers, against an f64 host reference of the gradient written here
// (FlashAttention's formulas from the probabilities P, as runtime/reference/composite.cc
// computes attention_grad): Sq != Sk, odd lengths, head dims 16 to 128, causal, a padding
// mask broadcast over the queries, a row with every key masked, several problems. y is
// the host reference's forward. Part of executor_test; without a GPU each case skips with
// unavailable_reason(), but the head-dim refusal, which touches no device, runs anywhere.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/cuda/attention_kernels.h"
#include "runtime/cuda/executor.h"

namespace weft::cuda {
namespace {

/// One problem set: the shapes, the mask (bool bytes read through `map`, or none) and
/// the attributes.
struct Case {
  AttentionShape s;
  bool causal = false;
  float scale = 0.25f;
  std::vector<uint8_t> mask = {};
  StridedMap map = {};
};

/// The map from each score [batch, sq, sk] to a mask of `dims` (3 axes, each 1 or the
/// scores' size), as plan_attention's broadcast_map makes it.
StridedMap score_map(const AttentionShape& s, const int64_t (&dims)[3]) {
  StridedMap m;
  m.rank = 3;
  const int64_t scores[3] = {s.batch, s.sq, s.sk};
  int64_t in = 1, out = 1;
  for (int d = 2; d >= 0; --d) {
    m.dims[d] = scores[d];
    m.hi[d] = scores[d];
    m.out_strides[d] = out;
    m.in_strides[d] = dims[d] == 1 ? 0 : in;
    out *= scores[d];
    in *= dims[d];
  }
  m.count = out;
  return m;
}

/// The gradients, and the forward's result y (the kernel's input).
struct Grads {
  std::vector<float> y, dq, dk, dv;
};

/// f64 attention and its gradient with the primitives' roundings (q·scale and each score
/// rounded to f32), dS from rowsum(dP ∘ P): a fully masked row is NaN, in y, in its dq
/// and in every dk and dv its P reaches.
Grads reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                const std::vector<float>& v, const std::vector<float>& dy) {
  const AttentionShape& s = c.s;
  Grads g;
  g.y.assign(s.batch * s.sq * s.dv, 0);
  g.dq.assign(s.batch * s.sq * s.d, 0);
  g.dk.assign(s.batch * s.sk * s.d, 0);
  g.dv.assign(s.batch * s.sk * s.dv, 0);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<double> p(s.sq * s.sk), ds(s.sq * s.sk);
    for (int64_t i = 0; i < s.sq; ++i) {
      double m = -inf;
      for (int64_t j = 0; j < s.sk; ++j) {
        int64_t unused = 0;
        const int64_t e = (b * s.sq + i) * s.sk + j;
        const bool masked = (c.causal && j > i) || (!c.mask.empty() && c.mask[map_element(c.map, e, unused)]);
        double dot = 0;
        for (int x = 0; x < s.d; ++x) {
          dot += static_cast<double>(static_cast<float>(q[(b * s.sq + i) * s.d + x] * c.scale)) *
                 k[(b * s.sk + j) * s.d + x];
        }
        p[i * s.sk + j] = masked ? -inf : static_cast<float>(dot);
        m = std::max(m, p[i * s.sk + j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < s.sk; ++j) sum += (p[i * s.sk + j] = std::exp(p[i * s.sk + j] - m));
      double delta = 0;
      for (int64_t j = 0; j < s.sk; ++j) {
        p[i * s.sk + j] /= sum;
        double dp = 0;
        for (int x = 0; x < s.dv; ++x) dp += double{dy[(b * s.sq + i) * s.dv + x]} * v[(b * s.sk + j) * s.dv + x];
        ds[i * s.sk + j] = dp;
        delta += dp * p[i * s.sk + j];
      }
      for (int64_t j = 0; j < s.sk; ++j) ds[i * s.sk + j] = p[i * s.sk + j] * (ds[i * s.sk + j] - delta);
      for (int x = 0; x < s.dv; ++x) {
        double acc = 0;
        for (int64_t j = 0; j < s.sk; ++j) acc += p[i * s.sk + j] * v[(b * s.sk + j) * s.dv + x];
        g.y[(b * s.sq + i) * s.dv + x] = static_cast<float>(acc);
      }
      for (int x = 0; x < s.d; ++x) {
        double acc = 0;
        for (int64_t j = 0; j < s.sk; ++j) acc += ds[i * s.sk + j] * k[(b * s.sk + j) * s.d + x];
        g.dq[(b * s.sq + i) * s.d + x] = static_cast<float>(acc * c.scale);
      }
    }
    for (int64_t j = 0; j < s.sk; ++j) {
      for (int x = 0; x < s.dv; ++x) {
        double acc = 0;
        for (int64_t i = 0; i < s.sq; ++i) acc += p[i * s.sk + j] * dy[(b * s.sq + i) * s.dv + x];
        g.dv[(b * s.sk + j) * s.dv + x] = static_cast<float>(acc);
      }
      for (int x = 0; x < s.d; ++x) {
        double acc = 0;
        for (int64_t i = 0; i < s.sq; ++i) {
          acc += ds[i * s.sk + j] * static_cast<float>(q[(b * s.sq + i) * s.d + x] * c.scale);
        }
        g.dk[(b * s.sk + j) * s.d + x] = static_cast<float>(acc);
      }
    }
  }
  return g;
}

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

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = dist(gen);
  return out;
}

/// Each element within 1e-4 of the tensor's largest magnitude, NaN exactly where the
/// reference is.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float w : want) {
    if (!std::isnan(w)) scale = std::max(scale, std::abs(double{w}));
  }
  int bad = 0;
  for (size_t e = 0; e < got.size() && bad < 5; ++e) {
    const bool ok = std::isnan(want[e]) ? std::isnan(got[e])
                                        : std::abs(double{got[e]} - want[e]) <= 1e-4 * std::max(scale, 1e-3);
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << "[" << e << "] = " << got[e] << ", want " << want[e] << " (largest " << scale << ")";
    }
  }
}

/// Runs the kernel twice on `c` with random q, k, v, dy: both runs bit-identical, the
/// first against the host reference.
void check(const Case& c, uint32_t seed) {
  const AttentionShape& s = c.s;
  const std::vector<float> q = random_values(s.batch * s.sq * s.d, seed);
  const std::vector<float> k = random_values(s.batch * s.sk * s.d, seed + 1);
  const std::vector<float> v = random_values(s.batch * s.sk * s.dv, seed + 2);
  const std::vector<float> dy = random_values(s.batch * s.sq * s.dv, seed + 3);
  const Grads want = reference(c, q, k, v, dy);
  DeviceBuffer<float> dq_d(q), dk_d(k), dv_d(v), y_d(want.y), dy_d(dy);
  DeviceBuffer<uint8_t> mask_d(c.mask);
  DeviceBuffer<float> dq(want.dq.size()), dk(want.dk.size()), dv(want.dv.size());
  DeviceBuffer<uint8_t> workspace(attention_backward_workspace_bytes(s));
  std::vector<float> first[3];
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(launch_attention_backward(dq_d.get(), dk_d.get(), dv_d.get(), y_d.get(), dy_d.get(),
                                        c.mask.empty() ? nullptr : mask_d.get(), c.map, dq.get(),
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
}

#define SKIP_WITHOUT_GPU() \
  if (!available()) GTEST_SKIP() << unavailable_reason()

TEST(AttentionBackwardKernel, CrossLengthsWithoutMask) {
  SKIP_WITHOUT_GPU();
  check({.s = {.batch = 1, .sq = 9, .sk = 17, .d = 16, .dv = 16}}, 1);
  check({.s = {.batch = 2, .sq = 33, .sk = 9, .d = 64, .dv = 64}, .scale = 0.125f}, 2);
}

TEST(AttentionBackwardKernel, CausalOverSeveralHeads) {
  SKIP_WITHOUT_GPU();
  check({.s = {.batch = 3, .sq = 33, .sk = 17, .d = 64, .dv = 64}, .causal = true}, 3);
  check({.s = {.batch = 2, .sq = 17, .sk = 33, .d = 128, .dv = 128}, .causal = true, .scale = 0.088f}, 4);
  check({.s = {.batch = 1, .sq = 70, .sk = 70, .d = 16, .dv = 32}, .causal = true}, 5);
}

/// Keys from a per-problem length on masked, the mask [batch, 1, sk] broadcast over the
/// queries.
Case padded(AttentionShape s, bool causal, const std::vector<int64_t>& lengths) {
  Case c{.s = s, .causal = causal};
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t j = 0; j < s.sk; ++j) c.mask.push_back(j >= lengths[b]);
  }
  c.map = score_map(s, {s.batch, 1, s.sk});
  return c;
}

TEST(AttentionBackwardKernel, PaddingMask) {
  SKIP_WITHOUT_GPU();
  check(padded({.batch = 2, .sq = 17, .sk = 33, .d = 128, .dv = 128}, false, {20, 33}), 6);
  check(padded({.batch = 3, .sq = 33, .sk = 33, .d = 128, .dv = 64}, true, {5, 33, 17}), 7);
}

TEST(AttentionBackwardKernel, FullyMaskedRowIsNaN) {
  SKIP_WITHOUT_GPU();
  // A mask [sq, sk] shared by both problems; query 3 sees no key: NaN in y, its dq row
  // and every key's dk and dv (the reference's convention), finite elsewhere in dq.
  Case c{.s = {.batch = 2, .sq = 9, .sk = 17, .d = 64, .dv = 32}};
  for (int64_t i = 0; i < c.s.sq; ++i) {
    for (int64_t j = 0; j < c.s.sk; ++j) c.mask.push_back(i == 3 || j % 5 == 4);
  }
  c.map = score_map(c.s, {1, c.s.sq, c.s.sk});
  check(c, 8);
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
