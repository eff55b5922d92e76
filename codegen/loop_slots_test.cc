// #31: a loop's ys written straight into their stacked slot and carries chained to a ys
// (runtime/loop_slots.h), so an iteration copies nothing it need not: the copies counted
// from the bound cpu executor (its loop lines in describe()) and from the plan of the
// CUDA lowering's Programs, and the results equal to the reference interpreter's for
// forward, reverse, `stop`, `active` and nested loops.
#include <gtest/gtest.h>

#include <memory>
#include <cmath>
#include <cstring>
#include <regex>

#include "bench/models.h"
#include "codegen/cpu_backend.h"
#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "codegen/target_test_util.h"
#include "frontend/training.h"
#include "ir/scan.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/loop_slots.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"
#include "tests/testing/loop_graphs.h"
#include "training/step_inputs.h"

namespace weft::codegen {
namespace {
namespace loop_slots_test {  // this file's names, apart in its package's unity test

StatusOr<Graph> typed(const std::string& text) {
  StatusOr<Graph> g = parse_graph(text, "slots.wir");
  if (!g.ok()) return g.error();
  WEFT_RETURN_IF_ERROR(InferTypesPass().run(*g).status());
  return g;
}

// The loop lines of `ex`'s describe(): "loop 5x over @cell (... copies per iteration: N of B bytes)".
std::vector<std::string> loop_lines(const cpu::Executor& ex) {
  std::vector<std::string> lines;
  const std::string all = ex.describe();
  const std::regex loop(R"(loop \d+x over @\S+ \(.*\))");
  for (auto it = std::sregex_iterator(all.begin(), all.end(), loop); it != std::sregex_iterator(); ++it) {
    lines.push_back(it->str());
  }
  return lines;
}

// `g` compiled for the cpu and run on `inputs`, against the reference interpreter; the
// loop lines of its executor.
std::vector<std::string> expect_cpu_matches_reference(const Graph& g, const std::vector<Tensor>& inputs) {
  auto want = reference::run(g, inputs);
  EXPECT_TRUE(want.ok()) << want.error().to_string();
  auto ex = compile_for_cpu(g);
  EXPECT_TRUE(ex.ok()) << ex.error().to_string();
  if (!want.ok() || !ex.ok()) return {};
  for (size_t k = 0; k < inputs.size(); ++k) EXPECT_TRUE((*ex)->set_input(static_cast<int>(k), inputs[k]).ok());
  // Twice: a second step starts from what the first left in the slots and carries.
  for (int step = 0; step < 2; ++step) {
    Status ran = (*ex)->run();
    EXPECT_TRUE(ran.ok()) << ran.error().to_string();
    for (size_t k = 0; k < want->outputs.size(); ++k) {
      std::string why;
      EXPECT_TRUE(all_close((*ex)->output(static_cast<int>(k)), want->outputs[k], 1e-5, &why))
          << "step " << step << ", output " << k << ": " << why;
    }
  }
  return loop_lines(**ex);
}

// Where each output of `plan` lies: "ys2" (slot i of result 2), "own", "previous0", "next0".
std::string places(const LoopSlots& plan) {
  std::string out;
  for (const SlotPlace& p : plan.outputs) {
    static const char* const kNames[] = {"own", "ys", "previous", "next"};
    out += (out.empty() ? "" : " ") + std::string(kNames[static_cast<int>(p.kind)]) +
           (p.kind == SlotPlace::Kind::own ? "" : std::to_string(p.index));
  }
  return out;
}

// h' = tanh(h·w + x), emitted as the carry and as the ys, plus y2 = h'·x (a ys of its own).
std::string rnn(int64_t length, bool reverse) {
  const std::string n = std::to_string(length);
  return "graph @rnn(%w: f32[6,6], %h0: f32[3,6], %xs: f32[" + n + R"(,3,6]) {
  %h, %hs, %ps = scan(%w, %h0, %xs) {consts=1, carries=1, length=)" + n + (reverse ? ", reverse=true" : "") +
         "} : f32[3,6], f32[" + n + ",3,6], f32[" + n + R"(,3,6] ({
    ^cell(%cw: f32[6,6], %ch: f32[3,6], %cx: f32[3,6]):
      %m = matmul(%ch, %cw) : f32[3,6]
      %a = add(%m, %cx) : f32[3,6]
      %n = tanh(%a) : f32[3,6]
      %p = mul(%n, %cx) : f32[3,6]
      return %n, %n, %p
  })
  return %h, %hs, %ps
}
)";
}

