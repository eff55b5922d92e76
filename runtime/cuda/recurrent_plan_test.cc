// A loop as a persistent program (recurrent_plan.h), planned on the host: every loop of
// small LSTM and GRU training steps (their forward and gradient loops; in f32, and at
// precision bf16 and f16: autocast's loops) and of tanh RNNs,
// lowered with codegen::cuda_lower_options(), bound in host memory as the CUDA executor
// binds it (the loop's operands and results where the root Program puts them, the body's
// own arena and inputs block), its operands random, planned, run by the host oracle
// (run_recurrent_on_host) and compared with the reference interpreter's run of the same
// scan node (reference::run_loop). Then the refusals, each message pinned, and
// recurrent_cell.h's example and its rounding. The suite's loop models are
// recurrent_plan_suite_test.cc's.
#include "runtime/cuda/recurrent_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "runtime/binding.h"
#include "runtime/cuda/recurrent_cell.h"
#include "runtime/cuda/recurrent_cell_op.h"
#include "runtime/cuda/recurrent_plan_testing.h"
#include "runtime/cuda/recurrent_reference.h"
#include "runtime/cuda/recurrent_testing.h"
#include "tests/testing/loop_graphs.h"

namespace weft::cuda {
namespace {
namespace recurrent_plan_test {  // this file's names, apart in its package's unity test

using namespace plan_testing;

constexpr auto kOracle = run_recurrent_on_host;

// The printed program of one elementwise phase running `code` over `operands` and
// `results` maps (all on one buffer).
std::string program_text(const std::vector<CellInstr>& code, int32_t operands, int32_t results) {
  RecurrentProgram p;
  p.instrs = code;
  p.phases.push_back({});
  p.phases[0].instr_count = static_cast<int32_t>(code.size());
  p.phases[0].operand_count = operands;
  p.phases[0].result_count = results;
  p.maps.assign(static_cast<size_t>(operands + results), ElementMap{0, 0, 0, 0});
  p.buffers.push_back({});
  return p.to_string();
}

// recurrent_cell.h's example: an LSTM gate's window of the gates, its sigmoid times c.
TEST(RecurrentCell, TheHeadersExample) {
  const Graph body = typed(R"(graph @k(%g: f32[4,32], %c: f32[4,8]) {
  %i = slice(%g) {start=[0,0], stop=[4,8]}
  %s = sigmoid(%i)
  %y = mul(%s, %c)
  return %y
}
)");
  StatusOr<CellSpace> space = cell_space(body);
  ASSERT_TRUE(space.ok()) << space.error().to_string();
  EXPECT_EQ(space->rows, 4);
  EXPECT_EQ(space->cols, 8);
  const auto layout = [](const CellLayout& l) {
    return std::to_string(l.offset) + " " + std::to_string(l.row_stride) + " " + std::to_string(l.col_stride);
  };
  ASSERT_EQ(space->operands.size(), 2u);
  ASSERT_EQ(space->results.size(), 1u);
  EXPECT_EQ(layout(space->operands[0]), "0 32 1");
  EXPECT_EQ(layout(space->operands[1]), "0 8 1");
  EXPECT_EQ(layout(space->results[0]), "0 8 1");
  StatusOr<std::vector<CellInstr>> code = cell_program(body);
  ASSERT_TRUE(code.ok()) << code.error().to_string();
  const std::string text = program_text(*code, 2, 1);
  EXPECT_NE(text.find("    r0 = load operand 0\n    r1 = sigmoid r0\n    r0 = load operand 1\n    r2 = mul r1 r0\n"
                      "    store result 0 = r2\n"),
            std::string::npos)
      << text;
}

// A bf16 value read between a kernel's ops is rounded in its register: the cast of an
// f32 operand, a bf16 op's result read by the next op, and one read through a cast to f32
// (an alias); the last bf16 result, only stored, is rounded by its store alone
// (recurrent_cell.h).
TEST(RecurrentCell, LowValuesReadBetweenOpsAreRounded) {
  const Graph body = typed(R"(graph @k(%x: f32[4,8], %w: bf16[4,8]) {
  %b = cast(%x) {dtype=bf16}
  %m = mul(%b, %w)
  %s = add(%m, %w)
  %f = cast(%s) {dtype=f32}
  %d = sub(%s, %w)
  return %f, %d
}
)");
  StatusOr<std::vector<CellInstr>> code = cell_program(body);
  ASSERT_TRUE(code.ok()) << code.error().to_string();
  const std::string text = program_text(*code, 2, 2);
  EXPECT_NE(text.find("    r0 = load operand 0\n    r1 = round r0 to bf16\n    r0 = load operand 1\n"
                      "    r2 = mul r1 r0\n    r2 = round r2 to bf16\n    r1 = add r2 r0\n"
                      "    r1 = round r1 to bf16\n    r2 = sub r1 r0\n"
                      "    store result 0 = r1\n    store result 1 = r2\n"),
            std::string::npos)
      << text;
}

TEST(RecurrentPlan, LstmStepLoopsMatchTheInterpreter) {
  // Two layers: a forward loop and a gradient loop each.
  EXPECT_EQ(expect_loops_match_reference(sequence_step(LSTM(6, 8, {.layers = 2, .last = true}), 8), 3, kOracle), 4);
}

TEST(RecurrentPlan, GruStepLoopsMatchTheInterpreter) {
  EXPECT_EQ(expect_loops_match_reference(sequence_step(GRU(6, 8, {.last = true}), 8), 5, kOracle), 2);
}

TEST(RecurrentPlan, TanhRnnLoopsMatchTheInterpreter) {
  EXPECT_EQ(expect_loops_match_reference(typed(kTanhRnn), 7, kOracle), 2);
}

// A chained carry and a shifted one (c: read in slot i, written into slot i+1, the last
// into %c), then a reversed loop: runtime/loop_slots.h's cases.
TEST(RecurrentPlan, ShiftedAndChainedCarriesMatchTheInterpreter) {
  EXPECT_EQ(expect_loops_match_reference(typed(testing::kScanSlotsGraph), 11, kOracle), 2);
}

// A carry reset to a const each iteration (recurrent_plan_testing.h's kConstCarry): a
// copy phase, not a swap.
TEST(RecurrentPlan, ACarryNextFromAConstMatchesTheInterpreter) {
  EXPECT_EQ(expect_loops_match_reference(typed(kConstCarry), 29, kOracle), 1);
}

// Loop bodies in bf16 and f16 (recurrent_plan_testing.h's kHalfRnn, kAutocastRnn)
// planned and run by the host oracle against the reference interpreter, at the type's
// tolerance.
TEST(RecurrentPlan, LowPrecisionLoopsMatchTheInterpreter) {
  EXPECT_EQ(expect_loops_match_reference(typed(kHalfRnn), 13, kOracle), 2);
  EXPECT_EQ(expect_loops_match_reference(typed(in_f16(kHalfRnn)), 13, kOracle), 2);
  EXPECT_EQ(expect_loops_match_reference(typed(kAutocastRnn), 17, kOracle), 1);
  EXPECT_EQ(expect_loops_match_reference(typed(in_f16(kAutocastRnn)), 17, kOracle), 1);
  EXPECT_EQ(expect_loops_match_reference(typed(kRoundTrip), 19, kOracle), 1);
  EXPECT_EQ(expect_loops_match_reference(typed(in_f16(kRoundTrip)), 19, kOracle), 1);
  EXPECT_EQ(expect_loops_match_reference(typed(kRoundedRnn), 23, kOracle, ElementType::bf16), 1);
  EXPECT_EQ(expect_loops_match_reference(typed(in_f16(kRoundedRnn)), 23, kOracle, ElementType::f16), 1);
}

// Autocast's loops (passes/autocast.h) in small LSTM and GRU training steps at bf16 and
// f16: every forward and gradient loop plans (the gradients' casts of f32 carries read by
// low products are rounded in registers) and matches the interpreter at the type's
// tolerance.
TEST(RecurrentPlan, AutocastStepLoopsMatchTheInterpreter) {
  for (DType precision : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(precision));
    const ElementType body = *element_type(precision);
    EXPECT_EQ(expect_loops_match_reference(sequence_step(LSTM(6, 8, {.layers = 2, .last = true}), 8, precision), 3,
                                           kOracle, body),
              4);
    EXPECT_EQ(expect_loops_match_reference(sequence_step(GRU(6, 8, {.last = true}), 8, precision), 5, kOracle, body),
              2);
  }
}

