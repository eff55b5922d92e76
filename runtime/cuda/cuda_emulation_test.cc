// cuda_emulation.h's warp-level tensor-core product alone: a 16×8×16 product whose every
// element of A, B and C is distinct, packed into each lane's fragments as this test reads
// the PTX ISA's layout (written apart from the emulation and from the kernel that calls
// it, recurrent_kernel_device.inc), against a plain loop. The values are small integers,
// exact in bf16 and f16, whose products and sums no float rounding touches: the result
// must be exact. A second warp of the block computes another product at the same time
// (the collective is per warp).
#include "runtime/cuda/cuda_emulation.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/half_bits.h"

namespace weft::cuda {
namespace {

using emulation::MmaType;

struct Product {
  float a[16][16], b[16][8], c[16][8];
};

/// A's, B's and C's elements all distinct within each: -128 … 127, -64 … 63, and
/// offset multiples of 3 (exact in bf16's 8 significant bits and f16's 11).
Product distinct_product(int seed) {
  Product p;
  for (int r = 0; r < 16; ++r) {
    for (int q = 0; q < 16; ++q) p.a[r][q] = static_cast<float>((r * 16 + q + 37 * seed) % 256 - 128);
  }
  for (int q = 0; q < 16; ++q) {
    for (int j = 0; j < 8; ++j) p.b[q][j] = static_cast<float>((q * 8 + j * 3 + 11 * seed) % 128 - 64);
  }
  for (int r = 0; r < 16; ++r) {
    for (int j = 0; j < 8; ++j) p.c[r][j] = static_cast<float>(3 * (r * 8 + j) - 200 + seed);
  }
  return p;
}

uint16_t bits(float x, MmaType type) {
  return type == MmaType::bf16 ? half_bits::float_to_bf16(x) : half_bits::float_to_f16(x);
}

uint32_t pack(float low, float high, MmaType type) {
  return static_cast<uint32_t>(bits(low, type)) | static_cast<uint32_t>(bits(high, type)) << 16;
}

void expect_exact_products(MmaType type) {
  constexpr unsigned kWarps = 2;
  const Product products[kWarps] = {distinct_product(0), distinct_product(1)};
  std::vector<float> got(kWarps * 16 * 8, -1.0f);
  emulation::run_grid(1, 32 * kWarps, [&] {
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const Product& p = products[warp];
    const int g = static_cast<int>(lane / 4), t = static_cast<int>(lane % 4);
    // The PTX ISA's fragments for m16n8k16 (.bf16/.f16 A and B, .f32 C and D).
    const uint32_t a[4] = {pack(p.a[g][2 * t], p.a[g][2 * t + 1], type),
                           pack(p.a[g + 8][2 * t], p.a[g + 8][2 * t + 1], type),
                           pack(p.a[g][2 * t + 8], p.a[g][2 * t + 9], type),
                           pack(p.a[g + 8][2 * t + 8], p.a[g + 8][2 * t + 9], type)};
    const uint32_t b[2] = {pack(p.b[2 * t][g], p.b[2 * t + 1][g], type),
                           pack(p.b[2 * t + 8][g], p.b[2 * t + 9][g], type)};
    const float c[4] = {p.c[g][2 * t], p.c[g][2 * t + 1], p.c[g + 8][2 * t], p.c[g + 8][2 * t + 1]};
    float d[4];
    emulation::mma_m16n8k16(type, d, a, b, c);
    float* out = got.data() + warp * 128;
    out[g * 8 + 2 * t] = d[0], out[g * 8 + 2 * t + 1] = d[1];
    out[(g + 8) * 8 + 2 * t] = d[2], out[(g + 8) * 8 + 2 * t + 1] = d[3];
  });
  for (unsigned w = 0; w < kWarps; ++w) {
    const Product& p = products[w];
    for (int r = 0; r < 16; ++r) {
      for (int j = 0; j < 8; ++j) {
        float want = p.c[r][j];
        for (int q = 0; q < 16; ++q) want += p.a[r][q] * p.b[q][j];
        EXPECT_EQ(got[w * 128 + r * 8 + j], want) << "warp " << w << " D[" << r << "][" << j << "]";
      }
    }
  }
}

TEST(CudaEmulation, MmaM16n8k16Bf16MatchesAPlainLoopExactly) { expect_exact_products(MmaType::bf16); }

TEST(CudaEmulation, MmaM16n8k16F16MatchesAPlainLoopExactly) { expect_exact_products(MmaType::f16); }

TEST(CudaEmulation, MmaElementsDecodeSpecialF16Values) {
  EXPECT_EQ(emulation::mma_element(0x3c00u, 0, MmaType::f16), 1.0f);
  EXPECT_EQ(emulation::mma_element(0x00010000u, 1, MmaType::f16), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(emulation::mma_element(0x7bffu, 0, MmaType::f16), 65504.0f);
  EXPECT_TRUE(std::isinf(emulation::mma_element(0xfc00u, 0, MmaType::f16)));
  EXPECT_TRUE(std::isnan(emulation::mma_element(0x7e00u, 0, MmaType::f16)));
  EXPECT_EQ(emulation::mma_element(0xc0490000u, 1, MmaType::bf16), -3.140625f);
}

// The fibers (one per CUDA thread): every thread of a block sees every other's write
// after __syncthreads, run_grid's blocks know their blockIdx, and a cooperative grid's
// blocks meet at a barrier polled through __nanosleep, as recurrent_kernel_device.inc's.
TEST(CudaEmulation, BarriersOrderWritesWithinBlocksAndAcrossACooperativeGrid) {
  constexpr unsigned kBlocks = 3, kThreads = 64;
  std::vector<unsigned> seen(kBlocks * kThreads, 0), written(kBlocks * kThreads, 0);
  emulation::run_grid(kBlocks, kThreads, [&] {
    const unsigned i = blockIdx.x * kThreads + threadIdx.x;
    written[i] = i + 1;
    __syncthreads();
    seen[i] = written[blockIdx.x * kThreads + (threadIdx.x + 1) % kThreads];  // a later thread's
  });
  for (unsigned i = 0; i < kBlocks * kThreads; ++i) {
    EXPECT_EQ(seen[i], i / kThreads * kThreads + (i % kThreads + 1) % kThreads + 1) << "thread " << i;
  }
  unsigned arrived = 0;
  std::vector<unsigned> after(kBlocks, 0);
  emulation::run_cooperative_grid(kBlocks, kThreads, /*shared_bytes=*/0, [&] {
    if (threadIdx.x == 0) {
      atomicAdd(&arrived, 1u);
      const volatile unsigned* poll = &arrived;
      while (*poll < kBlocks) __nanosleep(32);
      after[blockIdx.x] = *poll;
    }
    __syncthreads();
  });
  for (unsigned b = 0; b < kBlocks; ++b) EXPECT_EQ(after[b], kBlocks) << "block " << b;
}

#if defined(WEFT_CUDA_EMULATION_ASAN)
/// Throws from `depth` frames down, each with an array that AddressSanitizer guards with
/// poisoned redzones.
[[gnu::noinline]] int throw_from_below(int depth) {
  volatile char pad[128];
  pad[depth % 128] = static_cast<char>(depth);
  if (depth == 0) throw depth;
  return throw_from_below(depth - 1) + pad[depth % 128];
}
#endif

// Under AddressSanitizer (tools/sanitize asan), each switch between the launching
// thread's stack and a fiber's is announced to it (cuda_emulation.h), so it knows which
// stack a fiber runs on: an exception unwinding frames inside a kernel clears their
// redzones. Unannounced, it ignored the unwinding (its thread's stack is elsewhere:
// "False positive error reports may follow"), and the redzones stayed poisoned below the
// catching frame, where the fiber's next calls could report stack-buffer-overflows that
// are not there. Without the sanitizer there is nothing to check.
TEST(CudaEmulation, AFibersStackIsKnownToAddressSanitizer) {
#if !defined(WEFT_CUDA_EMULATION_ASAN)
  GTEST_SKIP() << "not built with AddressSanitizer";
#else
  constexpr unsigned kThreads = 32;
  std::vector<const void*> poisoned(kThreads, nullptr);
  emulation::run_grid(1, kThreads, [&] {
    volatile char here = 0;
    const char* const frame = const_cast<const char*>(&here);
    try {
      throw_from_below(/*depth=*/48);
    } catch (int) {
    }
    // Where the unwound frames were (48 of about 200 bytes each).
    poisoned[threadIdx.x] = __asan_region_is_poisoned(const_cast<char*>(frame) - 6144, 5120);
  });
  for (unsigned t = 0; t < kThreads; ++t) EXPECT_EQ(poisoned[t], nullptr) << "thread " << t;
#endif
}

// A barrier that some of the block's threads never reach hangs a device; here it aborts.
TEST(CudaEmulationDeathTest, ABarrierNotEveryThreadReachesIsADeadlock) {
  EXPECT_DEATH(emulation::run_grid(1, 64, [] {
                 if (threadIdx.x != 5) __syncthreads();
               }),
               "cuda_emulation: deadlock: every thread left waits on a barrier, block 0 thread 0 among them");
}

}  // namespace
}  // namespace weft::cuda
