#pragma once
// Tests' owner of a persistent loop program (recurrent_program.h): the arrays a
// RecurrentProgramView points into, a few constructors that read like the program, and
// the persistent loop kernel's cases (kernel_cases), which its emulation test runs on
// the host and recurrent_kernel_test on a GPU, each against the host oracle.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/op.h"
#include "runtime/cuda/recurrent_kernel_layout.h"
#include "runtime/cuda/recurrent_program.h"
#include "runtime/cuda/recurrent_reference.h"

namespace weft::cuda::recurrent_testing {

/// A program built by hand (one iteration unless a test says more), with a constructor
/// for its elementwise phases.
struct Program : RecurrentProgram {
  Program() { length = 1; }

  /// Appends an elementwise phase of rows × cols with these maps and instructions.
  void elementwise(int64_t rows, int64_t cols, const std::vector<ElementMap>& operands,
                   const std::vector<ElementMap>& results, const std::vector<CellInstr>& code) {
    RecurrentPhase ph;
    ph.rows = rows, ph.cols = cols;
    ph.first_map = static_cast<int32_t>(maps.size());
    ph.operand_count = static_cast<int32_t>(operands.size());
    ph.result_count = static_cast<int32_t>(results.size());
    ph.first_instr = static_cast<int32_t>(instrs.size());
    ph.instr_count = static_cast<int32_t>(code.size());
    maps.insert(maps.end(), operands.begin(), operands.end());
    maps.insert(maps.end(), results.begin(), results.end());
    instrs.insert(instrs.end(), code.begin(), code.end());
    phases.push_back(ph);
  }

