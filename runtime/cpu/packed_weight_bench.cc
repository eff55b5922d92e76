// What storing the bf16 weight copies pre-packed (packed_weight.h) would cost the step's
// merged Adam update, which computes each new weight and writes its bf16 copy (#30). A
// hand-written model of that update over mlp's five weights (256-512-512-512-512-256,
// 1,048,576 elements; f32 weight and moments, bf16 gradient), one thread, writing the
// copy in one of these ways:
//   plain         row-major, as the generated update does today;
//   nn            packed for dY·W instead (rows o and o+1 interleaved: 64-byte stores);
//   nt scatter    packed for x·Wᵀ instead, each 16-lane result as 8 bf16 pairs 256 bytes
//                 apart (one AVX-512 dword scatter);
//   both staged   both packings: rows computed in order as today, each row's copy kept
//                 in a block of 16 rows (L1), written every 16 rows as nn and, through
//                 16x16 dword transposes, nt (64-byte stores only); "nn staged" and "nt
//                 staged" write one of the two that way; "both streamed" as "both
//                 staged" with non-temporal stores (no read for ownership of the lines).
// The packings are checked against pack_weight. Figures: the calling thread's CPU time
// per update, min and median of 15 interleaved rounds. Nothing is asserted.
//
//   bazel run -c opt //runtime/cpu:packed_weight_bench
//
// Built for AVX-512 with BF16 whatever the build machine (copts); it refuses to run on a
// CPU without them.

// GCC 12's avx512fintrin.h passes an undefined vector to its unmasked intrinsics and then
// reports it as (maybe) uninitialized wherever they are inlined (transpose16's unpacks):
// a warning about the header, not about this file's values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "runtime/cpu/packed_weight.h"

namespace weft::cpu {
namespace {

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// 64-byte aligned storage, so the packings' 64-byte stores are whole cache lines.
template <typename T>
struct LineAligned {
  using value_type = T;
  LineAligned() = default;
  template <typename U>
  LineAligned(const LineAligned<U>&) {}  // NOLINT: an allocator converts implicitly
  T* allocate(size_t n) { return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64)); }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const LineAligned&) const { return true; }
};
using Bits = std::vector<uint16_t, LineAligned<uint16_t>>;

// One weight W [o, i] with its Adam state, its gradient and its copies.
struct Weight {
  int64_t rows = 0, cols = 0;
  std::vector<float> w, m, v;
  std::vector<uint16_t> grad, plain;
  Bits nn, nt;
  PackedWeightLayout nn_layout() const { return {rows, cols}; }  // B = W (dY·W)
  PackedWeightLayout nt_layout() const { return {cols, rows}; }  // B = Wᵀ (x·Wᵀ)
};

Weight make_weight(int64_t rows, int64_t cols, unsigned seed) {
  Weight x;
  x.rows = rows;
  x.cols = cols;
  const int64_t n = rows * cols;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  x.w.resize(n);
  for (float& e : x.w) e = u(rng);
  x.m.assign(n, 0.0f);
  x.v.assign(n, 0.01f);
  x.grad.assign(n, 0x3c00);  // bf16 0.0078125
  x.plain.assign(n, 0);
  x.nn.assign(x.nn_layout().elements(), 0);
  x.nt.assign(x.nt_layout().elements(), 0);
  return x;
}

// Adam on 16 lanes; returns the new weight.
__m512 adam(__m512 w, __m512& m, __m512& v, __m512 g) {
  m = _mm512_fmadd_ps(_mm512_set1_ps(0.9f), m, _mm512_mul_ps(_mm512_set1_ps(0.1f), g));
  v = _mm512_fmadd_ps(_mm512_set1_ps(0.999f), v,
                      _mm512_mul_ps(_mm512_set1_ps(0.001f), _mm512_mul_ps(g, g)));
  const __m512 d = _mm512_div_ps(m, _mm512_add_ps(_mm512_sqrt_ps(v), _mm512_set1_ps(1e-8f)));
  return _mm512_fnmadd_ps(_mm512_set1_ps(1e-3f), d, w);
}

