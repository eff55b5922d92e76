#pragma once
// A loop run as one persistent kernel (issue #31, "for small hidden sizes a persistent
// kernel that keeps the recurrent weights on chip across time steps"): the plain data
// a `loop` invocation's body becomes so that one cooperative CUDA kernel runs every
// iteration, instead of a launch per kernel per iteration. Shared by the host side that
// builds it from a lowered body (recurrent_plan.h; bound by persistent_loop.h), the
// device kernel that runs it (recurrent_kernel.h) and the host oracle both are tested
// against (recurrent_reference.h). Plain structs and arrays only: the kernel reads them from one
// device block, the oracle and the emulated kernel from host memory.
//
// The model. An iteration is a list of *phases*, run in order; a grid-wide barrier
// separates each phase from the next and an iteration's last phase from the next
// iteration's first, so a phase sees everything the phases before it wrote. A phase is
//  - a matmul: C = op(A)·op(B), row-major, where op transposes when asked; or
//  - an elementwise phase: a small register program run once per element (r, c) of a
//    rows × cols iteration space, loading operands and storing results through
//    ElementMaps (a broadcast, a window of a wider buffer, a column slice: all are an
//    offset and two strides); or
//  - a row phase: an elementwise phase whose program also sums or averages a register
//    over each row (a layer norm; see PhaseKind below).
// Every buffer a phase names is an entry of `buffers`, whose address may move with the
// iteration (StepAddress): a stacked xs or ys walks its slots, a chained carry starts at
// the loop's initial carry, a shifted carry ends in the loop's carry result. A buffer
// whose address does not move (stride 0, no first, no last) is *invariant*: a matmul whose
// B is invariant (the recurrent weight, a const of the loop) may keep its share of B on
// chip across iterations, which is what makes the kernel persistent.
//
// Element types. Each buffer holds f32, bf16 or f16 elements (StepAddress::type; its
// offsets, strides and leading dimensions count elements of that type). Arithmetic is
// f32: a matmul multiplies its operands' values (exact for bf16 and f16 products) and
// accumulates in f32 (the host oracle in f64), an elementwise program's registers hold
// floats; a load converts to f32 exactly, a store into a bf16 or f16 buffer rounds to
// nearest even (runtime/half_bits.h, as the reference interpreter rounds at each low
// store: passes/round_at_stores.h). A `cast` between f32 and a low type in a body is
// therefore a store into a buffer of that type, or nothing on registers; a low value
// that a kernel's next op reads (autocast's cast of an f32 carry read by a bf16 product,
// a bf16 op's result read by the next) is rounded in its register (kRoundOp), as the
// reference rounds that value when it makes it. In an
// elementwise program a bool is 1.0f or 0.0f (comparisons give them; select, and, or
// and not read them), as the registers hold floats.

#include <cstdint>

#include "ir/host_device.h"
#include "runtime/half_bits.h"