  /// Appends a row phase (recurrent_program.h: its program may hold row reductions).
  void row(int64_t rows, int64_t cols, const std::vector<ElementMap>& operands, const std::vector<ElementMap>& results,
           const std::vector<CellInstr>& code) {
    elementwise(rows, cols, operands, results, code);
    phases.back().kind = PhaseKind::row;
  }
};

/// C[m, n] = A·B from buffers a, b into c, leading dimensions the extents.
inline RecurrentPhase matmul(int32_t a, int32_t b, int32_t c, int64_t m, int64_t n, int64_t k) {
  RecurrentPhase ph;
  ph.kind = PhaseKind::matmul;
  ph.a = a, ph.b = b, ph.c = c, ph.m = m, ph.n = n, ph.k = k, ph.lda = k, ph.ldb = n, ph.ldc = n;
  return ph;
}

/// r[dst] = operand `operand`'s element.
inline CellInstr load(int dst, int operand) {
  return {kLoadOp, static_cast<uint8_t>(dst), static_cast<uint8_t>(operand)};
}
/// Result `result`'s element = r[reg].
inline CellInstr store(int result, int reg) {
  return {kStoreOp, 0, static_cast<uint8_t>(result), static_cast<uint8_t>(reg)};
}
/// r[dst] = o(r[a], r[b], r[c]).
inline CellInstr op(Op o, int dst, int a, int b = 0, int c = 0) {
  return {static_cast<uint16_t>(o), static_cast<uint8_t>(dst), static_cast<uint8_t>(a), static_cast<uint8_t>(b),
          static_cast<uint8_t>(c)};
}
/// r[dst] = gelu(r[a]) in erf's form, or tanh's when `tanh`.
inline CellInstr gelu(int dst, int a, bool tanh = false) {
  return {tanh ? kGeluTanhOp : kGeluOp, static_cast<uint8_t>(dst), static_cast<uint8_t>(a)};
}
/// r[dst] = `value`.
inline CellInstr constant(int dst, float value) {
  CellInstr in{kConstOp, static_cast<uint8_t>(dst)};
  in.value = value;
  return in;
}
/// r[dst] = the row's sum of r[a] (kRowSum) or its mean (kRowMean).
inline CellInstr row_reduce(int dst, int a, uint8_t kind) {
  return {kRowReduceOp, static_cast<uint8_t>(dst), static_cast<uint8_t>(a), kind};
}


/// The arrays a case's program points into, and their initial values.
using Storage = std::vector<std::vector<float>>;
/// Where each array of a Storage lies (host or device addresses).
using Bases = std::vector<uint64_t>;
/// Builds a program whose buffers point into the arrays at `bases`.
using Builder = std::function<Program(const Bases& bases)>;

/// The address of element `floats` of array `array`.
inline uint64_t at(const Bases& bases, size_t array, int64_t floats = 0) {
  return bases[array] + static_cast<uint64_t>(4 * floats);
}

inline Bases host_bases(Storage& storage) {
  Bases bases;
  for (std::vector<float>& v : storage) bases.push_back(reinterpret_cast<uint64_t>(v.data()));
  return bases;
}

/// A kernel's result against the oracle's: relative 1e-5 (the oracle sums matmuls in
/// f64, the kernel in f32 FMAs), NaN where the oracle has NaN. In bf16 or f16 buffers,
/// 4 units in the last place of the type (relative 2⁻⁶ in bf16, 2⁻⁸ in f16): a sum the
/// kernel and the oracle round to f32 differently may round to a neighbouring bf16 at
/// its store, and the next steps carry that difference on.
inline bool close(float got, float want, ElementType type = ElementType::f32) {
  if (std::isnan(want)) return std::isnan(got);
  const float tolerance = type == ElementType::f32 ? 1e-5f : type == ElementType::bf16 ? 0x1p-6f : 0x1p-8f;
  return std::fabs(got - want) <= tolerance * std::max(1.0f, std::fabs(want));
}

inline std::vector<float> random_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// h_{t+1} = tanh(h_t·W + x_t), h chained through the ys (slot t-1, h0 first), W
// invariant; `reversed` walks the slots from the last. Storage: h0, W, G, xs, ys.
inline Storage rnn_storage(int64_t steps, int64_t batch, int64_t hidden) {
  return {random_values(batch * hidden, 1), random_values(hidden * hidden, 2),
          std::vector<float>(static_cast<size_t>(batch * hidden)), random_values(steps * batch * hidden, 3),
          std::vector<float>(static_cast<size_t>(steps * batch * hidden))};
}

inline Builder rnn(int64_t steps, int64_t batch, int64_t hidden, bool reversed) {
  return [=](const Bases& s) {
    Program p;
    p.length = steps;
    const int64_t slot = batch * hidden;
    const int64_t first = reversed ? (steps - 1) * slot : 0, step = 4 * (reversed ? -slot : slot);
    p.buffers = {{at(s, 4, first) - step, step, at(s, 0), 0},
                 {at(s, 1)},
                 {at(s, 2)},
                 {at(s, 3, first), step},
                 {at(s, 4, first), step}};
    p.phases = {matmul(0, 1, 2, batch, hidden, hidden)};
    p.elementwise(batch, hidden, {{2, 0, hidden, 1}, {3, 0, hidden, 1}}, {{4, 0, hidden, 1}},
                {load(0, 0), load(1, 1), op(Op::Add, 2, 0, 1), op(Op::Tanh, 3, 2), store(0, 3)});
    return p;
  };
}

// A layer-normed RNN: G = h_t·W (W invariant), then a row phase over [batch, hidden]:
// z = G + x_t; n = (z − mean z) · rsqrt(mean (z − mean z)² + 1e-5); a = gelu_tanh(n);
// h_{t+1} = gelu(a − sum(a)/64), written into the ys (chained, as rnn's). Storage as
// rnn_storage's; a hidden wider than a block's threads puts several columns on a thread.
inline Builder norm_rnn(int64_t steps, int64_t batch, int64_t hidden) {
  return [=](const Bases& s) {
    Program p = rnn(steps, batch, hidden, false)(s);
    p.phases.pop_back();  // rnn's elementwise phase, replaced by the row phase
    p.maps.clear(), p.instrs.clear();
    p.row(batch, hidden, {{2, 0, hidden, 1}, {3, 0, hidden, 1}}, {{4, 0, hidden, 1}},
          {load(0, 0), load(1, 1), op(Op::Add, 2, 0, 1), row_reduce(3, 2, kRowMean), op(Op::Sub, 4, 2, 3),
           op(Op::Mul, 5, 4, 4), row_reduce(6, 5, kRowMean), constant(7, 1e-5f), op(Op::Add, 8, 6, 7),
           op(Op::Rsqrt, 9, 8), op(Op::Mul, 10, 4, 9), gelu(11, 10, true), row_reduce(12, 11, kRowSum),
           constant(13, 1.0f / 64), op(Op::Mul, 14, 12, 13), op(Op::Sub, 15, 11, 14), gelu(16, 15), store(0, 16)});
    return p;
  };
}

// An LSTM step: gates = h·W ([B, 4H], W invariant), then the cell over [B, H] reading the
// four column windows of the gates and of the step's projected input xp_t, c in place:
//   c = σ(f)·c + σ(i)·tanh(g);  h = σ(o)·tanh(c)
// h written into the ys hs (chained: the next step's h), c also into the ys cs.
// Storage: h0, c, W, xp, gates, hs, cs.
constexpr int64_t kSteps = 4, kBatch = 3, kHidden = 6;

inline Storage lstm_storage() {
  const int64_t g = 4 * kHidden;
  return {random_values(kBatch * kHidden, 11), random_values(kBatch * kHidden, 12),
          random_values(kHidden * g, 13),      random_values(kSteps * kBatch * g, 14),
          std::vector<float>(kBatch * g),      std::vector<float>(kSteps * kBatch * kHidden),
          std::vector<float>(kSteps * kBatch * kHidden)};
}

inline Program lstm(const Bases& s) {
  const int64_t g = 4 * kHidden, slot = kBatch * kHidden;
  Program p;
  p.length = kSteps;
  // 0 h, 1 W, 2 gates, 3 xp_t, 4 c, 5 hs_t, 6 cs_t.
  p.buffers = {{at(s, 5) - 4 * slot, 4 * slot, at(s, 0), 0},
               {at(s, 2)},
               {at(s, 4)},
               {at(s, 3), 4 * kBatch * g},
               {at(s, 1)},
               {at(s, 5), 4 * slot},
               {at(s, 6), 4 * slot}};
  p.phases = {matmul(0, 1, 2, kBatch, g, kHidden)};
  std::vector<ElementMap> operands;
  for (int32_t buffer : {2, 3}) {
    for (int64_t w = 0; w < 4; ++w) operands.push_back({buffer, w * kHidden, g, 1});  // i, f, g, o
  }
  operands.push_back({4, 0, kHidden, 1});  // c
  std::vector<CellInstr> code;
  for (int j = 0; j < 9; ++j) code.push_back(load(j, j));
  code.insert(code.end(), {op(Op::Add, 9, 0, 4),   op(Op::Sigmoid, 9, 9),  op(Op::Add, 10, 1, 5),
                           op(Op::Sigmoid, 10, 10), op(Op::Add, 11, 2, 6),  op(Op::Tanh, 11, 11),
                           op(Op::Add, 12, 3, 7),   op(Op::Sigmoid, 12, 12), op(Op::Mul, 13, 10, 8),
                           op(Op::Mul, 14, 9, 11),  op(Op::Add, 13, 13, 14), op(Op::Tanh, 15, 13),
                           op(Op::Mul, 15, 12, 15), store(0, 13),           store(1, 15),
                           store(2, 13)});
  p.elementwise(kBatch, kHidden, operands, {{4, 0, kHidden, 1}, {5, 0, kHidden, 1}, {6, 0, kHidden, 1}}, code);
  return p;
}

// The backward's shape, walking the steps from the last: dG = dh ∘ act_t written as four
// [B, H] windows of a [B, 4H] buffer; dh' = dG·Wᵀ (W [H, 4H] invariant, transposed);
// dh'' = dh' + dy_t into a shifted carry (iteration t reads slot t, writes slot t+1, the
// last iteration the carry's result). Storage: dhs (slot 0 the initial dh), W, act, dG,
// dh', dys, result.
inline Storage backward_storage() {
  const int64_t g = 4 * kHidden;
  Storage s = {std::vector<float>((kSteps + 1) * kBatch * kHidden),
               random_values(kHidden * g, 21),
               random_values(kSteps * kBatch * g, 22),
               std::vector<float>(kBatch * g),
               std::vector<float>(kBatch * kHidden),
               random_values(kSteps * kBatch * kHidden, 23),
               std::vector<float>(kBatch * kHidden)};
  const std::vector<float> dh0 = random_values(kBatch * kHidden, 24);
  std::copy(dh0.begin(), dh0.end(), s[0].begin());
  return s;
}

inline Program backward(const Bases& s) {
  const int64_t g = 4 * kHidden, slot = kBatch * kHidden;
  Program p;
  p.length = kSteps;
  // 0 dh (slot t), 1 W, 2 act_t (reversed), 3 dG, 4 dh', 5 dy_t (reversed), 6 dh out (slot t+1).
  p.buffers = {{at(s, 0), 4 * slot},
               {at(s, 1)},
               {at(s, 2, (kSteps - 1) * kBatch * g), -4 * kBatch * g},
               {at(s, 3)},
               {at(s, 4)},
               {at(s, 5, (kSteps - 1) * slot), -4 * slot},
               {at(s, 0, slot), 4 * slot, 0, at(s, 6)}};
  std::vector<ElementMap> operands = {{0, 0, kHidden, 1}}, results;
  std::vector<CellInstr> code = {load(0, 0)};
  for (int w = 0; w < 4; ++w) {
    operands.push_back({2, w * kHidden, g, 1});
    results.push_back({3, w * kHidden, g, 1});
    code.insert(code.end(), {load(1 + w, 1 + w), op(Op::Mul, 5 + w, 0, 1 + w), store(w, 5 + w)});
  }
  p.elementwise(kBatch, kHidden, operands, results, code);
  RecurrentPhase mm = matmul(3, 1, 4, kBatch, kHidden, g);
  mm.transpose_b = 1, mm.ldb = g;
  p.phases.push_back(mm);
  p.elementwise(kBatch, kHidden, {{4, 0, kHidden, 1}, {5, 0, kHidden, 1}}, {{6, 0, kHidden, 1}},
              {load(0, 0), load(1, 1), op(Op::Add, 2, 0, 1), store(0, 2)});
  return p;
}

// C = op(A)·op(B) three times per iteration over padded leading dimensions, every
// transpose, shapes that are no multiple of anything: a block's tile (20 × 14 on 3
// blocks of 64 threads) is one panel of 5 × 4 micro-tiles of 4 × 4 (the last column of
// them half past the tile: computed, not stored), k = 9 split 3 ways. The first's B
// moves with the iteration; the second's and third's A moves and their B (two weights,
// two slices at different offsets in shared memory) are invariant. Storage: A0, B0, C0,
// As, B1, Cs, B2, C2s.
inline Builder matmuls(bool transpose_a, bool transpose_b) {
  return [=](const Bases& s) {
    const int64_t m = 20, n = 40, k = 9, pad = 3;
    Program p;
    p.length = 2;
    p.buffers = {{at(s, 0)}, {at(s, 1), 4 * 2}, {at(s, 2)}, {at(s, 3), 4 * 400}, {at(s, 4)}, {at(s, 5), 4 * m * n},
                 {at(s, 6)}, {at(s, 7), 4 * m * n}};
    RecurrentPhase first = matmul(0, 1, 2, m, n, k);
    first.lda = (transpose_a ? m : k) + pad, first.ldb = (transpose_b ? k : n) + pad;
    first.transpose_a = transpose_a, first.transpose_b = transpose_b;
    RecurrentPhase second = first, third = first;
    second.a = 3, second.b = 4, second.c = 5;
    third.a = 3, third.b = 6, third.c = 7;
    p.phases = {first, second, third};
    return p;
  };
}

// A weight gradient's shape: G = tanh(x_t) into a scratch G [k, n] whose address does not
// move, then C_t = A·G with A [m, k] invariant. G is written in each iteration, so it is no
// constant of the loop: read from global memory, never kept from before the loop.
// Storage: xs, G, A, Cs.
inline Builder scratch_b(int64_t steps, int64_t m, int64_t n, int64_t k) {
  return [=](const Bases& s) {
    Program p;
    p.length = steps;
    p.buffers = {{at(s, 0), 4 * k * n}, {at(s, 1)}, {at(s, 2)}, {at(s, 3), 4 * m * n}};
    p.elementwise(k, n, {{0, 0, n, 1}}, {{1, 0, n, 1}}, {load(0, 0), op(Op::Tanh, 1, 0), store(0, 1)});
    p.phases.push_back(matmul(2, 1, 3, m, n, k));
    return p;
  };
}

// The matmul's tiling (recurrent_kernel_layout.h: micro-tiles of kTileRows × kTileCols,
// panels of kPanelRows × kPanelCols, k in chunks of kChunkK): C_t = op(A_t)·op(B_t) with
// both operands moving (B staged from global memory), then C'_t = op(A_t)·op(W), W
// invariant (on chip), over two iterations; every leading dimension (A's, B's, W's and
// C's) padded by `pad`. Storage: As, Bs, W, Cs, C's.
struct TilingShape {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  int64_t pad = 0;