// Updates the 16 elements at `e` and returns their bf16 copy.
__m256i update16(Weight& x, int64_t e) {
  const __m512 g = _mm512_castsi512_ps(_mm512_slli_epi32(
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(&x.grad[e]))), 16));
  __m512 m = _mm512_loadu_ps(&x.m[e]), v = _mm512_loadu_ps(&x.v[e]);
  const __m512 w = adam(_mm512_loadu_ps(&x.w[e]), m, v, g);
  _mm512_storeu_ps(&x.w[e], w);
  _mm512_storeu_ps(&x.m[e], m);
  _mm512_storeu_ps(&x.v[e], v);
  return (__m256i)_mm512_cvtneps_pbh(w);
}

// One whole cache line of a packing: a plain store, or a non-temporal one (kStream: no
// read for ownership of the line; it goes towards memory instead of staying cached).
template <bool kStream>
void store_line(uint16_t* at, __m512i line) {
  if constexpr (kStream) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(at), line);
  } else {
    _mm512_storeu_si512(at, line);
  }
}

// Rows o and o+1 of one 16-column run interleaved: 32 elements of the nn packing.
template <bool kStream = false>
void store_nn_pair(Weight& x, int64_t o, int64_t i, __m256i row0, __m256i row1) {
  const __m512i pairs = _mm512_or_si512(_mm512_cvtepu16_epi32(row0),
                                        _mm512_slli_epi32(_mm512_cvtepu16_epi32(row1), 16));
  store_line<kStream>(&x.nn[x.nn_layout().offset(o, i)], pairs);
}

// r[j] becomes column j of the 16x16 dword matrix whose rows were r[0..15].
void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
  }
  for (int k = 0; k < 16; k += 4) {
    u[k] = _mm512_unpacklo_epi64(t[k], t[k + 2]);
    u[k + 1] = _mm512_unpackhi_epi64(t[k], t[k + 2]);
    u[k + 2] = _mm512_unpacklo_epi64(t[k + 1], t[k + 3]);
    u[k + 3] = _mm512_unpackhi_epi64(t[k + 1], t[k + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i a0 = _mm512_shuffle_i32x4(u[j], u[j + 4], 0x88);
    const __m512i a1 = _mm512_shuffle_i32x4(u[j], u[j + 4], 0xdd);
    const __m512i b0 = _mm512_shuffle_i32x4(u[j + 8], u[j + 12], 0x88);
    const __m512i b1 = _mm512_shuffle_i32x4(u[j + 8], u[j + 12], 0xdd);
    r[j] = _mm512_shuffle_i32x4(a0, b0, 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(a0, b0, 0xdd);
    r[4 + j] = _mm512_shuffle_i32x4(a1, b1, 0x88);
    r[12 + j] = _mm512_shuffle_i32x4(a1, b1, 0xdd);
  }
}

void update_plain(Weight& x) {
  for (int64_t e = 0; e < x.rows * x.cols; e += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&x.plain[e]), update16(x, e));
  }
}

void update_nn(Weight& x) {
  for (int64_t o = 0; o < x.rows; o += 2) {
    for (int64_t i = 0; i < x.cols; i += 16) {
      const __m256i r0 = update16(x, o * x.cols + i), r1 = update16(x, (o + 1) * x.cols + i);
      store_nn_pair(x, o, i, r0, r1);
    }
  }
}

void update_nt_scatter(Weight& x) {
  const __m256i apart = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                           _mm256_set1_epi32(PackedWeightLayout::kColumnBlock));
  for (int64_t o = 0; o < x.rows; ++o) {
    for (int64_t i = 0; i < x.cols; i += 16) {
      const __m256i copy = update16(x, o * x.cols + i);
      _mm256_i32scatter_epi32(&x.nt[x.nt_layout().offset(i, o)], apart, copy, 4);
    }
  }
}