namespace weft::cuda {

/// A buffer's element type (see the top of this file).
enum class ElementType : uint8_t { f32, bf16, f16 };

WEFT_HD inline int64_t element_bytes(ElementType type) { return type == ElementType::f32 ? 4 : 2; }

/// Element `index` of a buffer of `type` at `address`, as a float (exact).
WEFT_HD inline float load_element(uint64_t address, int64_t index, ElementType type) {
  if (type == ElementType::f32) return reinterpret_cast<const float*>(address)[index];
  const uint16_t bits = reinterpret_cast<const uint16_t*>(address)[index];
  return type == ElementType::bf16 ? half_bits::bf16_to_float(bits) : half_bits::f16_to_float(bits);
}

/// `value` rounded to nearest even in `type` (bf16 or f16) and widened back to f32 (f32:
/// unchanged): what a store then a load of it gives.
WEFT_HD inline float round_element(float value, ElementType type) {
  if (type == ElementType::f32) return value;
  return type == ElementType::bf16 ? half_bits::bf16_to_float(half_bits::float_to_bf16(value))
                                   : half_bits::f16_to_float(half_bits::float_to_f16(value));
}

/// Stores `value` as element `index` of a buffer of `type` at `address`, rounded to
/// nearest even when the type is narrower than f32.
WEFT_HD inline void store_element(uint64_t address, int64_t index, ElementType type, float value) {
  if (type == ElementType::f32) {
    reinterpret_cast<float*>(address)[index] = value;
    return;
  }
  reinterpret_cast<uint16_t*>(address)[index] =
      type == ElementType::bf16 ? half_bits::float_to_bf16(value) : half_bits::float_to_f16(value);
}

/// Where one buffer lies in iteration t (t counts iterations in the order they run,
/// 0 … length-1; a reversed loop walks its slots backwards through a negative stride):
/// `first` in iteration 0 when it is not 0 (a chained carry's initial value), `last` in
/// iteration length-1 when it is not 0 (a shifted carry's final result; `first` wins when
/// length is 1 and both are set), else base + t·stride bytes; its elements of `type`.
struct StepAddress {
  uint64_t base = 0;
  int64_t stride = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  ElementType type = ElementType::f32;
};

WEFT_HD inline uint64_t step_address(const StepAddress& a, int64_t t, int64_t length) {
  if (t == 0 && a.first != 0) return a.first;
  if (t == length - 1 && a.last != 0) return a.last;
  return a.base + static_cast<uint64_t>(t * a.stride);
}

WEFT_HD inline bool invariant(const StepAddress& a) {
  return a.stride == 0 && a.first == 0 && a.last == 0;
}

/// Element (r, c) of an elementwise phase's iteration space, in buffer `buffer`: at
/// offset + r·row_stride + c·col_stride elements (of the buffer's type) from the buffer's
/// address. A bias
/// [cols] broadcast over rows has row_stride 0, a scalar both strides 0, a column window
/// of a [rows, W] buffer starting at column s has offset s and row_stride W.
struct ElementMap {
  int32_t buffer = -1;
  int64_t offset = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

/// The register program's pseudo-ops (above every weft::Op value).
inline constexpr uint16_t kLoadOp = 0xFFF0;   ///< r[dst] = operand `a`'s element
inline constexpr uint16_t kStoreOp = 0xFFF1;  ///< result `a`'s element = r[b]
inline constexpr uint16_t kRoundOp = 0xFFF2;  ///< r[dst] = r[a] rounded to ElementType `b` (bf16, f16)
/// gelu's two forms, one op each (its `approximate` attribute is not an operand):
inline constexpr uint16_t kGeluOp = 0xFFF3;      ///< r[dst] = gelu(r[a]), erf's form ("none")
inline constexpr uint16_t kGeluTanhOp = 0xFFF4;  ///< r[dst] = gelu(r[a]), tanh's form ("tanh")
inline constexpr uint16_t kConstOp = 0xFFF5;     ///< r[dst] = the instruction's `value` (a `full`)
/// A row phase's reduction (PhaseKind::row only): r[dst] = the sum (b = kRowSum) or the
/// mean (kRowMean) of r[a] over the columns of the element's row, the same in every column.
inline constexpr uint16_t kRowReduceOp = 0xFFF6;
inline constexpr uint8_t kRowSum = 0, kRowMean = 1;
/// The most reductions one row phase's program may hold (the kernel keeps their values
/// per thread).
inline constexpr int kMaxRowReductions = 8;
/// The most registers a program may use (the plan allocates them; the kernel holds them
/// per thread).
inline constexpr int kMaxCellRegisters = 32;

/// One instruction: a pseudo-op above, or `op` a weft::Op (ir/ops.def) of arity 1 to 3
/// computing r[dst] = op(r[a], r[b], r[c]) on f32 (select's condition is r[a] != 0).
/// Which ops a program may hold is the plan's and the kernel's shared list
/// (recurrent_reference.h, recurrent_op_supported). `value` is kConstOp's constant.
struct CellInstr {
  uint16_t op = 0;
  uint8_t dst = 0;
  uint8_t a = 0;
  uint8_t b = 0;
  uint8_t c = 0;
  float value = 0.0f;
};

/// A row phase is an elementwise phase whose program may hold kRowReduceOp: each row is
/// owned by one block (rows r ≡ block mod blocks), its columns strided over the block's
/// threads. The program runs in passes, one per reduction and a last one: pass j runs the
/// instructions before reduction j for every column of the row (reductions before it read
/// their row's value, kept from their pass) and sums the reduced register over the row
/// (in f32 on the device, in a fixed order: each thread its columns in order, then the
/// block's threads pairwise; the oracle in f64); the last pass runs the whole program and
/// is the only one that stores (stores come last: a result may overwrite an operand).
enum class PhaseKind : uint8_t { matmul, elementwise, row };

/// One phase of an iteration (see the top of this file).
struct RecurrentPhase {
  PhaseKind kind = PhaseKind::elementwise;
  // matmul: C[m,n] = op(A)[m,k] · op(B)[k,n] into buffers[c] (overwritten; A, B and C
  // each of its buffer's type, f32 accumulation, C rounded once when low), reading
  // buffers[a] and buffers[b]; leading dimensions in elements (row-major: A is m×k with
  // lda ≥ k, or k×m when transpose_a). C overlaps neither A nor B.
  int32_t a = -1, b = -1, c = -1;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  uint8_t transpose_a = 0, transpose_b = 0;
  // elementwise and row: rows × cols elements; operand j is maps[first_map + j] (j <
  // operand_count), result j is maps[first_map + operand_count + j]; the program is
  // instrs[first_instr, first_instr + instr_count). A result may be an operand's
  // buffer at the same element (in place); no other overlap between elements.
  int64_t rows = 0, cols = 0;
  int32_t first_map = 0, operand_count = 0, result_count = 0;
  int32_t first_instr = 0, instr_count = 0;
};

/// A matmul phase's partition and B slice on one launch (recurrent_kernel_layout.h).
struct MatmulPlacement;

/// A whole loop, as its kernel reads it: `length` iterations of phases[0, phase_count).
/// `placements` is the kernel's table for one launch (recurrent_kernel_layout.h,
/// matmul_placements: one entry per phase, worked out on the host for placed_blocks
/// blocks and placed_shared_bytes of dynamic shared memory); launch_recurrent refuses a
/// launch it was not worked out for. The host oracle and the plans leave it null.
struct RecurrentProgramView {
  int64_t length = 0;
  int32_t buffer_count = 0;
  int32_t phase_count = 0;
  int32_t map_count = 0;
  int32_t instr_count = 0;
  const StepAddress* buffers = nullptr;
  const RecurrentPhase* phases = nullptr;
  const ElementMap* maps = nullptr;
  const CellInstr* instrs = nullptr;
  const MatmulPlacement* placements = nullptr;
  int64_t placed_blocks = 0;
  uint64_t placed_shared_bytes = 0;
};

}  // namespace weft::cuda