  int64_t a_floats() const { return (transpose_a ? k * (m + pad) : m * (k + pad)); }
  int64_t b_floats() const { return (transpose_b ? n * (k + pad) : k * (n + pad)); }
  int64_t c_floats() const { return m * (n + pad); }
};

inline Storage tiling_storage(const TilingShape& t) {
  return {random_values(2 * t.a_floats(), 51), random_values(2 * t.b_floats(), 52), random_values(t.b_floats(), 53),
          std::vector<float>(static_cast<size_t>(2 * t.c_floats())),
          std::vector<float>(static_cast<size_t>(2 * t.c_floats()))};
}

inline Builder tiling(const TilingShape& t) {
  return [=](const Bases& s) {
    Program p;
    p.length = 2;
    p.buffers = {{at(s, 0), 4 * t.a_floats()}, {at(s, 1), 4 * t.b_floats()}, {at(s, 2)},
                 {at(s, 3), 4 * t.c_floats()}, {at(s, 4), 4 * t.c_floats()}};
    RecurrentPhase moving = matmul(0, 1, 3, t.m, t.n, t.k);
    moving.transpose_a = t.transpose_a, moving.transpose_b = t.transpose_b;
    moving.lda = (t.transpose_a ? t.m : t.k) + t.pad;
    moving.ldb = (t.transpose_b ? t.k : t.n) + t.pad;
    moving.ldc = t.n + t.pad;
    RecurrentPhase weight = moving;
    weight.b = 2, weight.c = 4;
    p.phases = {moving, weight};
    return p;
  };
}

// A stack of `layers` tanh layers run `steps` times, h_{l+1} = tanh(h_l·W_l) with h_0
// the last layer's output of the iteration before (h0 first): 2·layers phases (more than
// the 8 whose placements the kernel once worked out at its start and kept), each W_l a
// constant on chip. Storage: h0,
// then per layer W_l and its GEMM result C_l, then each layer's output (the last is h).
inline Storage deep_storage(int layers, int64_t batch, int64_t width) {
  Storage s = {random_values(batch * width, 51)};
  for (int l = 0; l < layers; ++l) {
    s.push_back(random_values(width * width, 52 + static_cast<unsigned>(l)));
    s.push_back(std::vector<float>(static_cast<size_t>(batch * width)));
  }
  for (int l = 0; l < layers; ++l) s.push_back(std::vector<float>(static_cast<size_t>(batch * width)));
  return s;
}

inline Builder deep(int steps, int layers, int64_t batch, int64_t width) {
  return [=](const Bases& s) {
    Program p;
    p.length = steps;
    const auto out = [&](int l) { return 1 + 2 * layers + l; };  // layer l's output array
    // Buffer 0: h_0 (h0 first, then the last layer's output); then per layer W, C, output.
    p.buffers = {{at(s, static_cast<size_t>(out(layers - 1))), 0, at(s, 0), 0}};
    for (int l = 0; l < layers; ++l) {
      p.buffers.push_back({at(s, static_cast<size_t>(1 + 2 * l))});
      p.buffers.push_back({at(s, static_cast<size_t>(2 + 2 * l))});
      p.buffers.push_back({at(s, static_cast<size_t>(out(l)))});
    }
    for (int l = 0; l < layers; ++l) {
      const int32_t in = l == 0 ? 0 : 3 * l, w = 3 * l + 1, c = 3 * l + 2, y = 3 * l + 3;
      p.phases.push_back(matmul(in, w, c, batch, width, width));
      p.elementwise(batch, width, {{c, 0, width, 1}}, {{y, 0, width, 1}},
                    {load(0, 0), op(Op::Tanh, 1, 0), store(0, 1)});
    }
    return p;
  };
}

/// One program of the kernel's tests: its arrays' initial values, its builder, how many of
/// its matmuls could keep B on chip, and the blocks its emulated run takes.
struct Case {
  std::string name;
  Storage initial;
  Builder build;
  int cacheable = 0;
  unsigned blocks = 0;
  /// Every buffer's element type (in_type); an array of a low type holds its elements
  /// packed two bytes each in its first bytes (values reads them).
  ElementType type = ElementType::f32;
};

/// The elements of a case's `array` as floats (its type's elements, exactly).
inline std::vector<float> values(const std::vector<float>& array, ElementType type) {
  std::vector<float> out(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    out[i] = load_element(reinterpret_cast<uint64_t>(array.data()), static_cast<int64_t>(i), type);
  }
  return out;
}

inline const char* type_name(ElementType type) {
  return type == ElementType::f32 ? "f32" : type == ElementType::bf16 ? "bf16" : "f16";
}

/// Case `c` with every buffer of `type` (bf16 or f16): its arrays' values rounded to the
/// type and packed two bytes each, and every address its builder gives moved to the same
/// element of the packed array (offsets and strides halved). The builder is run on
/// far-apart stand-in bases so that each address (even one a slot before its array, as a
/// chained carry's base) tells which array it is in.
inline Case in_type(const Case& c, ElementType type) {
  Case low = c;
  low.name += std::string(" ") + type_name(type);
  low.type = type;
  for (std::vector<float>& array : low.initial) {
    std::vector<float> packed(array.size(), 0.0f);
    for (size_t i = 0; i < array.size(); ++i) {
      store_element(reinterpret_cast<uint64_t>(packed.data()), static_cast<int64_t>(i), type, array[i]);
    }
    array = packed;
  }
  low.build = [build = c.build, arrays = c.initial.size(), type](const Bases& real) {
    constexpr int kApart = 40;  // stand-in array i lies at (i + 1) << kApart
    Bases stand_in;
    for (size_t i = 0; i < arrays; ++i) stand_in.push_back(static_cast<uint64_t>(i + 1) << kApart);
    const auto move = [&](uint64_t address) -> uint64_t {
      if (address == 0) return 0;
      const size_t i = ((address + (uint64_t{1} << (kApart - 1))) >> kApart) - 1;
      const int64_t offset = static_cast<int64_t>(address - stand_in[i]);
      return real[i] + static_cast<uint64_t>(offset / 2);
    };
    Program p = build(stand_in);
    for (StepAddress& b : p.buffers) {
      b.base = move(b.base), b.first = move(b.first), b.last = move(b.last);
      b.stride /= 2;
      b.type = type;
    }
    return p;
  };
  return low;
}

/// A tiling shape and the blocks its emulated run takes.
struct TilingCase {
  TilingShape t;
  unsigned blocks = 0;
};

/// The tiling's edges, each on `blocks` blocks: m, n's block share and k at 1, one under,
/// at and one over a micro-tile, a panel and a chunk; blocks with no columns; A and B
/// transposed with padded leading dimensions.
inline std::vector<TilingCase> tiling_shapes() {
  return {
      {{1, 1, 1}, 3},                        // one output: two of three blocks have no columns
      {{3, 7, 15, false, false, 1}, 3},      // one under a micro-tile and a chunk; a 1-column block
      {{4, 12, 16, true, false, 2}, 3},      // at them
      {{5, 13, 17, false, true, 3}, 3},      // one over them
      {{2, 6, 33, true, true, 1}, 3},        // 2-column shares (micro-tiles 4 × 2), three chunks
      {{127, 189, 31, false, false, 1}, 3},  // shares one under a 64-column panel
      {{128, 192, 16, true, false, 0}, 3},   // at it
      {{129, 195, 17, true, true, 2}, 3},    // one over, A and B transposed
      {{129, 8, 18, true, false, 3}, 2},     // 4-column shares: rows one over a 128-row panel
  };
}

/// tiling_shapes as the kernel's cases (one weight, W, on chip).
inline std::vector<Case> tiling_cases() {
  std::vector<Case> cases;
  for (const TilingCase& s : tiling_shapes()) {
    const TilingShape& t = s.t;
    cases.push_back({"tiling " + std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k) +
                         (t.transpose_a ? " Aᵀ" : "") + (t.transpose_b ? " Bᵀ" : "") + " pad " +
                         std::to_string(t.pad),
                     tiling_storage(t), tiling(t), 1, s.blocks});
  }
  return cases;
}