TEST(LoopSlots, AnRnnsStateIsWrittenInItsSlotAndReadFromThePreviousOne) {
  for (bool reverse : {false, true}) {
    for (int64_t length : {1, 2, 7}) {
      SCOPED_TRACE((reverse ? "reverse, length " : "length ") + std::to_string(length));
      StatusOr<Graph> g = typed(rnn(length, reverse));
      ASSERT_TRUE(g.ok()) << g.error().to_string();
      const std::vector<std::string> lines = expect_cpu_matches_reference(*g, weft::testing::random_inputs(*g, 3));
      ASSERT_EQ(lines.size(), 1u);
      EXPECT_NE(lines[0].find("bound per slot; copies per iteration: 0 of 0 bytes"), std::string::npos) << lines[0];
      // The plan: h' in %hs's slot (the carry chained to it), %ps in its own.
      auto lowered = lower_to_program(*g);
      ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
      const Program& p = lowered->program;
      ASSERT_EQ(p.bodies.size(), 1u);
      const LoopSlots plan = plan_loop_slots(p, p.code.back(), p.bodies[0]);
      EXPECT_EQ(places(plan), "ys1 ys1 ys2");
      EXPECT_EQ(plan.carry_ys, (std::vector<int>{1}));
      EXPECT_EQ(plan.shifted, (std::vector<bool>{false}));
    }
  }
}


TEST(LoopSlots, ACarryWhoseOldValueIsAYsIsShiftedIntoIt) {
  StatusOr<Graph> g = typed(weft::testing::kScanSlotsGraph);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const std::vector<std::string> lines = expect_cpu_matches_reference(*g, weft::testing::random_inputs(*g, 9));
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    EXPECT_NE(line.find("copies per iteration: 0 of 0 bytes"), std::string::npos) << line;
  }
  auto lowered = lower_to_program(*g);
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  const Program& p = lowered->program;
  std::vector<std::string> plans;
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::loop) continue;
    const LoopSlots plan = plan_loop_slots(p, inv, p.bodies[static_cast<size_t>(inv.body)]);
    plans.push_back(places(plan));
    if (plans.size() == 1) {
      EXPECT_EQ(plan.carry_ys, (std::vector<int>{2, 3}));
      EXPECT_EQ(plan.shifted, (std::vector<bool>{false, true}));
    }
  }
  EXPECT_EQ(plans, (std::vector<std::string>{"ys2 next1 ys2 ys3", "ys1 ys1"}));
}

// check-numerics reads a body's results where the slot's binding put them: a NaN written
// straight into a ys slot (the carry chained to it) is found in its iteration.
TEST(LoopSlots, CheckNumericsFindsANanWrittenInASlot) {
  StatusOr<Graph> g = typed(R"(graph @roots(%h0: f32[3], %xs: f32[4,3]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=4} : f32[3], f32[4,3] ({
    ^root(%rh: f32[3], %rx: f32[3]):
      %p = mul(%rh, %rx) : f32[3]
      %r = sqrt(%p) : f32[3]
      return %r, %r
  })
  return %hs
}
)");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  CpuOptions options;
  options.executor.check_numerics = true;
  auto ex = compile_for_cpu(*g, options);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  ASSERT_NE(loop_lines(**ex)[0].find("copies per iteration: 0 of 0 bytes"), std::string::npos);
  ASSERT_TRUE((*ex)->set_input(0, Tensor::from_vector<float>({3}, {4, 4, 4})).ok());
  // h: 2, then 1.41, then the root of -1.41 in iteration 2.
  ASSERT_TRUE((*ex)->set_input(1, Tensor::from_vector<float>({4, 3}, {1, 1, 1, 1, 1, 1, -1, 1, 1, 1, 1, 1})).ok());
  Status s = (*ex)->run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().to_string().find("check-numerics: sqrt produced nan (f32[3], element 0)"), std::string::npos)
      << s.error().to_string();
  EXPECT_NE(s.error().to_string().find("in iteration 2 of the loop at slots.wir:2:3"), std::string::npos)
      << s.error().to_string();
}

