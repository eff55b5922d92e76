// Loops in Programs (runtime/program.h): a `scan` lowers to one loop invocation over a
// body Program, whatever its length; the cpu executor runs it (forward, reverse, nested,
// a loop's gradient, carries that are body inputs, early exits) as the reference
// interpreter does; unroll_loops leaves none, on the cpu and the cuda target alike; the
// AOT source carries bodies.
#include <gtest/gtest.h>

#include <memory>

#include "autodiff/grad.h"
#include "autodiff/testing/skipped_slots.h"
#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "codegen/program_source.h"
#include "codegen/target_test_util.h"
#include "codegen/targets.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "passes/mask_loop_exits.h"
#include "runtime/cpu/executor.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft::codegen {
namespace {
namespace loop_program_test {  // this file's names, apart in its package's unity test

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

ValueId node(Graph& g, Op op, std::vector<ValueId> operands, Attrs attrs = {}) {
  return *add_typed_node(g, op, std::move(operands), std::move(attrs), Location{});
}

// h' = tanh(h·w + x_t), y_t = h'·x_t; outputs h_T, the ys and sum(ys²).
Graph rnn(int64_t length, bool reverse = false) {
  Graph g("rnn");
  ValueId w = g.add_input("w", f32({8, 8}));
  ValueId h0 = g.add_input("h0", f32({4, 8}));
  ValueId xs = g.add_input("xs", f32({length, 4, 8}));
  auto body = std::make_shared<Graph>("cell");
  ValueId bw = body->add_input("w", f32({8, 8}));
  ValueId bh = body->add_input("h", f32({4, 8}));
  ValueId bx = body->add_input("x", f32({4, 8}));
  ValueId next = node(*body, Op::Tanh, {node(*body, Op::Add, {node(*body, Op::Matmul, {bh, bw}), bx})});
  body->add_output(next);
  body->add_output(node(*body, Op::Mul, {next, bx}));
  auto r = add_scan(g, {w, h0, xs}, {length, 1, 1, reverse}, body, Location{});
  g.add_output((*r)[0]);
  g.add_output((*r)[1]);
  g.add_output(node(g, Op::Sum, {node(g, Op::Mul, {(*r)[1], (*r)[1]})}));
  return g;
}


void expect_cpu_matches_reference(const Graph& g) { expect_target_matches_reference("cpu", g, 11); }

int loops(const Program& p) {
  int n = 0;
  for (const Invocation& inv : p.code) n += inv.kind == Invocation::Kind::loop;
  return n;
}

TEST(LoopProgram, OneLoopInvocationWhateverTheLength) {
  auto short_loop = lower_to_program(rnn(3));
  auto long_loop = lower_to_program(rnn(300));
  ASSERT_TRUE(short_loop.ok()) << short_loop.error().to_string();
  ASSERT_TRUE(long_loop.ok()) << long_loop.error().to_string();
  EXPECT_EQ(loops(short_loop->program), 1);
  ASSERT_EQ(short_loop->program.bodies.size(), 1u);
  EXPECT_EQ(short_loop->program.code.size(), long_loop->program.code.size());
  EXPECT_EQ(short_loop->program.kernels.size(), long_loop->program.kernels.size());
  EXPECT_EQ(short_loop->program.bodies[0].code.size(), long_loop->program.bodies[0].code.size());
  EXPECT_TRUE(short_loop->program.bodies[0].kernels.empty()) << "bodies share the root's kernels";
  const std::string listing = short_loop->program.to_string();
  EXPECT_NE(listing.find("loop 3x body 0"), std::string::npos) << listing;
  EXPECT_NE(listing.find("body 0: program @cell"), std::string::npos) << listing;
  LowerOptions unrolled;
  unrolled.unroll_loops = true;
  auto flat = lower_to_program(rnn(3), unrolled);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(loops(flat->program), 0);
  EXPECT_TRUE(flat->program.bodies.empty());
}

// #31: CompileOptions::unroll_loops (TrainOptions::unroll_loops) reaches the CUDA
// lowering as it reaches the CPU's, through the one conversion every compiled target
// lowers with (Target::lower_options), which keeps each target's own options: a loop
// model's training step lowered for the GPU has no loop invocation when unrolled, and
// its loops, forward and backward, as loop invocations otherwise. Before, the cuda
// target lowered with cuda_lower_options() whatever CompileOptions said.
TEST(LoopProgram, UnrollLoopsReachesTheCpuAndTheCudaLowering) {
  for (const char* name : {"cpu", "cuda"}) {
    SCOPED_TRACE(name);
    const Target& target = **find_target(name);
    for (bool unroll : {false, true}) {
      const LowerOptions options = target.lower_options({.unroll_loops = unroll});
      EXPECT_EQ(options.unroll_loops, unroll);
      EXPECT_EQ(options.mask_loop_exits, target.name == "cuda") << "the target's own options kept";
    }
  }
  // A cell run until a head says stop, at most 3 times: a loop with an early exit.
  auto cell = FlowBuilder::from(Linear(4, 4)).through(Tanh()).build();
  ASSERT_TRUE(cell.ok()) << cell.error().to_string();
  auto net =
      FlowBuilder::from(Linear(3, 4)).loop_body(*cell).until_cond(Linear(4, 1), 3).through(Linear(4, 2)).build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  auto step = Trainer::compile(*net, {{"x", f32({5, 3})}}, LossSpec::mse(), OptimizerSpec::sgd(0.1),
                               {.backend = "reference"});
  ASSERT_TRUE(step.ok()) << step.error().to_string();
  const Target& cuda = **find_target("cuda");
  StatusOr<CudaProgram> looped = compile_cuda_program(step->step_graph(), cuda.lower_options({}));
  ASSERT_TRUE(looped.ok()) << looped.error().to_string();
  EXPECT_EQ(loops(looped->program), 2) << looped->program.to_string();  // the loop and its gradient
  StatusOr<CudaProgram> unrolled =
      compile_cuda_program(step->step_graph(), cuda.lower_options({.unroll_loops = true}));
  ASSERT_TRUE(unrolled.ok()) << unrolled.error().to_string();
  EXPECT_EQ(loops(unrolled->program), 0) << unrolled->program.to_string();
  EXPECT_TRUE(unrolled->program.bodies.empty());
  EXPECT_FALSE(unrolled->ptx.empty());
}

// A layer norm in a loop body: decompose-composites runs before hoist-loop-invariants
// (add_lowering_passes), so the eps `full` its decomposition makes is computed once
// before the loop and read as a const, not written each iteration: the body is the matmul
// and one row kernel on the cpu and the cuda target alike, and the cpu runs it as the
// interpreter does.
TEST(LoopProgram, ALayerNormsEpsIsHoistedOutOfTheLoop) {
  StatusOr<Graph> g = parse_graph(R"(graph @norm(%w: f32[8,8], %g: f32[8], %b: f32[8], %h0: f32[4,8], %xs: f32[5,4,8]) {
  %h, %hs = scan(%w, %g, %b, %h0, %xs) {carries=1, consts=3, length=5} : f32[4,8], f32[5,4,8] ({
    ^cell(%cw: f32[8,8], %cg: f32[8], %cb: f32[8], %ch: f32[4,8], %cx: f32[4,8]):
      %m = matmul(%ch, %cw) : f32[4,8]
      %a = add(%m, %cx) : f32[4,8]
      %n = layer_norm(%a, %cg, %cb) : f32[4,8]
      %t = tanh(%n) : f32[4,8]
      return %t, %t
  })
  return %h, %hs
}
)",
                                  "norm.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  for (const char* name : {"cpu", "cuda"}) {
    SCOPED_TRACE(name);
    StatusOr<Lowering> l = lower_to_program(*g, (**find_target(name)).lower_options({}));
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    ASSERT_EQ(l->program.bodies.size(), 1u);
    const Program& body = l->program.bodies[0];
    for (const Invocation& inv : body.code) {
      EXPECT_FALSE(inv.kind == Invocation::Kind::library && inv.node.op == Op::Full) << body.to_string();
    }
    EXPECT_EQ(body.code.size(), 2u) << body.to_string();  // the matmul (+ epilogue) and the row kernel
  }
  expect_cpu_matches_reference(*g);
}

