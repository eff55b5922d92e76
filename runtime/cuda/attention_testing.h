#pragma once
// What attention's backward kernel's tests share (attention_kernels_test on a GPU,
// attention_kernels_emulation_test on the host): the cases, an f64 host reference of the
// forward and the gradient written here (FlashAttention's formulas from the
// probabilities P, as runtime/reference/composite.cc computes attention_grad, but on
// plain buffers), random inputs and the comparison.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "runtime/cuda/attention_shape.h"
#include "runtime/cuda/index_maps.h"

namespace weft::cuda::attention_testing {

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
inline StridedMap score_map(const AttentionShape& s, const int64_t (&dims)[3]) {
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
inline Grads reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
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

inline std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = dist(gen);
  return out;
}

/// Each element within 1e-4 of the tensor's largest magnitude, NaN exactly where the
/// reference is.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
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

/// Keys from a per-problem length on masked, the mask [batch, 1, sk] broadcast over the
/// queries.
inline Case padded(AttentionShape s, bool causal, const std::vector<int64_t>& lengths) {
  Case c{.s = s, .causal = causal};
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t j = 0; j < s.sk; ++j) c.mask.push_back(j >= lengths[b]);
  }
  c.map = score_map(s, {s.batch, 1, s.sk});
  return c;
}

/// The cases both tests run: Sq != Sk, odd lengths, head dims 16 to 128 (D != Dv too),
/// causal, a padding mask, both, several problems, and a mask [sq, sk] shared by two
/// problems in which query 3 sees no key: NaN in y, its dq row and every key's dk and dv
/// (the reference's convention), finite elsewhere in dq; no queries, no keys.
inline std::vector<Case> backward_cases() {
  std::vector<Case> cases = {
      {.s = {.batch = 1, .sq = 9, .sk = 17, .d = 16, .dv = 16}},
      {.s = {.batch = 2, .sq = 33, .sk = 9, .d = 64, .dv = 64}, .scale = 0.125f},
      {.s = {.batch = 3, .sq = 33, .sk = 17, .d = 64, .dv = 64}, .causal = true},
      {.s = {.batch = 2, .sq = 17, .sk = 33, .d = 128, .dv = 128}, .causal = true, .scale = 0.088f},
      {.s = {.batch = 1, .sq = 70, .sk = 70, .d = 16, .dv = 32}, .causal = true},
      padded({.batch = 2, .sq = 17, .sk = 33, .d = 128, .dv = 128}, false, {20, 33}),
      padded({.batch = 3, .sq = 33, .sk = 33, .d = 128, .dv = 64}, true, {5, 33, 17}),
  };
  Case row{.s = {.batch = 2, .sq = 9, .sk = 17, .d = 64, .dv = 32}};
  for (int64_t i = 0; i < row.s.sq; ++i) {
    for (int64_t j = 0; j < row.s.sk; ++j) row.mask.push_back(i == 3 || j % 5 == 4);
  }
  row.map = score_map(row.s, {1, row.s.sq, row.s.sk});
  cases.push_back(row);
  // No queries: dk and dv are 0; no keys: dq is 0 (and y, by the reference).
  cases.push_back({.s = {.batch = 2, .sq = 0, .sk = 5, .d = 16, .dv = 16}});
  cases.push_back({.s = {.batch = 2, .sq = 5, .sk = 0, .d = 16, .dv = 16}});
  return cases;
}

/// Case `c`'s random inputs (from `seed`) and the reference's y and gradients.
struct Inputs {
  std::vector<float> q, k, v, dy;
  Grads want;
};

inline Inputs inputs(const Case& c, uint32_t seed) {
  const AttentionShape& s = c.s;
  Inputs in{random_values(s.batch * s.sq * s.d, seed), random_values(s.batch * s.sk * s.d, seed + 1),
            random_values(s.batch * s.sk * s.dv, seed + 2), random_values(s.batch * s.sq * s.dv, seed + 3),
            {}};
  in.want = reference(c, in.q, in.k, in.v, in.dy);
  return in;
}

}  // namespace weft::cuda::attention_testing