// A stored concat that is a ys: its parts' kernels write its slot, nothing is copied, no
// concat runs; the interpreter's results.
TEST(LoopSlots, AStoredConcatsPartsAreWrittenInItsSlot) {
  StatusOr<Graph> g = typed(weft::testing::kScanStoredConcatGraph);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const std::vector<std::string> lines = expect_cpu_matches_reference(*g, weft::testing::random_inputs(*g, 4));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("copies per iteration: 0 of 0 bytes"), std::string::npos) << lines[0];
  auto lowered = lower_to_program(*g);
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  int writers = 0;
  for (const Invocation& inv : lowered->program.bodies[0].code) {
    EXPECT_NE(inv.node.op, Op::Concat);
    writers += !inv.results.empty() && inv.results[0].type.shape == Shape({4, 16});
  }
  EXPECT_EQ(writers, 2) << lowered->program.to_string();
}

// check-numerics after a kernel storing a concat's part (passes/fold_concats.h) scans
// its window alone: the other part's window still holds the NaN of a step run unchecked
// (its kernel runs later: its part is over another iteration space than the first's, so
// the two are not one kernel), which is no error; a NaN in the window is, named by its op.
TEST(LoopSlots, CheckNumericsScansAStoredPartsWindowAlone) {
  StatusOr<Graph> g = typed(R"(graph @parts(%x: f32[4,8], %y: f32[4,8]) {
  %a = tanh(%x) : f32[4,8]
  %p = mul(%x, %y) : f32[4,8]
  %q = sum(%p) {axes=[1]} : f32[4]
  %z = slice(%y) {start=[0, 0], stop=[4, 4]} : f32[4,4]
  %b = sqrt(%z) : f32[4,4]
  %c = concat(%a, %b) {axis=1} : f32[4,12]
  %m = mul(%c, %c) : f32[4,12]
  return %m, %q
}
)");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  auto ex = compile_for_cpu(*g);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  for (const Invocation& inv : (*ex)->program().code) ASSERT_NE(inv.node.op, Op::Concat) << "stored";
  std::vector<float> ones(32, 1.0f), negative(32, -1.0f);
  ASSERT_TRUE((*ex)->set_input(0, Tensor::from_vector<float>({4, 8}, ones)).ok());
  ASSERT_TRUE((*ex)->set_input(1, Tensor::from_vector<float>({4, 8}, negative)).ok());
  ASSERT_TRUE((*ex)->run().ok());  // unchecked: %b's window holds NaN
  (*ex)->set_check_numerics(true);
  ASSERT_TRUE((*ex)->set_input(1, Tensor::from_vector<float>({4, 8}, ones)).ok());
  Status clean = (*ex)->run();
  EXPECT_TRUE(clean.ok()) << clean.error().to_string();
  ASSERT_TRUE((*ex)->set_input(1, Tensor::from_vector<float>({4, 8}, negative)).ok());
  Status s = (*ex)->run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().to_string().find("check-numerics: sqrt produced nan"), std::string::npos) << s.error().to_string();
}

// A loop whose stacked result overlaps one of its operands (the plan is told where they
// lie) keeps copying that ys: its slot is written while the operands are read.
TEST(LoopSlots, AYsOverlappingAnOperandIsCopied) {
  StatusOr<Graph> g = typed(rnn(4, false));
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  auto lowered = lower_to_program(*g);
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  const Program& body = lowered->program.bodies[0];
  const Invocation& loop = lowered->program.code.back();
  std::vector<std::byte> memory(1 << 14);
  std::byte* at = memory.data();
  std::vector<const void*> in = {at, at + 1024, at + 2048};
  std::vector<void*> apart = {at + 4096, at + 8192, at + 12288};
  EXPECT_EQ(places(plan_loop_slots(body, loop, in, apart)), "ys1 ys1 ys2");
  std::vector<void*> over_xs = {at + 4096, at + 8192, at + 2048};  // %ps over %xs
  const LoopSlots plan = plan_loop_slots(body, loop, in, over_xs);
  EXPECT_EQ(places(plan), "ys1 ys1 own");
  const LoopCopies copies = loop_copies_per_iteration(plan, body, loop);
  EXPECT_EQ(copies.calls, 1);
  EXPECT_EQ(copies.bytes, 3 * 6 * 4);
}