inline std::vector<Case> kernel_cases() {
  std::vector<Case> cases = {
      {"rnn", rnn_storage(5, 3, 5), rnn(5, 3, 5, false), 1, 3},
      {"rnn reversed", rnn_storage(5, 3, 5), rnn(5, 3, 5, true), 1, 3},
      {"lstm", lstm_storage(), lstm, 1, 4},
      {"backward", backward_storage(), backward, 1, 5},
      {"scratch B",
       {random_values(3 * 7 * 10, 41), std::vector<float>(7 * 10), random_values(5 * 7, 42),
        std::vector<float>(3 * 5 * 10)},
       scratch_b(3, 5, 10, 7), 0, 4},
      {"deep (10 phases)", deep_storage(5, 3, 6), deep(3, 5, 3, 6), 5, 4},
      {"layer-normed rnn (row phase)", rnn_storage(4, 5, 150), norm_rnn(4, 5, 150), 1, 3},
  };
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Storage initial = {random_values(800, 31),  random_values(800, 32), std::vector<float>(800),
                               random_values(1200, 33), random_values(800, 34), std::vector<float>(1600),
                               random_values(800, 35),  std::vector<float>(1600)};
      cases.push_back({std::string("matmuls ") + (ta ? "Aᵀ" : "A") + (tb ? "·Bᵀ" : "·B"), initial, matmuls(ta, tb), 2, 3});
    }
  }
  std::vector<Case> tiling = tiling_cases();
  cases.insert(cases.end(), tiling.begin(), tiling.end());
  return cases;
}

