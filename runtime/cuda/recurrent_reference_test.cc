// The persistent loop's host oracle (recurrent_reference.h): a recurrent program built by
// hand against the same loop written out on the host; its checks' messages pinned.
#include "runtime/cuda/recurrent_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/cuda/recurrent_cell_op.h"
#include "runtime/cuda/recurrent_testing.h"

namespace weft::cuda {
namespace {

uint64_t address(const std::vector<float>& v) { return reinterpret_cast<uint64_t>(v.data()); }

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// h_{t+1} = tanh(h_t·W + x_t) over `steps` slots of [batch, hidden], h chained to the ys
// (slot t-1, or h0 in the first iteration), W kept invariant; `reversed` walks the xs
// and ys slots from the last.
struct SimpleRnn {
  int64_t steps = 5, batch = 3, hidden = 4;
  bool reversed = false;
  std::vector<float> h0 = random_values(static_cast<size_t>(batch * hidden), 1);
  std::vector<float> w = random_values(static_cast<size_t>(hidden * hidden), 2);
  std::vector<float> xs = random_values(static_cast<size_t>(steps * batch * hidden), 3);
  std::vector<float> ys = std::vector<float>(static_cast<size_t>(steps * batch * hidden), 0.0f);
  std::vector<float> g = std::vector<float>(static_cast<size_t>(batch * hidden), 0.0f);

  recurrent_testing::Program program;

  void plan() {
    using namespace recurrent_testing;  // NOLINT: the program's constructors
    const int64_t slot = batch * hidden * static_cast<int64_t>(sizeof(float));
    const int64_t first_slot = reversed ? (steps - 1) * slot : 0;
    const int64_t step = reversed ? -slot : slot;
    program = recurrent_testing::Program{};
    program.length = steps;
    // 0: h (chained), 1: W, 2: G, 3: x_t, 4: y_t.
    program.buffers = {{address(ys) + first_slot - step, step, address(h0), 0},
                       {address(w), 0, 0, 0},
                       {address(g), 0, 0, 0},
                       {address(xs) + first_slot, step, 0, 0},
                       {address(ys) + first_slot, step, 0, 0}};
    program.phases.push_back(matmul(0, 1, 2, batch, hidden, hidden));
    program.elementwise(batch, hidden, {{2, 0, hidden, 1}, {3, 0, hidden, 1}}, {{4, 0, hidden, 1}},
                        {load(0, 0), load(1, 1), op(Op::Add, 2, 0, 1), op(Op::Tanh, 3, 2), store(0, 3)});
  }

  RecurrentProgramView view() const { return program.view(); }