// `stop` and `active`: ys still in their slots, a skipped or stopped slot zero; the
// carries are not chained (the next iteration reads a carry where the last one that ran
// left it), as the interpreter runs them; and masked, as the CUDA lowering runs them.
TEST(LoopSlots, EarlyExitsKeepTheirCarriesAndZeroTheirSkippedSlots) {
  StatusOr<Graph> g = read_graph_file("passes/testdata/loop_exits.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(InferTypesPass().run(*g).ok());
  for (uint64_t seed : {1, 2, 3}) {
    auto inputs = loop_exits_inputs(*g, seed);
    expect_cpu_matches_reference(*g, inputs);
  }
  auto lowered = lower_to_program(*g);
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  const Program& p = lowered->program;
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::loop) continue;
    const LoopSlots plan = plan_loop_slots(p, inv, p.bodies[static_cast<size_t>(inv.body)]);
    for (int c = 0; c < static_cast<int>(plan.carry_ys.size()); ++c) EXPECT_FALSE(plan.chained(c));
  }
}

// An inner loop's stacked ys inside an outer loop's body, itself a ys of the outer loop:
// the inner loop writes into the outer slot, the outer state chained; forward and reverse.
TEST(LoopSlots, NestedLoopsWriteIntoTheOuterSlot) {
  for (const char* reverse : {"", ", reverse=true"}) {
    StatusOr<Graph> g = typed(std::string(R"(graph @nested(%w: f32[4], %h0: f32[4], %xs: f32[3,2,4]) {
  %h, %hs, %inner = scan(%w, %h0, %xs) {consts=1, carries=1, length=3)") + reverse +
                              R"(} : f32[4], f32[3,4], f32[3,2,4] ({
    ^outer(%ow: f32[4], %oh: f32[4], %ox: f32[2,4]):
      %ih, %iys = scan(%ow, %oh, %ox) {consts=1, carries=1, length=2} : f32[4], f32[2,4] ({
        ^inner(%iw: f32[4], %ic: f32[4], %ix: f32[4]):
          %m = mul(%ic, %iw) : f32[4]
          %a = add(%m, %ix) : f32[4]
          %t = tanh(%a) : f32[4]
          return %t, %t
      })
      %s = sin(%ih) : f32[4]
      return %s, %s, %iys
  })
  return %h, %hs, %inner
}
)");
    ASSERT_TRUE(g.ok()) << g.error().to_string();
    const std::vector<std::string> lines = expect_cpu_matches_reference(*g, weft::testing::random_inputs(*g, 5));
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("copies per iteration: 0 of 0 bytes"), std::string::npos) << lines[0];
  }
}

// The #31 figure: what the suite's recurrent models copy per step in their loops, on the
// cpu (counted by the bound executor) and in the CUDA lowering (planned as runtime/cuda
// binds it); and what the executors copied before the plan (every ys, every carry not
// written over its input; on the GPU every iteration's xs too, its body bound once).
struct StepCopies {
  int64_t calls = 0;  ///< Per step: each loop's copies per iteration times its length.
  int64_t bytes = 0;
  std::string loops;  ///< One line per loop.

  void add(LoopCopies c, int64_t length, const std::string& line) {
    calls += c.calls * length;
    bytes += c.bytes * length;
    loops += line + "\n";
  }
  std::string total() const { return std::to_string(calls) + " copies of " + std::to_string(bytes) + " bytes"; }
};

StatusOr<Graph> step_graph(const std::string& model) {
  WEFT_ASSIGN_OR_RETURN(bench::BenchModel m, bench::make_bench_model(model, bench::Preset::cpu));
  WEFT_ASSIGN_OR_RETURN(Trainer t, Trainer::compile(m.net, m.inputs, m.loss, OptimizerSpec::adam(m.lr),
                                                    {.seed = 1, .backend = "reference"}));
  return t.step_graph();
}

// Before and after, planned from `p`'s loops; `xs_copied`: the old executor copied every
// iteration's xs (runtime/cuda's).
std::pair<StepCopies, StepCopies> planned_copies(const Program& p, bool xs_copied) {
  StepCopies before, after;
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::loop) continue;
    const Program& body = p.bodies[static_cast<size_t>(inv.body)];
    const int64_t length = inv.node.int_attr("length");
    LoopCopies old = loop_copies_per_iteration(no_loop_slots(body, inv), body, inv);
    const size_t first_x = static_cast<size_t>(inv.node.int_attr("consts") + inv.node.int_attr("carries"));
    for (size_t k = first_x; xs_copied && loop_slot_bindings(inv, body) > 1 && k < body.inputs.size(); ++k) {
      ++old.calls;
      old.bytes += static_cast<int64_t>(body.inputs[k].type.bytes());
    }
    const LoopCopies now = loop_copies_per_iteration(plan_loop_slots(p, inv, body), body, inv);
    const std::string line = "loop " + std::to_string(length) + "x over @" + body.name + ": ";
    before.add(old, length, line + std::to_string(old.calls) + " of " + std::to_string(old.bytes) + " bytes");
    after.add(now, length, line + std::to_string(now.calls) + " of " + std::to_string(now.bytes) + " bytes");
  }
  return {before, after};
}