/// Checks the kernel's table (matmul_placements) for `program` on `blocks` blocks with
/// `shared_bytes` and `k_splits`, entry by entry, against what the kernel worked out
/// itself at its start before the host did (session 28): for each matmul phase in order,
/// choose_matmul_partition of its shape, whether its B is a constant and its operands'
/// math, and the offset the shared-memory walk over `shared_bytes` gives its slice (each
/// on-chip slice after the stage and inside `shared_bytes`); other phases' entries
/// default. Returns how many slices the table keeps on chip.
inline int expect_placements_as_the_kernel_worked_them_out(const RecurrentProgramView& program, int64_t blocks,
                                                           uint64_t shared_bytes, int k_splits) {
  const std::vector<MatmulPlacement> table = matmul_placements(program, blocks, shared_bytes, k_splits);
  EXPECT_EQ(table.size(), static_cast<size_t>(program.phase_count));
  if (table.size() != static_cast<size_t>(program.phase_count)) return 0;
  SharedWalk walk{shared_bytes, matmul_stage_bytes(program)};
  int on_chip = 0;
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    const MatmulPlacement& got = table[static_cast<size_t>(i)];
    if (ph.kind != PhaseKind::matmul) {
      EXPECT_EQ(got.slice_offset, -1) << "phase " << i;
      EXPECT_EQ(got.partition.row_groups, 0) << "phase " << i;
      continue;
    }
    const MatmulPartition want = choose_matmul_partition(ph.m, ph.n, ph.k, blocks, constant_b(program, ph), k_splits,
                                                         matmul_math(program, ph));
    EXPECT_EQ(got.partition.row_groups, want.row_groups) << "phase " << i;
    EXPECT_EQ(got.partition.col_groups, want.col_groups) << "phase " << i;
    EXPECT_EQ(got.partition.rows_per_block, want.rows_per_block) << "phase " << i;
    EXPECT_EQ(got.partition.cols_per_block, want.cols_per_block) << "phase " << i;
    EXPECT_EQ(got.partition.k_splits, want.k_splits) << "phase " << i;
    EXPECT_EQ(got.partition.k_per_split, want.k_per_split) << "phase " << i;
    EXPECT_EQ(got.slice_offset, walk.place(program, ph, want)) << "phase " << i;
    if (got.slice_offset < 0) continue;
    ++on_chip;
    EXPECT_GE(static_cast<uint64_t>(got.slice_offset), kMatmulStageBytes) << "phase " << i;
    EXPECT_LE(static_cast<uint64_t>(got.slice_offset) +
                  b_slice_bytes(got.partition, element_bytes(program.buffers[ph.b].type)),
              shared_bytes)
        << "phase " << i;
  }
  return on_chip;
}

