#pragma once
// A bf16 GEMM's weight operand B, stored pre-packed in the blocked layout oneDNN 2.6's
// bf16 brgemm matmul reads (issue #30). Given B plain, oneDNN packs it into this layout
// inside every call — in each row part of a call split over threads — which costs
// 7–15% of the M = 64 weight GEMMs of the suite's mlp and residual_tower on one
// core (bench/RESULTS.md, "[Mixed precision] #30: pre-packed bf16 weights"). A copy
// stored packed lets the GEMM skip that.
//
// The layout (oneDNN's format tag BA16a64b2a, which its brgemm chooses for
// format_tag::any on AVX512_BF16 for every training shape of the three GEMM-bound models;
// runtime/cpu:matmul_bf16_test `PackedWeightTest.IsOnednnsChoice` checks it against the oneDNN
// that is linked): B [K, N] padded with zeros to K' = K rounded up to 32 and N' = N
// rounded up to 64, then
//
//   packed[n / 64][k / 2][n % 64][k % 2] = B[k][n]        ([N'/64][K'/2][64][2])
//
// an affine permutation of B: pairs of consecutive k for one n are adjacent (brgemm's
// vdpbf16ps takes bf16 pairs), 64 columns of one k pair are one 256-byte row. For a
// weight W [O, I] (x·Wᵀ forward, B = Wᵀ: k = i, n = o; dY·W backward, B = W: k = o,
// n = i) the two orientations are two different packings of W:
//
//   forward  packed[o / 64][i / 2][o % 64][i % 2] = W[o][i]
//   backward packed[i / 64][o / 2][i % 64][o % 2] = W[o][i]
//
//   PackedWeightLayout layout{/*k=*/784, /*n=*/512};        // 800 x 512 elements
//   std::vector<uint16_t> packed(layout.elements());
//   pack_weight(w, /*trans_b=*/true, /*ldb=*/784, layout, packed.data());  // x·Wᵀ's B
//
// Only runtime/cpu's bf16 matmul kernel reads it (matmul_onednn.cc, GemmPlan::b_packed),
// today from tests and half_bench: no lowering stores a weight packed yet (planned, #30:
// the step's merged update would write the packed copies, runtime/cpu/README.md). The
// same RESULTS section measures that writing them costs a model of that update about
// what the GEMMs save (packed_weight_bench).

#include <cstdint>

namespace weft::cpu {

/// Where each element of a bf16 B [k, n] lies when packed (above).
struct PackedWeightLayout {
  static constexpr int64_t kColumnBlock = 64;  ///< n per block (one 256-byte row)
  static constexpr int64_t kRowBlock = 32;     ///< K is padded to a multiple of this
  int64_t k = 0, n = 0;

  int64_t padded_k() const { return (k + kRowBlock - 1) / kRowBlock * kRowBlock; }
  int64_t padded_n() const { return (n + kColumnBlock - 1) / kColumnBlock * kColumnBlock; }
  /// The packed buffer's length in elements, padding included.
  int64_t elements() const { return padded_k() * padded_n(); }
  /// The element offset of B[row][column] in the packed buffer.
  int64_t offset(int64_t row, int64_t column) const {
    return column / kColumnBlock * padded_k() * kColumnBlock + row / 2 * (2 * kColumnBlock) +
           column % kColumnBlock * 2 + row % 2;
  }
};

/// Packs B into `packed` (layout.elements() elements, the padding set to zero): B[k][n]
/// is b[k·ldb + n], or b[n·ldb + k] when `trans_b` (B given as its transpose, as a weight
/// W [n, k] is for x·Wᵀ). Elements are bf16 bits, copied unchanged.
void pack_weight(const uint16_t* b, bool trans_b, int64_t ldb, const PackedWeightLayout& layout,
                 uint16_t* packed);

}  // namespace weft::cpu