StepCopies cpu_copies(const Graph& step) {
  StepCopies s;
  auto ex = compile_for_cpu(step);
  EXPECT_TRUE(ex.ok()) << ex.error().to_string();
  if (!ex.ok()) return s;
  const std::regex counts(R"(loop (\d+)x .*copies per iteration: (\d+) of (\d+) bytes)");
  for (const std::string& line : loop_lines(**ex)) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(line, m, counts)) << line;
    s.add({std::stoll(m[2]), std::stoll(m[3])}, std::stoll(m[1]), line);
  }
  return s;
}

TEST(LoopSlots, TheRecurrentModelsCopyLessPerStep) {
  // model, copies per step after on the cpu and the GPU (calls, bytes): lstm_seq keeps
  // one, its first layer's h_{t-1} (kept for the gradient; h_t is in its own ys slot).
  const struct {
    std::string model;
    int64_t calls, bytes;
  } kWant[] = {{"lstm_seq", 50, 50 * 16384}, {"gru_seq", 0, 0}};
  for (const auto& want : kWant) {
    SCOPED_TRACE(want.model);
    StatusOr<Graph> step = step_graph(want.model);
    ASSERT_TRUE(step.ok()) << step.error().to_string();
    StatusOr<Lowering> cpu = lower_to_program(*step);
    StatusOr<Lowering> gpu = lower_to_program(*step, cuda_lower_options());
    ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
    ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
    const auto [cpu_before, cpu_after] = planned_copies(cpu->program, /*xs_copied=*/false);
    const auto [gpu_before, gpu_after] = planned_copies(gpu->program, /*xs_copied=*/true);
    const StepCopies bound = cpu_copies(*step);
    std::printf("%s cpu before: %s per step\n%s%s cpu after: %s per step\n%s%s cuda before: %s per step\n%s"
                "%s cuda after: %s per step\n%s",
                want.model.c_str(), cpu_before.total().c_str(), cpu_before.loops.c_str(), want.model.c_str(),
                bound.total().c_str(), bound.loops.c_str(), want.model.c_str(), gpu_before.total().c_str(),
                gpu_before.loops.c_str(), want.model.c_str(), gpu_after.total().c_str(), gpu_after.loops.c_str());
    EXPECT_EQ(bound.calls, want.calls);
    EXPECT_EQ(bound.bytes, want.bytes);
    EXPECT_EQ(cpu_after.total(), bound.total()) << "the plan counts what the bound executor copies";
    EXPECT_EQ(gpu_after.calls, want.calls);
    EXPECT_EQ(gpu_after.bytes, want.bytes);
    EXPECT_GT(cpu_before.calls, 10 * want.calls);
  }
}

// `model`'s training step bound on the cpu once per entry of `options`, each given the
// same inputs (a second step's: step 1, zero optimizer states).
std::vector<std::unique_ptr<cpu::Executor>> bound_steps(const std::string& model,
                                                       const std::vector<CpuOptions>& options) {
  std::vector<std::unique_ptr<cpu::Executor>> ex;
  StatusOr<Graph> step = step_graph(model);
  EXPECT_TRUE(step.ok()) << step.error().to_string();
  if (!step.ok()) return ex;
  std::vector<Tensor> inputs = weft::testing::random_inputs(*step, 7);
  for (const CpuOptions& o : options) {
    auto compiled = compile_for_cpu(*step, o);
    EXPECT_TRUE(compiled.ok()) << compiled.error().to_string();
    if (!compiled.ok()) return {};
    for (size_t k = 0; k < inputs.size(); ++k) {
      // A first step: random_inputs draws weft.step = 0 and Adam's moments from U(±1),
      // where the bias correction divides by zero and sqrt(v) of a negative v is NaN:
      // every updated parameter would be NaN (and bitwise equal either way).
      const ProgramInput& input = (*compiled)->program().inputs[k];
      if (input.name == kStepInput) inputs[k] = Tensor::scalar(DType::i64, 1);
      if (input.kind == InputKind::state) inputs[k] = Tensor(input.type);
      EXPECT_TRUE((*compiled)->set_input(static_cast<int>(k), inputs[k]).ok());
    }
    ex.push_back(std::move(*compiled));
  }
  return ex;
}