  // The same loop written out, in f64.
  std::vector<double> expected() const {
    std::vector<double> out(ys.size());
    std::vector<double> h(h0.begin(), h0.end());
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t s = reversed ? steps - 1 - i : i;
      std::vector<double> next(h.size());
      for (int64_t r = 0; r < batch; ++r) {
        for (int64_t c = 0; c < hidden; ++c) {
          double sum = 0;
          for (int64_t q = 0; q < hidden; ++q) sum += h[r * hidden + q] * w[q * hidden + c];
          next[r * hidden + c] = std::tanh(sum + xs[(s * batch + r) * hidden + c]);
        }
      }
      std::copy(next.begin(), next.end(), out.begin() + s * batch * hidden);
      h = next;
    }
    return out;
  }
};

TEST(RecurrentReference, RunsAChainedLoopForwardAndReversed) {
  for (bool reversed : {false, true}) {
    SimpleRnn rnn;
    rnn.reversed = reversed;
    rnn.plan();
    ASSERT_TRUE(run_recurrent_on_host(rnn.view()).ok());
    const std::vector<double> want = rnn.expected();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(rnn.ys[i], want[i], 1e-5) << i << (reversed ? " reversed" : "");
  }
}

TEST(RecurrentReference, ShiftedCarryEndsInItsResult) {
  // c_{t+1} = c_t + x_t kept in a ys shifted by one slot: iteration t reads slot t and
  // writes slot t+1, the last iteration the carry's result.
  std::vector<float> xs = {1, 2, 3}, ys = {10, 0, 0}, result = {0};
  const auto slot = static_cast<int64_t>(sizeof(float));
  const std::vector<StepAddress> buffers = {
      {address(ys), slot, 0, 0}, {address(xs), slot, 0, 0}, {address(ys) + slot, slot, 0, address(result)}};
  RecurrentPhase add;
  add.rows = 1, add.cols = 1, add.operand_count = 2, add.result_count = 1, add.instr_count = 4;
  const std::vector<ElementMap> maps = {{0, 0, 0, 0}, {1, 0, 0, 0}, {2, 0, 0, 0}};
  const std::vector<CellInstr> instrs = {
      {kLoadOp, 0, 0}, {kLoadOp, 1, 1}, {static_cast<uint16_t>(Op::Add), 2, 0, 1}, {kStoreOp, 0, 0, 2}};
  const RecurrentProgramView view{3, 3, 1, 3, 4, buffers.data(), &add, maps.data(), instrs.data()};
  ASSERT_TRUE(run_recurrent_on_host(view).ok());
  EXPECT_EQ(ys, (std::vector<float>{10, 11, 13}));
  EXPECT_EQ(result[0], 16.0f);
}

TEST(RecurrentReference, ComparisonsAndSelectUseOneAndZero) {
  std::vector<float> a = {-2, 0.5f, 3}, b = {1, 1, 1}, out(3);
  const std::vector<StepAddress> buffers = {{address(a)}, {address(b)}, {address(out)}};
  RecurrentPhase ph;
  ph.rows = 1, ph.cols = 3, ph.operand_count = 2, ph.result_count = 1, ph.instr_count = 6;
  const std::vector<ElementMap> maps = {{0, 0, 0, 1}, {1, 0, 0, 1}, {2, 0, 0, 1}};
  const std::vector<CellInstr> instrs = {{kLoadOp, 0, 0},
                                         {kLoadOp, 1, 1},
                                         {static_cast<uint16_t>(Op::Lt), 2, 0, 1},
                                         {static_cast<uint16_t>(Op::Neg), 3, 0},
                                         {static_cast<uint16_t>(Op::Select), 4, 2, 3, 1},
                                         {kStoreOp, 0, 0, 4}};
  const RecurrentProgramView view{1, 3, 1, 3, 6, buffers.data(), &ph, maps.data(), instrs.data()};
  ASSERT_TRUE(run_recurrent_on_host(view).ok());
  EXPECT_EQ(out, (std::vector<float>{2, -0.5f, 1}));
}

TEST(RecurrentReference, SupportedOpsAreTheScalarMathOnesAndSelect) {
  EXPECT_EQ(recurrent_op_arity(Op::Tanh), 1);
  EXPECT_EQ(recurrent_op_arity(Op::Not), 1);
  EXPECT_EQ(recurrent_op_arity(Op::Mul), 2);
  EXPECT_EQ(recurrent_op_arity(Op::Ge), 2);
  EXPECT_EQ(recurrent_op_arity(Op::Select), 3);
  EXPECT_FALSE(recurrent_op_supported(Op::Gelu));  // no scalar math: its kernel is its definition
  EXPECT_FALSE(recurrent_op_supported(Op::Cast));
  EXPECT_FALSE(recurrent_op_supported(Op::Matmul));
}

TEST(RecurrentReference, MalformedProgramsAreErrorsNamingThePhase) {
  SimpleRnn rnn;
  rnn.plan();
  const auto message = [&] {
    const std::vector<float> before = rnn.ys;
    Status s = run_recurrent_on_host(rnn.view());
    EXPECT_EQ(rnn.ys, before);  // nothing written
    return s.ok() ? std::string("ok") : s.error().message;
  };
  rnn.program.phases[0].b = 9;
  EXPECT_EQ(message(), "persistent loop program: phase 0: buffer 9 out of range");
  rnn.plan();
  rnn.program.phases[0].lda = 2;
  EXPECT_EQ(message(), "persistent loop program: phase 0: a leading dimension shorter than its rows");
  rnn.plan();
  rnn.program.instrs[3].op = static_cast<uint16_t>(Op::Gelu);
  EXPECT_EQ(message(), "persistent loop program: phase 1: op " + std::to_string(static_cast<int>(Op::Gelu)) +
                           " is not one a program may hold");
  rnn.plan();
  rnn.program.instrs[4].b = kMaxCellRegisters;
  EXPECT_EQ(message(), "persistent loop program: phase 1: a store out of range");
  rnn.plan();
  rnn.program.phases[1].result_count = 2;
  EXPECT_EQ(message(), "persistent loop program: phase 1: maps out of range");
  rnn.plan();
  rnn.program.maps[1].buffer = -1;
  EXPECT_EQ(message(), "persistent loop program: phase 1: a map's buffer out of range");
  rnn.plan();
  rnn.program.instrs[3] = {kRoundOp, 3, 2, static_cast<uint8_t>(ElementType::f32)};
  EXPECT_EQ(message(), "persistent loop program: phase 1: a rounding out of range");
  rnn.plan();
  rnn.program.buffers[2].type = static_cast<ElementType>(7);
  EXPECT_EQ(message(), "persistent loop program: buffer 2 has no element type (7)");
  rnn.plan();
  rnn.program.instrs[3] = {kConstOp, kMaxCellRegisters};
  EXPECT_EQ(message(), "persistent loop program: phase 1: a constant out of range");
  rnn.plan();
  rnn.program.instrs[3] = {kRowReduceOp, 3, 2, kRowSum};
  EXPECT_EQ(message(), "persistent loop program: phase 1: a row reduction outside a row phase");
  rnn.plan();
  rnn.program.phases[1].kind = PhaseKind::row;
  rnn.program.instrs[3] = {kRowReduceOp, 3, 2, 2};
  EXPECT_EQ(message(), "persistent loop program: phase 1: a row reduction out of range");
  rnn.plan();
  rnn.program.phases[1].kind = static_cast<PhaseKind>(3);
  EXPECT_EQ(message(), "persistent loop program: phase 1: no phase kind");
}

// A row phase of 2 rows × 3 columns: a row's mean and sum (passes before the stores), a
// constant, gelu in both forms; every value checked against its formula.
TEST(RecurrentReference, RowPhaseReducesEachRow) {
  std::vector<float> x = {1, 2, 6, -3, 0, 0.5f}, y(6), z(6);
  recurrent_testing::Program p;
  p.buffers = {{reinterpret_cast<uint64_t>(x.data())}, {reinterpret_cast<uint64_t>(y.data())},
               {reinterpret_cast<uint64_t>(z.data())}};
  using namespace recurrent_testing;
  // y = x − mean(x) + sum(x)·0.5; z = gelu(y) + gelu_tanh(y).
  p.row(2, 3, {{0, 0, 3, 1}}, {{1, 0, 3, 1}, {2, 0, 3, 1}},
        {load(0, 0), row_reduce(1, 0, kRowMean), op(Op::Sub, 2, 0, 1), row_reduce(3, 0, kRowSum), constant(4, 0.5f),
         op(Op::Mul, 5, 3, 4), op(Op::Add, 6, 2, 5), gelu(7, 6), gelu(8, 6, true), op(Op::Add, 9, 7, 8), store(0, 6),
         store(1, 9)});
  ASSERT_TRUE(run_recurrent_on_host(p.view()).ok());
  for (int r = 0; r < 2; ++r) {
    const float sum = x[3 * r] + x[3 * r + 1] + x[3 * r + 2];
    for (int c = 0; c < 3; ++c) {
      const float want = x[3 * r + c] - sum / 3 + sum * 0.5f;
      EXPECT_FLOAT_EQ(y[3 * r + c], want) << r << "," << c;
      EXPECT_FLOAT_EQ(z[3 * r + c], gelu_erf(want) + gelu_tanh(want)) << r << "," << c;
    }
  }
  EXPECT_NE(p.to_string().find("    r1 = row mean r0\n"), std::string::npos) << p.to_string();
  EXPECT_NE(p.to_string().find("    r8 = gelu(tanh) r6\n"), std::string::npos) << p.to_string();
}

// bf16 and f16 buffers: loads exact, a matmul's products of the stored (rounded) values
// summed and rounded once at C's store, an elementwise store rounded to nearest even
// (ties to even), f32 registers between.
TEST(RecurrentReference, LowPrecisionBuffersRoundAtEachStore) {
  for (ElementType type : {ElementType::bf16, ElementType::f16}) {
    SCOPED_TRACE(recurrent_testing::type_name(type));
    // The type's unit in the last place at 1: 2^-7 (bf16), 2^-10 (f16).
    const float ulp = type == ElementType::bf16 ? 0x1p-7f : 0x1p-10f;
    std::vector<uint16_t> a(2), b(2), c(1), d(1);
    const auto put = [&](std::vector<uint16_t>& v, size_t i, float x) {
      store_element(reinterpret_cast<uint64_t>(v.data()), static_cast<int64_t>(i), type, x);
    };
    const auto get = [&](const std::vector<uint16_t>& v, size_t i) {
      return load_element(reinterpret_cast<uint64_t>(v.data()), static_cast<int64_t>(i), type);
    };
    // A = [1 + ulp, 1], B = [1, ulp / 2]: exact sum 1 + 1.5 ulp, to even: 1 + 2 ulp.
    put(a, 0, 1.0f + ulp), put(a, 1, 1.0f), put(b, 0, 1.0f), put(b, 1, ulp / 2);
    recurrent_testing::Program p;
    const auto buffer = [&](const std::vector<uint16_t>& v) {
      return StepAddress{reinterpret_cast<uint64_t>(v.data()), 0, 0, 0, type};
    };
    p.buffers = {buffer(a), buffer(b), buffer(c), buffer(d)};
    p.phases = {recurrent_testing::matmul(0, 1, 2, 1, 1, 2)};
    // d = c + ulp / 2: 1 + 2.5 ulp, a tie, to even: 1 + 2 ulp.
    p.elementwise(1, 1, {{2, 0, 1, 1}, {1, 1, 1, 1}}, {{3, 0, 1, 1}},
                  {recurrent_testing::load(0, 0), recurrent_testing::load(1, 1),
                   recurrent_testing::op(Op::Add, 2, 0, 1), recurrent_testing::store(0, 2)});
    ASSERT_TRUE(run_recurrent_on_host(p.view()).ok());
    EXPECT_EQ(get(c, 0), 1.0f + 2 * ulp);
    EXPECT_EQ(get(d, 0), 1.0f + 2 * ulp);
  }
}

// kRoundOp: a register rounded to nearest even in bf16 or f16 (ties to even) and kept in
// f32, stored into an f32 buffer unchanged.
TEST(RecurrentReference, RoundingARegisterKeepsItsHalfValue) {
  for (ElementType type : {ElementType::bf16, ElementType::f16}) {
    SCOPED_TRACE(recurrent_testing::type_name(type));
    const float ulp = type == ElementType::bf16 ? 0x1p-7f : 0x1p-10f;
    // A tie to even (1), a tie to even upward (1 + 2 ulp), above half (1 + ulp).
    std::vector<float> in = {1.0f + ulp / 2, 1.0f + 1.5f * ulp, 1.0f + 0.75f * ulp}, out(3);
    recurrent_testing::Program p;
    p.buffers = {{address(in)}, {address(out)}};
    p.elementwise(1, 3, {{0, 0, 0, 1}}, {{1, 0, 0, 1}},
                  {recurrent_testing::load(0, 0), {kRoundOp, 1, 0, static_cast<uint8_t>(type)},
                   recurrent_testing::store(0, 1)});
    ASSERT_TRUE(run_recurrent_on_host(p.view()).ok());
    EXPECT_EQ(out, (std::vector<float>{1.0f, 1.0f + 2 * ulp, 1.0f + ulp}));
  }
}

}  // namespace
}  // namespace weft::cuda