/// An H200 as the cost tests model it: 132 multiprocessors (sm_90), 227 KiB of shared
/// memory per block, 2 blocks per multiprocessor at 128 registers, fewer as shared memory
/// (228 KiB per multiprocessor, 1 KiB reserved per block) runs out.
inline RecurrentDeviceLimits h200_limits() {
  RecurrentDeviceLimits h200;
  h200.multiprocessors = 132;
  h200.shared_per_block = 227 * 1024;
  h200.cooperative = true;
  h200.compute_capability = 90;
  h200.blocks_per_multiprocessor = [](uint64_t bytes) {
    const uint64_t by_shared = 228 * 1024 / (bytes + 1024);
    return static_cast<int>(by_shared < 2 ? by_shared : 2);
  };
  return h200;
}

/// The k ranges the split-K tests force on every case of kernel_cases:
/// 2 does not divide the tiling's k = 15, 17, 31, 33, nor 3 its k = 16, 17, 31; 5 is more
/// than k = 15 … 33 has chunks of kChunkK (one to three), and is clamped to k where k < 5.
inline constexpr int kForcedKSplits[] = {2, 3, 5};

/// A launch past 48 KiB of dynamic shared memory, the default a kernel may use before
/// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) raises it
/// (plan_recurrent_launch raises it to the device's opt-in limit): the tiling case of
/// kLargeSlice, its weight 128 × 320 in 2 k ranges on kLargeSliceBlocks blocks, each
/// block keeping its 64 × 320 slice on chip after the stage — 80 KiB in f32 (96 KiB per
/// block in all), 40 KiB in bf16 or f16 (56 KiB). kernel_cases' own launches stay under
/// 48 KiB, and of the suite's loops only gru_seq's (64 KiB on an H200) go over.
inline constexpr TilingShape kLargeSlice{16, 320, 128};
inline constexpr unsigned kLargeSliceBlocks = 2;
inline constexpr int kLargeSliceKSplits = 2;

/// kLargeSlice's shared bytes per block with its elements of `type`.
inline uint64_t large_slice_shared_bytes(ElementType type) {
  return kMatmulStageBytes + uint64_t{64} * 320 * static_cast<uint64_t>(element_bytes(type));
}

inline Case large_slice_case() {
  return {"large slice 16x320x128", tiling_storage(kLargeSlice), tiling(kLargeSlice), 1, kLargeSliceBlocks};
}

}  // namespace weft::cuda::recurrent_testing