// Two steps of the executors `ex` (two of them): bitwise equal outputs and inputs after
// each, the parameters finite.
void expect_bitwise_steps(const std::vector<std::unique_ptr<cpu::Executor>>& ex) {
  ASSERT_EQ(ex.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    ASSERT_TRUE(ex[0]->run().ok());
    ASSERT_TRUE(ex[1]->run().ok());
    for (int k = 0; k < ex[0]->num_outputs(); ++k) {
      const Tensor a = ex[0]->output(k), b = ex[1]->output(k);
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0) << "step " << s << ", output " << k;
    }
    for (int k = 0; k < static_cast<int>(ex[0]->program().inputs.size()); ++k) {
      const Tensor a = ex[0]->input(k), b = ex[1]->input(k);
      const ProgramInput& input = ex[0]->program().inputs[static_cast<size_t>(k)];
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0) << "step " << s << ", input %" << input.name;
      if (input.kind != InputKind::param) continue;
      for (int64_t i = 0; i < a.numel(); ++i) {
        ASSERT_TRUE(std::isfinite(a.get_double(i))) << "step " << s << ", %" << input.name << "[" << i << "]";
      }
    }
  }
}

// The recurrent models' training steps (forward loops with chained and shifted carries,
// reversed gradient loops) on the cpu: bitwise what the executor computes copying every
// ys and carry (ExecutorOptions::loop_slots off), over two steps.
TEST(LoopSlots, TheRecurrentModelsStepsAreBitwiseTheCopyingOnes) {
  for (const std::string model : {"lstm_seq", "gru_seq"}) {
    SCOPED_TRACE(model);
    std::vector<CpuOptions> options(2);
    options[1].executor.loop_slots = false;
    const std::vector<std::unique_ptr<cpu::Executor>> ex = bound_steps(model, options);
    ASSERT_EQ(ex.size(), 2u);
    EXPECT_NE(loop_lines(*ex[1]), loop_lines(*ex[0])) << "the two copy differently";
    expect_bitwise_steps(ex);
  }
}

// The invocations of every loop body of `p`.
size_t body_invocations(const Program& p) {
  size_t n = 0;
  for (const Program& body : p.bodies) n += body.code.size();
  return n;
}

// fold-concats (passes/fold_concats.h): lstm_seq's and gru_seq's backward loops store
// their gate gradients straight into the concats' buffers, one of them a ys bound to its slot
// (every window's kernel writes the slot, runtime/loop_slots.h): bitwise the steps with
// the concat copied (LowerOptions::fold_concats off), with slots and without.
TEST(LoopSlots, StoredConcatsAreBitwiseTheCopiedOnes) {
  for (const std::string model : {"lstm_seq", "gru_seq"}) {
    for (bool slots : {true, false}) {
      SCOPED_TRACE(model + (slots ? ", slots" : ", no slots"));
      std::vector<CpuOptions> options(2);
      options[0].executor.loop_slots = options[1].executor.loop_slots = slots;
      options[1].lower.fold_concats = false;
      const std::vector<std::unique_ptr<cpu::Executor>> ex = bound_steps(model, options);
      ASSERT_EQ(ex.size(), 2u);
      // lstm_seq: one concat per layer's backward loop; gru_seq: two in its one.
      const size_t saved = 2;
      EXPECT_EQ(body_invocations(ex[0]->program()) + saved, body_invocations(ex[1]->program()));
      expect_bitwise_steps(ex);
    }
  }
}

// Program::to_string() on a loop's body alone (its kernels are its root's) once indexed
// an empty kernel table; it names them by index, as the root does.
TEST(LoopSlots, ABodyListsAlone) {
  StatusOr<Graph> g = typed(rnn(3, false));
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  auto lowered = lower_to_program(*g);
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  const Program& body = lowered->program.bodies[0];
  ASSERT_TRUE(body.kernels.empty());
  const std::string alone = body.to_string();
  const std::string in_root = lowered->program.to_string();
  EXPECT_NE(alone.find("program @cell"), std::string::npos) << alone;
  EXPECT_NE(in_root.find("body 0: " + alone), std::string::npos) << alone << "\n---\n" << in_root;
}

}  // namespace loop_slots_test
}  // namespace
}  // namespace weft::codegen