// gelu's two forms in a program (kGeluOp, kGeluTanhOp: ir/gelu.h's gelu_erf and
// gelu_tanh) compute what the reference interpreter's gelu kernel computes, bit for bit,
// at 4097 points evenly over [-8, 8] and at ±0, ±inf and a NaN.
TEST(RecurrentCell, GeluFormsMatchTheInterpreter) {
  std::vector<float> xs = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
  for (int i = 0; i <= 4096; ++i) xs.push_back(-8.0f + 16.0f * static_cast<float>(i) / 4096.0f);
  const int64_t n = static_cast<int64_t>(xs.size());
  for (const char* form : {"none", "tanh"}) {
    SCOPED_TRACE(form);
    const Graph g = typed("graph @g(%x: f32[" + std::to_string(n) + "]) {\n  %y = gelu(%x) {approximate=\"" + form +
                          "\"} : f32[" + std::to_string(n) + "]\n  return %y\n}\n");
    Tensor x(f32({n}));
    std::memcpy(x.raw_data(), xs.data(), xs.size() * sizeof(float));
    StatusOr<reference::RunResult> want = reference::run(g, {x});
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    const uint16_t code = std::string(form) == "tanh" ? kGeluTanhOp : kGeluOp;
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
      float got = 0.0f;
      ASSERT_TRUE(cell_op(code, xs[static_cast<size_t>(i)], 0, 0, &got));
      const float expected = want->outputs[0].data<float>()[i];
      const bool same = std::memcmp(&got, &expected, sizeof(float)) == 0 || (std::isnan(got) && std::isnan(expected));
      if (!same) {
        ADD_FAILURE() << "gelu(" << xs[static_cast<size_t>(i)] << "): " << got << ", want " << expected;
        ++bad;
      }
    }
  }
}