template <bool kNn, bool kNt, bool kStream = false>
void update_staged(Weight& x) {
  static thread_local std::vector<uint16_t> block;
  block.resize(16 * x.cols);
  for (int64_t o = 0; o < x.rows; ++o) {
    for (int64_t i = 0; i < x.cols; i += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&block[o % 16 * x.cols + i]),
                          update16(x, o * x.cols + i));
    }
    if (o % 16 != 15) continue;
    const int64_t o0 = o - 15;
    for (int64_t i0 = 0; i0 < x.cols; i0 += 32) {
      __m512i r[16];
      for (int k = 0; k < 16 && kNn; k += 2) {
        for (int64_t c = i0; c < i0 + 32; c += 16) {
          store_nn_pair<kStream>(x, o0 + k, c,
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&block[k * x.cols + c])),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&block[(k + 1) * x.cols + c])));
        }
      }
      if (!kNt) continue;
      for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_si512(&block[k * x.cols + i0]);
      transpose16(r);
      for (int p = 0; p < 16; ++p) store_line<kStream>(&x.nt[x.nt_layout().offset(i0 + 2 * p, o0)], r[p]);
    }
  }
}

// Whether the packings written by `update` hold what pack_weight makes of the plain copy
// an update_plain of the same state writes.
bool packings_agree(Weight x, void (*update)(Weight&), bool nn, bool nt) {
  Weight y = x;
  update_plain(y);
  update(x);
  Bits want_nn(x.nn.size()), want_nt(x.nt.size());
  pack_weight(y.plain.data(), /*trans_b=*/false, x.cols, x.nn_layout(), want_nn.data());
  pack_weight(y.plain.data(), /*trans_b=*/true, x.cols, x.nt_layout(), want_nt.data());
  return x.w == y.w && (!nn || x.nn == want_nn) && (!nt || x.nt == want_nt);
}

}  // namespace
}  // namespace weft::cpu

int main() {
  using namespace weft::cpu;
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) {
    std::printf("packed_weight_bench: this CPU has no AVX-512 BF16\n");
    return 1;
  }
  std::vector<Weight> weights;
  const int64_t widths[] = {256, 512, 512, 512, 512, 256};
  for (int l = 0; l < 5; ++l) weights.push_back(make_weight(widths[l + 1], widths[l], l));
  struct Way {
    const char* name;
    void (*update)(Weight&);
    bool nn, nt;
  };
  const Way ways[] = {{"plain", update_plain, false, false},
                      {"nn", update_nn, true, false},
                      {"nt scatter", update_nt_scatter, false, true},
                      {"nn staged", update_staged<true, false>, true, false},
                      {"nt staged", update_staged<false, true>, false, true},
                      {"both staged", update_staged<true, true>, true, true},
                      {"both streamed", update_staged<true, true, true>, true, true}};
  std::vector<std::vector<double>> us(std::size(ways));
  for (int round = 0; round < 15; ++round) {
    for (size_t k = 0; k < std::size(ways); ++k) {
      const double t = thread_seconds();
      for (int rep = 0; rep < 10; ++rep) {
        for (Weight& x : weights) ways[k].update(x);
      }
      us[k].push_back((thread_seconds() - t) / 10 * 1e6);
    }
  }
  std::printf("mlp's merged Adam update (1,048,576 weights), one thread, us of CPU time per update\n");
  for (size_t k = 0; k < std::size(ways); ++k) {
    std::sort(us[k].begin(), us[k].end());
    bool agree = true;
    for (const Weight& x : weights) agree = agree && packings_agree(x, ways[k].update, ways[k].nn, ways[k].nt);
    std::printf("  %-13s min %7.1f  median %7.1f   packings %s\n", ways[k].name, us[k][0],
                us[k][us[k].size() / 2], agree ? "agree with pack_weight" : "WRONG");
  }
  return 0;
}
