// The persistent loop kernel (recurrent_kernel_device.inc) run on the host without a GPU:
// every block's threads alive at once (cuda_emulation.h's cooperative launch), each CUDA
// thread a std::thread, on small grids. Each program runs twice from the same data, on
// the kernel and on the host oracle (recurrent_reference.h), and every buffer is
// compared (relative 1e-5; the oracle sums matmuls in f64, the kernel in f32 FMAs): a
// chained RNN forward and reversed, an LSTM-shaped forward (gates' column windows, c in
// place, h chained, two ys), a backward-shaped one (a [B, 4H] left operand written in
// four windows, a transposed invariant B, a shifted carry ending in its result), plain
// matmuls with every transpose and tails, each with the recurrent weights kept in shared
// memory and read from global memory; then every supported op over NaN, ±inf and ±0.
#include "runtime/cuda/cuda_emulation.h"  // first: CUDA's built-ins for the kernel's source

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/cuda/recurrent_kernel_device.inc"
#include "runtime/cuda/recurrent_reference.h"
#include "runtime/cuda/recurrent_testing.h"

namespace weft::cuda {
namespace {

using emulation::run_cooperative_grid;
using namespace recurrent_testing;

/// The host arrays a program's buffers point into.
using Storage = std::vector<std::vector<float>>;

/// Builds a program whose buffers point into the given storage.
using Builder = std::function<Program(Storage&)>;

uint64_t at(std::vector<float>& v, int64_t floats = 0) { return reinterpret_cast<uint64_t>(v.data()) + 4 * floats; }

std::vector<float> random_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

/// Runs `program` on the emulated kernel: `blocks` × `threads`, with the shared memory the
/// layout's rule gives under `shared_limit`. Returns how many matmuls kept B on chip.
int run_kernel(const RecurrentProgramView& program, unsigned blocks, unsigned threads, uint64_t shared_limit) {
  const uint64_t shared = recurrent_shared_bytes(program, blocks, shared_limit);
  unsigned barrier = 0;
  run_cooperative_grid(blocks, threads, shared, [&] { recurrent_loop(program, &barrier, shared); });
  EXPECT_EQ(barrier & ~kSenseBit, 0u) << "the barrier's low bits are zero again after the launch";
  return count_cached_phases(program, blocks, shared).cached;
}

bool close(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(got - want) <= 1e-5f * std::max(1.0f, std::fabs(want));
}

constexpr uint64_t kPlentyOfShared = 1 << 20;

/// Runs the program `build` makes on `initial` with the kernel and with the oracle, for
/// B on chip and in global memory, and compares every array; `cacheable` matmuls keep B
/// on chip with plenty of shared memory.
void expect_matches_oracle(const Builder& build, const Storage& initial, unsigned blocks, unsigned threads,
                           int cacheable) {
  Storage want = initial;
  const Program oracle = build(want);
  const Status s = run_recurrent_on_host(oracle.view());
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (uint64_t limit : {kPlentyOfShared, uint64_t{0}}) {
    SCOPED_TRACE(limit == 0 ? "B from global memory" : "B in shared memory");
    Storage got = initial;
    const Program program = build(got);
    EXPECT_EQ(run_kernel(program.view(), blocks, threads, limit), limit == 0 ? 0 : cacheable);
    for (size_t a = 0; a < want.size(); ++a) {
      for (size_t i = 0; i < want[a].size(); ++i) {
        ASSERT_TRUE(close(got[a][i], want[a][i])) << "array " << a << " element " << i << ": kernel " << got[a][i]
                                                  << ", oracle " << want[a][i];
      }
    }
  }
}

// h_{t+1} = tanh(h_t·W + x_t), h chained through the ys (slot t-1, h0 first), W
// invariant; `reversed` walks the slots from the last. Storage: h0, W, G, xs, ys.
Storage rnn_storage(int64_t steps, int64_t batch, int64_t hidden) {
  return {random_values(batch * hidden, 1), random_values(hidden * hidden, 2),
          std::vector<float>(static_cast<size_t>(batch * hidden)), random_values(steps * batch * hidden, 3),
          std::vector<float>(static_cast<size_t>(steps * batch * hidden))};
}

Builder rnn(int64_t steps, int64_t batch, int64_t hidden, bool reversed) {
  return [=](Storage& s) {
    Program p;
    p.length = steps;
    const int64_t slot = batch * hidden;
    const int64_t first = reversed ? (steps - 1) * slot : 0, step = 4 * (reversed ? -slot : slot);
    p.buffers = {{at(s[4], first) - step, step, at(s[0]), 0},
                 {at(s[1])},
                 {at(s[2])},
                 {at(s[3], first), step},
                 {at(s[4], first), step}};
    p.phases = {matmul(0, 1, 2, batch, hidden, hidden)};
    p.elementwise(batch, hidden, {{2, 0, hidden, 1}, {3, 0, hidden, 1}}, {{4, 0, hidden, 1}},
                {load(0, 0), load(1, 1), op(Op::Add, 2, 0, 1), op(Op::Tanh, 3, 2), store(0, 3)});
    return p;
  };
}

TEST(RecurrentKernelEmulated, ChainedRnnForwardAndReversed) {
  for (bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "reversed" : "forward");
    expect_matches_oracle(rnn(5, 3, 5, reversed), rnn_storage(5, 3, 5), /*blocks=*/3, /*threads=*/64,
                          /*cacheable=*/1);
  }
}

// An LSTM step: gates = h·W ([B, 4H], W invariant), then the cell over [B, H] reading the
// four column windows of the gates and of the step's projected input xp_t, c in place:
//   c = σ(f)·c + σ(i)·tanh(g);  h = σ(o)·tanh(c)
// h written into the ys hs (chained: the next step's h), c also into the ys cs.
// Storage: h0, c, W, xp, gates, hs, cs.
constexpr int64_t kSteps = 4, kBatch = 3, kHidden = 6;

Storage lstm_storage() {
  const int64_t g = 4 * kHidden;
  return {random_values(kBatch * kHidden, 11), random_values(kBatch * kHidden, 12),
          random_values(kHidden * g, 13),      random_values(kSteps * kBatch * g, 14),
          std::vector<float>(kBatch * g),      std::vector<float>(kSteps * kBatch * kHidden),
          std::vector<float>(kSteps * kBatch * kHidden)};
}

Program lstm(Storage& s) {
  const int64_t g = 4 * kHidden, slot = kBatch * kHidden;
  Program p;
  p.length = kSteps;
  // 0 h, 1 W, 2 gates, 3 xp_t, 4 c, 5 hs_t, 6 cs_t.
  p.buffers = {{at(s[5]) - 4 * slot, 4 * slot, at(s[0]), 0},
               {at(s[2])},
               {at(s[4])},
               {at(s[3]), 4 * kBatch * g},
               {at(s[1])},
               {at(s[5]), 4 * slot},
               {at(s[6]), 4 * slot}};
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

TEST(RecurrentKernelEmulated, LstmForward) {
  expect_matches_oracle(lstm, lstm_storage(), /*blocks=*/4, /*threads=*/64, /*cacheable=*/1);
}

// The backward's shape, walking the steps from the last: dG = dh ∘ act_t written as four
// [B, H] windows of a [B, 4H] buffer; dh' = dG·Wᵀ (W [H, 4H] invariant, transposed);
// dh'' = dh' + dy_t into a shifted carry (iteration t reads slot t, writes slot t+1, the
// last iteration the carry's result). Storage: dhs (slot 0 the initial dh), W, act, dG,
// dh', dys, result.
Storage backward_storage() {
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

Program backward(Storage& s) {
  const int64_t g = 4 * kHidden, slot = kBatch * kHidden;
  Program p;
  p.length = kSteps;
  // 0 dh (slot t), 1 W, 2 act_t (reversed), 3 dG, 4 dh', 5 dy_t (reversed), 6 dh out (slot t+1).
  p.buffers = {{at(s[0]), 4 * slot},
               {at(s[1])},
               {at(s[2], (kSteps - 1) * kBatch * g), -4 * kBatch * g},
               {at(s[3])},
               {at(s[4])},
               {at(s[5], (kSteps - 1) * slot), -4 * slot},
               {at(s[0], slot), 4 * slot, 0, at(s[6])}};
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

TEST(RecurrentKernelEmulated, BackwardShapeWithATransposedWeightAndAShiftedCarry) {
  expect_matches_oracle(backward, backward_storage(), /*blocks=*/5, /*threads=*/64, /*cacheable=*/1);
}

// C = op(A)·op(B) twice per iteration over padded leading dimensions, every transpose,
// shapes that are no multiple of anything: a block's tile (20 × 14 on 3 blocks) takes
// two passes of 4 outputs per thread of 64. The second matmul's A moves with the
// iteration, its B is invariant; the first's B moves. Storage: A0, B0, C0, As, B1, Cs.
Builder matmuls(bool transpose_a, bool transpose_b) {
  return [=](Storage& s) {
    const int64_t m = 20, n = 40, k = 9, pad = 3;
    Program p;
    p.length = 2;
    p.buffers = {{at(s[0])}, {at(s[1]), 4 * 2}, {at(s[2])}, {at(s[3]), 4 * 400}, {at(s[4])}, {at(s[5]), 4 * m * n}};
    RecurrentPhase first = matmul(0, 1, 2, m, n, k);
    first.lda = (transpose_a ? m : k) + pad, first.ldb = (transpose_b ? k : n) + pad;
    first.transpose_a = transpose_a, first.transpose_b = transpose_b;
    RecurrentPhase second = first;
    second.a = 3, second.b = 4, second.c = 5;
    p.phases = {first, second};
    return p;
  };
}

TEST(RecurrentKernelEmulated, MatmulsWithTransposesAndTails) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "Aᵀ" : "A") + (tb ? "·Bᵀ" : "·B"));
      const Storage initial = {random_values(800, 31), random_values(800, 32), std::vector<float>(800),
                               random_values(1200, 33), random_values(800, 34), std::vector<float>(1600)};
      expect_matches_oracle(matmuls(ta, tb), initial, /*blocks=*/3, /*threads=*/64, /*cacheable=*/1);
    }
  }
}