// gelu in both forms in a loop body (recurrent_plan_testing.h's kGeluRnn: the tanh form in
// the contraction's epilogue, erf's in a kernel) plans and matches the interpreter.
TEST(RecurrentPlan, GeluLoopsMatchTheInterpreter) {
  EXPECT_EQ(expect_loops_match_reference(typed(kGeluRnn), 31, kOracle), 1);
}

// Row kernels in a loop body (kNormRnn: a layer norm, its eps a `full` that the lowering
// hoists before the loop, and a row's sum) become row phases and match the interpreter.
TEST(RecurrentPlan, RowKernelLoopsMatchTheInterpreter) {
  EXPECT_EQ(expect_loops_match_reference(typed(kNormRnn), 37, kOracle), 1);
}

// The first loop of `text` (lowered with `options`) that is refused, and why ("" when
// every loop is planned).
std::string first_refusal(const std::string& text, const codegen::LowerOptions& options) {
  const Graph g = typed(text);
  StatusOr<Lowering> l = codegen::lower_to_program(g, options);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return "";
  std::vector<std::byte> arena, inputs;
  for (HostLoop& h : bind_loops(*l, arena, inputs)) {
    StatusOr<RecurrentPlan> plan = plan_recurrent_loop(l->program, *h.loop, h.where);
    if (!plan.ok()) return plan.error().message;
    if (std::getenv("RPLAN_DUMP")) std::printf("%s\n%s\n", h.body.to_string().c_str(), plan->program.to_string().c_str());
  }
  return "";
}

// A cell with `n` results (the first the carry), each the exp of the one before, all
// live to the end: n registers.
std::string long_cell(int n) {
  std::string types, body, results;
  for (int i = 1; i <= n; ++i) {
    types += ", f32[5,2,3]";
    body += "      %e" + std::to_string(i) + " = exp(%e" + std::to_string(i - 1) + ") : f32[2,3]\n";
    results += ", %e" + std::to_string(i);
  }
  std::string ys;
  for (int i = 1; i <= n; ++i) ys += ", %y" + std::to_string(i);
  return "graph @long(%h0: f32[2,3], %xs: f32[5,2,3]) {\n  %h" + ys + " = scan(%h0, %xs) {carries=1, length=5} : f32[2,3]" +
         types + " ({\n    ^cell(%ch: f32[2,3], %cx: f32[2,3]):\n      %e0 = add(%ch, %cx) : f32[2,3]\n" + body +
         "      return %e1" + results + "\n  })\n  return %h" + ys + "\n}\n";
}