TEST(LoopProgram, CpuRunsLoopsAsTheInterpreterDoes) {
  expect_cpu_matches_reference(rnn(5));
  expect_cpu_matches_reference(rnn(5, /*reverse=*/true));
}

// Early exits (`stop`, `active`): the cpu loop stops and skips as the interpreter does
// (carries kept, skipped slots zero); masked (the CUDA lowering's choice), the same.
TEST(LoopProgram, CpuStopsAndSkipsAsTheInterpreterDoes) {
  StatusOr<Graph> g = read_graph_file("passes/testdata/loop_exits.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(InferTypesPass().run(*g).ok());
  for (uint64_t seed : {1, 2, 3}) {
    auto inputs = loop_exits_inputs(*g, seed);
    auto want = reference::run(*g, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    for (bool masked : {false, true}) {
      Graph run = *g;
      if (masked) {
        ASSERT_TRUE(MaskLoopExitsPass().run(run).ok());
      }
      auto lowered = lower_to_program(run);
      ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
      EXPECT_EQ(loops(lowered->program), 2);
      auto cpu = find_target("cpu");
      ASSERT_TRUE(cpu.ok());
      auto got = (*cpu)->run(run, inputs);
      ASSERT_TRUE(got.ok()) << got.error().to_string();
      for (size_t k = 0; k < want->outputs.size(); ++k) {
        std::string why;
        EXPECT_TRUE(all_close(got->outputs[k], want->outputs[k], 1e-6, &why)) << "output " << k << ": " << why;
      }
    }
  }
}

// The gradient of loop_exits.wir's loops (its reverse loops run where the forward ones
// did: `active`), on the cpu against the interpreter.
TEST(LoopProgram, CpuRunsAnEarlyExitsGradient) {
  StatusOr<Graph> g = read_graph_file("passes/testdata/loop_exits.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(InferTypesPass().run(*g).ok());
  // A scalar of every output: sum(h·h) + sum(ys·ys) + sum(g·g) + sum(zs·zs).
  ValueId total = kNoValue;
  for (size_t k : {0, 1, 3, 4}) {
    const ValueId v = g->outputs()[k];
    const ValueId s = node(*g, Op::Sum, {node(*g, Op::Mul, {v, v})});
    total = total == kNoValue ? s : node(*g, Op::Add, {total, s});
  }
  g->set_outputs({total});
  auto grad = gradient_graph(*g, 0, {"h0", "xs"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  expect_cpu_matches_reference(*grad);
}

// #28: gradients of loops whose skipped slots hold NaN or inf (autodiff/testdata/
// skipped_slots), on the cpu as it runs loops and masked as the CUDA lowering runs them,
// equal the interpreter's with a finite value there.
TEST(LoopProgram, CpuGradientsIgnoreWhatTheSkippedSlotsHold) {
  auto cpu = find_target("cpu");
  ASSERT_TRUE(cpu.ok());
  for (const std::string& name : weft::testing::skipped_slot_graphs()) {
    StatusOr<Graph> g = weft::testing::read_skipped_slot_graph(name);
    ASSERT_TRUE(g.ok()) << g.error().to_string();
    auto grad = gradient_graph(*g, 0, weft::testing::skipped_slot_params(*g));
    ASSERT_TRUE(grad.ok()) << grad.error().to_string();
    auto want = reference::run(*grad, weft::testing::skipped_slot_inputs(*grad, weft::testing::skipped_slot_fills()[0]));
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    for (double fill : weft::testing::skipped_slot_fills()) {
      for (bool masked : {false, true}) {
        Graph run = *grad;
        if (masked) {
        ASSERT_TRUE(MaskLoopExitsPass().run(run).ok());
      }
        auto got = (*cpu)->run(run, weft::testing::skipped_slot_inputs(run, fill));
        ASSERT_TRUE(got.ok()) << got.error().to_string();
        for (size_t k = 0; k < want->outputs.size(); ++k) {
          std::string why;
          EXPECT_TRUE(all_close(got->outputs[k], want->outputs[k], 1e-5, &why))
              << name << (masked ? " masked" : "") << ", fill " << fill << ", output " << k << ": " << why;
        }
      }
    }
  }
}

// #28: binding a loop's body once per slot took memory growing with the trip count (a
// table of length × operands pointers and a bound copy of the body per slot): a valid
// loop of 2^40 iterations died with std::bad_alloc before running. Past a fixed bound
// the body is bound once and each iteration's xs are copied in.
TEST(LoopProgram, BindingMemoryDoesNotGrowWithTheTripCount) {
  EXPECT_EQ(cpu::loop_slot_bindings(int64_t{1} << 40, /*xs=*/0, /*invocations=*/3), 1);
  EXPECT_EQ(cpu::loop_slot_bindings(int64_t{1} << 40, /*xs=*/2, /*invocations=*/3), 1);
  EXPECT_EQ(cpu::loop_slot_bindings(64, /*xs=*/2, /*invocations=*/3), 64);
  // A loop of 2^40 iterations that stops after three: bound and run at once.
  StatusOr<Graph> g = parse_graph(R"(graph @long(%h0: f32[4]) {
  %k0 = full() {shape=[], value=0, dtype=f32}
  %d0 = full() {shape=[], value=0, dtype=bool}
  %h, %k, %d = scan(%h0, %k0, %d0) {carries=3, length=1099511627776, stop=2} : f32[4], f32[], bool[] ({
    ^cell(%ch: f32[4], %ck: f32[], %cd: bool[]):
      %n = tanh(%ch) : f32[4]
      %one = full() {shape=[], value=1, dtype=f32} : f32[]
      %k2 = add(%ck, %one) : f32[]
      %three = full() {shape=[], value=3, dtype=f32} : f32[]
      %d2 = ge(%k2, %three) : bool[]
      return %n, %k2, %d2
  })
  return %h, %k
}
)", "long.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(InferTypesPass().run(*g).ok());
  expect_cpu_matches_reference(*g);
}

// A loop with xs past the per-slot bound: bound once, its xs copied per iteration (an
// `active` mask and a ys that is an x itself among them), as the interpreter runs it.
TEST(LoopProgram, ALoopBoundOnceCopiesEachIterationsXs) {
  const int64_t length = 300000;
  ASSERT_EQ(cpu::loop_slot_bindings(length, 3, 1), 1);
  const std::string n = std::to_string(length);
  StatusOr<Graph> g = parse_graph("graph @copied(%w: f32[2], %h0: f32[2], %xs: f32[" + n + ",2], %on: bool[" + n + R"(]) {
  %h, %ys, %echo = scan(%w, %h0, %xs, %on) {consts=1, carries=1, length=)" + n + R"(, active=1} : f32[2], f32[)" + n +
                                      ",2], f32[" + n + R"(,2] ({
    ^cell(%cw: f32[2], %ch: f32[2], %cx: f32[2], %co: bool[]):
      %m = mul(%cx, %cw) : f32[2]
      %a = add(%ch, %m) : f32[2]
      %n = tanh(%a) : f32[2]
      return %n, %n, %cx
  })
  return %h, %ys, %echo
}
)", "copied.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(InferTypesPass().run(*g).ok());
  auto inputs = weft::testing::random_inputs(*g, 5);
  for (int64_t i = 0; i < length; ++i) inputs[3].set_double(i, i % 3 != 0);
  auto want = reference::run(*g, inputs);
  ASSERT_TRUE(want.ok()) << want.error().to_string();
  auto cpu = find_target("cpu");
  ASSERT_TRUE(cpu.ok());
  auto got = (*cpu)->run(*g, inputs);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  for (size_t k = 0; k < want->outputs.size(); ++k) {
    std::string why;
    EXPECT_TRUE(all_close(got->outputs[k], want->outputs[k], 1e-5, &why)) << "output " << k << ": " << why;
  }
}

TEST(LoopProgram, CpuRunsALoopsGradient) {
  auto grad = gradient_graph(rnn(6), 2, {"w", "h0", "xs"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  auto lowered = lower_to_program(*grad);
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  EXPECT_EQ(loops(lowered->program), 2);
  expect_cpu_matches_reference(*grad);
}

TEST(LoopProgram, NestedLoopsAndCarriesThatAreBodyInputs) {
  // Outer (3x): carries (a, b) swapped each iteration (next carries are body inputs),
  // then a ← inner loop (2x: a ← a·w).
  Graph g("nested");
  ValueId w = g.add_input("w", f32({5}));
  ValueId a0 = g.add_input("a0", f32({5}));
  ValueId b0 = g.add_input("b0", f32({5}));
  auto inner = std::make_shared<Graph>("inner");
  {
    ValueId iw = inner->add_input("w", f32({5}));
    ValueId ia = inner->add_input("a", f32({5}));
    inner->add_output(node(*inner, Op::Mul, {ia, iw}));
  }
  auto outer = std::make_shared<Graph>("outer");
  {
    ValueId ow = outer->add_input("w", f32({5}));
    ValueId oa = outer->add_input("a", f32({5}));
    ValueId ob = outer->add_input("b", f32({5}));
    auto r = add_scan(*outer, {ow, oa}, {2, 1, 1}, inner, Location{});
    outer->add_output(ob);          // a' = b
    outer->add_output((*r)[0]);     // b' = inner(a)
  }
  auto r = add_scan(g, {w, a0, b0}, {3, 2, 1}, outer, Location{});
  g.add_output((*r)[0]);
  g.add_output((*r)[1]);
  auto lowered = lower_to_program(g);
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  EXPECT_EQ(lowered->program.bodies.size(), 2u) << "one flat list of bodies";
  expect_cpu_matches_reference(g);
}

TEST(LoopProgram, TheAotSourceCarriesTheBodies) {
  auto lowered = lower_to_program(rnn(4));
  ASSERT_TRUE(lowered.ok());
  const std::string source = program_to_cpp(lowered->program, "rnn");
  EXPECT_NE(source.find("weft::Invocation::Kind::loop"), std::string::npos);
  EXPECT_NE(source.find("const weft::ProgramTables kBodies[] = {"), std::string::npos) << source;
  EXPECT_NE(source.find("kCodeBody0"), std::string::npos);
}

}  // namespace loop_program_test
}  // namespace
}  // namespace weft::codegen