// Values whose every op is defined and those where they are not.
std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  return {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 3.0f, 1e-30f,
          88.7f, -100.0f};
}

bool same(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::memcmp(&got, &want, sizeof(float)) == 0;  // -0 is not +0
}

TEST(RecurrentKernelEmulated, DeviceOpsAreExactlyTheSupportedOnes) {
  for (int code = 0; code < kNumOps; ++code) {
    float out = 0;
    EXPECT_EQ(cell_op(static_cast<uint16_t>(code), 1.0f, 2.0f, 3.0f, &out),
              recurrent_op_supported(static_cast<Op>(code)))
        << op_name(static_cast<Op>(code));
  }
}

// One instruction over every value (unary), every pair (binary) or every triple of a
// value, a value and a value in reverse order (select), against the oracle bit for bit.
TEST(RecurrentKernelEmulated, EveryOpOverSpecialValuesMatchesTheOracle) {
  const std::vector<float> values = special_values();
  const auto count = static_cast<int64_t>(values.size());
  std::vector<float> reversed(values.rbegin(), values.rend());
  for (int code = 0; code < kNumOps; ++code) {
    const Op o = static_cast<Op>(code);
    if (!recurrent_op_supported(o)) continue;
    SCOPED_TRACE(std::string(op_name(o)));
    const int arity = recurrent_op_arity(o);
    const Builder build = [&](Storage& s) {
      Program p;
      p.buffers = {{at(s[0])}, {at(s[1])}, {at(s[2])}};
      std::vector<ElementMap> operands = {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}};
      if (arity == 1) operands = {{0, 0, 0, 1}};
      operands.resize(static_cast<size_t>(arity));
      std::vector<CellInstr> code_ = {};
      for (int j = 0; j < arity; ++j) code_.push_back(load(j, j));
      code_.push_back(op(o, 3, 0, 1, 2));
      code_.push_back(store(0, 3));
      p.elementwise(arity == 1 ? 1 : count, count, operands, {{2, 0, count, 1}}, code_);
      return p;
    };
    Storage want = {values, reversed, std::vector<float>(static_cast<size_t>(count * count), 7.0f)};
    const Program oracle = build(want);
    ASSERT_TRUE(run_recurrent_on_host(oracle.view()).ok());
    Storage got = {values, reversed, std::vector<float>(static_cast<size_t>(count * count), 7.0f)};
    const Program program = build(got);
    run_kernel(program.view(), /*blocks=*/2, /*threads=*/32, /*shared_limit=*/0);
    for (size_t i = 0; i < want[2].size(); ++i) {
      ASSERT_TRUE(same(got[2][i], want[2][i])) << "element " << i << ": kernel " << got[2][i] << ", oracle "
                                                << want[2][i];
    }
  }
}

}  // namespace
}  // namespace weft::cuda