// A `full` written in a body (here a carry reset to it each iteration) is hoisted out of
// the loop by the lowering (hoist-loop-invariants: it has no operands), so the body holds
// no library full — the planner refuses one (RefusalsSayWhy) — and the loop plans with
// the reset as a copy phase from the hoisted const.
TEST(RecurrentPlan, AFullInTheBodyIsHoistedOutOfTheLoop) {
  constexpr char kFullCarry[] = R"(graph @fill(%g0: f32[2,3], %h0: f32[2,3], %xs: f32[4,2,3]) {
  %g, %h, %hs = scan(%g0, %h0, %xs) {carries=2, length=4} : f32[2,3], f32[2,3], f32[4,2,3] ({
    ^cell(%cg: f32[2,3], %ch: f32[2,3], %cx: f32[2,3]):
      %k = full() {shape=[2,3], value=0.25} : f32[2,3]
      %a = add(%cg, %ch) : f32[2,3]
      %s = add(%a, %cx) : f32[2,3]
      %t = tanh(%s) : f32[2,3]
      return %k, %t, %t
  })
  return %g, %h, %hs
}
)";
  EXPECT_EQ(first_refusal(kFullCarry, codegen::cuda_lower_options()), "");
  EXPECT_EQ(expect_loops_match_reference(typed(kFullCarry), 41, kOracle), 1);
}

TEST(RecurrentPlan, RefusalsSayWhy) {
  const codegen::LowerOptions cuda = codegen::cuda_lower_options();
  const std::pair<std::string, std::string> kCases[] = {
      // A reduction in the body (the row sum of a product).
      {testing::kScanStoredConcatGraph, "persistent loop @cell: invocation 2 (generated): kernel k2 is a reduction kernel"},
      // A loop inside the body.
      {R"(graph @nest(%h0: f32[2,3], %xs: f32[4,2,3]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=4} : f32[2,3], f32[4,2,3] ({
    ^outer(%oh: f32[2,3], %ox: f32[2,3]):
      %ih, %ihs = scan(%oh, %ox) {carries=1, consts=1, length=2} : f32[2,3], f32[2,2,3] ({
        ^inner(%ic: f32[2,3], %ii: f32[2,3]):
          %ia = add(%ii, %ic) : f32[2,3]
          %t = tanh(%ia) : f32[2,3]
          return %t, %t
      })
      %a = add(%ih, %ox) : f32[2,3]
      return %a, %a
  })
  return %h, %hs
}
)", "persistent loop @outer: invocation 0 (loop): a nested loop"},
      // f64 values.
      {R"(graph @double(%w: f64[4,4], %h0: f64[2,4], %xs: f64[3,2,4]) {
  %h, %hs = scan(%w, %h0, %xs) {carries=1, consts=1, length=3} : f64[2,4], f64[3,2,4] ({
    ^cell(%cw: f64[4,4], %ch: f64[2,4], %cx: f64[2,4]):
      %m = matmul(%ch, %cw) : f64[2,4]
      %a = add(%m, %cx) : f64[2,4]
      %t = tanh(%a) : f64[2,4]
      return %t, %t
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (contraction): a matmul of f64 and f64 into f64 (f32, bf16 and f16 only)"},
      // Two carries swapped every iteration.
      {R"(graph @swap(%a0: f32[2,3], %b0: f32[2,3], %xs: f32[4,2,3]) {
  %a, %b, %ys = scan(%a0, %b0, %xs) {carries=2, length=4} : f32[2,3], f32[2,3], f32[4,2,3] ({
    ^cell(%ca: f32[2,3], %cb: f32[2,3], %cx: f32[2,3]):
      %s = add(%ca, %cx) : f32[2,3]
      return %cb, %ca, %s
  })
  return %a, %b, %ys
}
)", "persistent loop @cell: two carries are swapped"},
      // Too many iterations to bind each slot: the loop is bound once.
      {R"(graph @long(%h0: f32[1], %xs: f32[300000,1]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=300000} : f32[1], f32[300000,1] ({
    ^cell(%ch: f32[1], %cx: f32[1]):
      %s = add(%ch, %cx) : f32[1]
      return %s, %s
  })
  return %h, %hs
}
)", "persistent loop @cell: the loop is bound once for all its iterations (runtime/loop_slots.h), not per slot"},
      // A batched matmul in the body.
      {R"(graph @batched(%w: f32[2,4,4], %h0: f32[2,3,4], %xs: f32[5,2,3,4]) {
  %h, %hs = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : f32[2,3,4], f32[5,2,3,4] ({
    ^cell(%cw: f32[2,4,4], %ch: f32[2,3,4], %cx: f32[2,3,4]):
      %m = matmul(%ch, %cw) : f32[2,3,4]
      %a = add(%m, %cx) : f32[2,3,4]
      return %a, %a
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (library matmul): a matmul of f32[2,3,4] and f32[2,4,4] (two dimensions only)"},
      // A library op other than matmul (a transpose) in the body.
      {R"(graph @moved(%h0: f32[3,3], %xs: f32[5,3,3]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=5} : f32[3,3], f32[5,3,3] ({
    ^cell(%ch: f32[3,3], %cx: f32[3,3]):
      %t = transpose(%ch) {perm=[1,0]} : f32[3,3]
      %a = add(%t, %cx) : f32[3,3]
      %e = exp(%a) : f32[3,3]
      return %e, %e
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (library transpose): only a matmul of the library ops runs in a persistent loop"},
      // A row kernel (a softmax) in the body: its max is no row reduction a program holds.
      {R"(graph @rows(%h0: f32[3,4], %xs: f32[5,3,4]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=5} : f32[3,4], f32[5,3,4] ({
    ^cell(%ch: f32[3,4], %cx: f32[3,4]):
      %a = add(%ch, %cx) : f32[3,4]
      %s = softmax(%a) {axis=1} : f32[3,4]
      return %s, %s
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (generated k0): op max (a row kernel's max: only sums and means)"},
      // A row kernel reading an operand broadcast along its middle dimension.
      {R"(graph @norm3(%b: f32[3,4], %h0: f32[2,3,4], %xs: f32[5,2,3,4]) {
  %h, %hs = scan(%b, %h0, %xs) {carries=1, consts=1, length=5} : f32[2,3,4], f32[5,2,3,4] ({
    ^cell(%cb: f32[3,4], %ch: f32[2,3,4], %cx: f32[2,3,4]):
      %a = add(%ch, %cb) : f32[2,3,4]
      %m = mean(%a) {axes=[2], keepdims=true} : f32[2,3,1]
      %d = sub(%a, %m) : f32[2,3,4]
      %t = mul(%d, %cx) : f32[2,3,4]
      return %t, %t
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (generated k0): an operand [3,4] of a row kernel over [2,3,4]"},
      // A bias broadcast along the middle of three dimensions.
      {R"(graph @three(%b: f32[2,1,4], %h0: f32[2,3,4], %xs: f32[5,2,3,4]) {
  %h, %hs = scan(%b, %h0, %xs) {carries=1, consts=1, length=5} : f32[2,3,4], f32[5,2,3,4] ({
    ^cell(%cb: f32[2,1,4], %ch: f32[2,3,4], %cx: f32[2,3,4]):
      %a = add(%ch, %cb) : f32[2,3,4]
      %m = mul(%a, %cx) : f32[2,3,4]
      %t = tanh(%m) : f32[2,3,4]
      return %t, %t
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (generated k0): its iteration space [2,3,4] does not collapse to two dimensions"},
      // f64 values in an elementwise kernel.
      {R"(graph @double_cell(%h0: f64[2,4], %xs: f64[3,2,4]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=3} : f64[2,4], f64[3,2,4] ({
    ^cell(%ch: f64[2,4], %cx: f64[2,4]):
      %a = add(%ch, %cx) : f64[2,4]
      %t = tanh(%a) : f64[2,4]
      return %t, %t
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (generated k0): a f64 operand"},
      // A bool ys the loop copies per iteration (the body returns its xs).
      {R"(graph @mask(%h0: f32[2,4], %xs: f32[3,2,4], %ms: bool[3,2,4]) {
  %h, %hs, %mo = scan(%h0, %xs, %ms) {carries=1, length=3} : f32[2,4], f32[3,2,4], bool[3,2,4] ({
    ^cell(%ch: f32[2,4], %cx: f32[2,4], %cm: bool[2,4]):
      %a = add(%ch, %cx) : f32[2,4]
      %t = tanh(%a) : f32[2,4]
      return %t, %t, %cm
  })
  return %h, %hs, %mo
}
)", "persistent loop @cell: the copy of ys 2: a bool copy (f32, bf16 and f16 only)"},
      // A value cast to an integer inside a kernel.
      {R"(graph @cast(%h0: f32[2,4], %xs: f32[3,2,4]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=3} : f32[2,4], f32[3,2,4] ({
    ^cell(%ch: f32[2,4], %cx: f32[2,4]):
      %a = add(%ch, %cx) : f32[2,4]
      %i = cast(%a) {dtype=i32} : i32[2,4]
      %f = cast(%i) {dtype=f32} : f32[2,4]
      return %f, %f
  })
  return %h, %hs
}
)", "persistent loop @cell: invocation 0 (generated k0): a cast to i32"},
      // More values live at once than registers.
      {long_cell(kMaxCellRegisters + 1), "persistent loop @cell: invocation 0 (generated k0): more than 32 registers"},
  };
  for (const auto& [text, want] : kCases) {
    SCOPED_TRACE(text.substr(0, 40));
    EXPECT_EQ(first_refusal(text, cuda), want);
  }
}

// A body invocation that zeroes bytes before it runs (a merged update's padding, which no
// lowered loop body holds), on a Program built by hand: h' = k0(h), h' also the ys.
TEST(RecurrentPlan, ClearedBytesAreRefused) {
  const Type t = f32({4});
  Program body;
  body.name = "cell";
  body.inputs = {{"h", t, InputKind::data}};
  lay_out_inputs_in_order(body);
  body.arena_bytes = 64;
  Invocation k;
  k.kind = Invocation::Kind::generated;
  k.kernel = 0;
  k.operands = {BufferRef{Space::input, 0, 0, t}};
  k.results = {BufferRef{Space::arena, -1, 0, t}};
  k.clear = {BufferRef{Space::arena, -1, 32, Type{DType::u8, Shape({16})}}};
  body.code = {k};
  body.outputs = {k.results[0], k.results[0]};
  Program root;
  root.bodies = {body};
  Invocation loop;
  loop.kind = Invocation::Kind::loop;
  loop.body = 0;
  loop.node.op = Op::Scan;
  loop.node.attrs = {{"length", int64_t{3}}, {"carries", int64_t{1}}};
  loop.operands = {BufferRef{Space::arena, -1, 0, t}};
  loop.results = {BufferRef{Space::arena, -1, 64, t}, BufferRef{Space::arena, -1, 128, f32({3, 4})}};
  std::vector<float> arena(64), body_arena(16), body_inputs(16);
  const LoopAddresses where{{arena.data()}, {arena.data() + 16, arena.data() + 32}, body_arena.data(), body_inputs.data()};
  StatusOr<RecurrentPlan> plan = plan_recurrent_loop(root, loop, where);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "persistent loop @cell: invocation 0 (generated): it clears buffers before it runs");
}

// Loops with early exits: the CPU's lowering keeps `stop` (the CUDA one masks it).
TEST(RecurrentPlan, EarlyExitsAreRefused) {
  std::ifstream file("passes/testdata/loop_exits.wir");
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(first_refusal(text.str(), codegen::LowerOptions{}),
            "persistent loop @cell: the loop has an early exit (stop or active)");
}

}  // namespace recurrent_plan_test
}  // namespace
}  // namespace weft::cuda
