// A recurrent time step's cell as one kernel (issue #31): in the `scan` bodies of an
// LSTM's and a GRU's training step (forward and backward loops), the gate
// pre-activations' column slices are read in place by the cell's elementwise kernel
// (passes/fold_slices.h, codegen's input windows) on the CPU pipeline (lower_to_program's
// defaults) and the CUDA pipeline (cuda_lower_options()), and the backward steps' gate
// gradients are computed by one kernel (passes/fuse_elementwise.h, "Parts of one
// concat") that stores them straight into the concats that read them
// (passes/fold_concats.h, codegen's store windows), and the gate pre-activations read
// only through the cell's windows are computed inside it (passes/fold_window_producers.h:
// the forward's GEMM epilogue and the backward's recomputed sum). Pinned: the invocations
// one time step runs, before (LowerOptions::fold_slices, fold_concats off) and after; windowed kernels
// against the reference interpreter (CPU JIT, and the GPU kernels' scalar code on the
// host); whole steps on the cpu target against the interpreter; the steps' PTX assembled
// by ptxas for every architecture.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "codegen/cpu_backend.h"
#include "codegen/cuda_program.h"
#include "codegen/gpu_host_test_util.h"
#include "codegen/kernel_test_util.h"
#include "codegen/lower.h"
#include "codegen/target_test_util.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "third_party/cuda_archs.h"

namespace weft::codegen {
namespace {
namespace rnn_cell_lowering_test {  // this file's names, apart in its package's unity test

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

// The training step (Adam, MSE on the last hidden state through a Linear) of `rnn` over
// [batch 4, 5 steps, 6 features], as the suite's lstm_seq and gru_seq are built.
Graph sequence_step(ModulePtr rnn, int64_t hidden) {
  auto net = FlowBuilder::from(std::move(rnn)).through(Linear(hidden, 6)).build();
  EXPECT_TRUE(net.ok()) << net.error().to_string();
  auto trainer = Trainer::compile(*net, {{"x", f32({4, 5, 6})}}, LossSpec::mse(),
                                  OptimizerSpec::adam(), {.backend = "reference"});
  EXPECT_TRUE(trainer.ok()) << trainer.error().to_string();
  return trainer->step_graph();
}

Graph lstm_step() { return sequence_step(LSTM(6, 8, {.layers = 2, .last = true}), 8); }
Graph gru_step() { return sequence_step(GRU(6, 8, {.last = true}), 8); }

// One invocation's kind and op: "generated", "library slice", "contraction matmul", ...
std::string describe(const Invocation& inv) {
  switch (inv.kind) {
    case Invocation::Kind::generated: return "generated";
    case Invocation::Kind::contraction: return "contraction";
    case Invocation::Kind::loop: return "loop";
    case Invocation::Kind::copy: return "copy " + std::string(op_name(inv.node.op));
    case Invocation::Kind::library: return "library " + std::string(op_name(inv.node.op));
  }
  return "?";
}

// Each loop body's invocations per time step, by kind and op, one line per body:
// "body: contraction 1, generated 1, library slice 4".
std::vector<std::string> per_step(const Program& p) {
  std::vector<std::string> lines;
  for (const Program& body : p.bodies) {
    std::map<std::string, int> by;
    for (const Invocation& inv : body.code) ++by[describe(inv)];
    std::string line = body.name + ":";
    for (const auto& [what, n] : by) line += (line.back() == ':' ? " " : ", ") + what + " " + std::to_string(n);
    lines.push_back(line);
  }
  return lines;
}

// Bytes one invocation writes: a generated kernel's outputs (of an output stored through
// a window, its part: passes/fold_concats.h), a contraction's C and its epilogue's
// outputs, a library call's or a copy's results.
int64_t bytes_written(const Program& root, const Invocation& inv) {
  const auto outputs = [&](const Graph& body) {
    int64_t bytes = 0;
    for (ValueId v : body.outputs()) {
      const int p = body.value(v).node;
      const bool window = p >= 0 && body.node(p).op == Op::Pad;
      bytes += static_cast<int64_t>(body.type(window ? body.node(p).operands[0] : v).bytes());
    }
    return bytes;
  };
  switch (inv.kind) {
    case Invocation::Kind::generated: return outputs(root.kernels[static_cast<size_t>(inv.kernel)].body);
    case Invocation::Kind::contraction: {
      const Graph& epilogue = root.kernels[static_cast<size_t>(inv.kernel)].body;
      return static_cast<int64_t>(epilogue.type(epilogue.inputs()[0].value).bytes()) + outputs(epilogue);
    }
    case Invocation::Kind::loop: return 0;
    default: {
      int64_t bytes = 0;
      for (const BufferRef& r : inv.results) bytes += static_cast<int64_t>(r.type.bytes());
      return bytes;
    }
  }
}

// Per loop body of `step` lowered with `options`: "NAME: B bytes written, arena A" per trip.
std::vector<std::string> written_per_step(const Graph& step, const LowerOptions& options) {
  StatusOr<Lowering> l = lower_to_program(step, options);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  std::vector<std::string> lines;
  if (!l.ok()) return lines;
  for (const Program& body : l->program.bodies) {
    int64_t bytes = 0;
    for (const Invocation& inv : body.code) bytes += bytes_written(l->program, inv);
    lines.push_back(body.name + ": " + std::to_string(bytes) + " bytes written, arena " +
                    std::to_string(body.arena_bytes));
  }
  return lines;
}

// `step` lowered with `options`, fold-slices on or off.
std::vector<std::string> lowered_per_step(const Graph& step, LowerOptions options, bool fold) {
  options.fold_slices = fold;
  StatusOr<Lowering> l = lower_to_program(step, options);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  return l.ok() ? per_step(l->program) : std::vector<std::string>{};
}

using Lines = std::vector<std::string>;

// Two layers: a forward loop and its reverse (gradient) loop each. Before: forward, the
// gate GEMM h·W_hhᵀ with the x·W_ihᵀ + b slot added in its epilogue, then the cell;
// backward, the gate pre-activations, the cell's gradient kernel, the gates' gradient
// concatenated for dh·W_hh's GEMM and for the weight gradients outside the loop. After:
// the slices read in place, and the pre-activations (the GEMM's epilogue forward, their
// recomputation backward) computed in the cell's kernels, window by window
// (passes/fold_window_producers.h): the forward runs the plain GEMM and the cell (on the
// GPU that is one kernel fewer: the epilogue's). The backward reads the pre-activations
// the forward saved (autodiff/scan_grad.cc, "x readers saveable"): no recomputation, on
// either lowering. The forward stores them as a ys: on the GPU the cell stores their
// four windows (a concat of its extra results, here a copy: fold-concats is off).
TEST(RnnCellLowering, LstmBodiesReadTheGatesInPlace) {
  const Graph step = lstm_step();
  const Lines before = {
      "body: contraction 1, generated 1, library slice 4",
      "body: contraction 1, generated 1, library slice 4",
      "grad_body: generated 1, library concat 1, library matmul 1, library slice 4",
      "grad_body: generated 1, library concat 1, library matmul 1, library slice 4"};
  // The CPU's lowering keeps the pre-activations apart (LowerOptions::fold_window_producers).
  const Lines cpu_after = {"body: contraction 1, generated 1", "body: contraction 1, generated 1",
                           "grad_body: generated 1, library concat 1, library matmul 1",
                           "grad_body: generated 1, library concat 1, library matmul 1"};
  const Lines gpu_after = {"body: generated 1, library concat 1, library matmul 1",
                           "body: generated 1, library concat 1, library matmul 1",
                           "grad_body: generated 1, library concat 1, library matmul 1",
                           "grad_body: generated 1, library concat 1, library matmul 1"};
  for (LowerOptions options : {LowerOptions{}, cuda_lower_options()}) {
    options.fold_concats = false;
    EXPECT_EQ(lowered_per_step(step, options, false), before);
    EXPECT_EQ(lowered_per_step(step, options, true), options.fold_window_producers ? gpu_after : cpu_after);
  }
}

// The backward steps' gate gradients (passes/fold_concats.h), computed by one kernel
// (passes/fuse_elementwise.h, "Parts of one concat"). lstm: one kernel computing the gate
// pre-activations (C + bias + x·W_ihᵀ, window by window: passes/fold_window_producers.h)
// and the cell's gradient, storing the four gates' gradients each in its window of the
// concat dh·W_hh's GEMM reads and the next cell gradient dc·f in place of the old one,
// then the GEMM: 2 invocations per step (8 before fold-concats, 7 with it before the one
// kernel, 3 before fold-window-producers; the pre-activations are now saved by the
// forward, autodiff/scan_grad.cc, so no lowering recomputes them). gru: 2 (8, then 6, then 4, then 3): one kernel
// computing the pre-activations and storing r's, z's and n's gradients in both concats
// (the gates' gradient for dh·W_hh, and the one stacked for the weight gradients, whose
// hidden part is n's gradient before its product with r), then the GEMM with dh's sum as
// its epilogue (a carry's next value: LowerOptions::loop_body; before, a kernel of its
// own after the GEMM). Forward, both: the plain GEMM and the cell computing the GEMM's
// former epilogue in its windows (the LSTM's cell also storing it, a ys, in its four
// windows of the ys's slot: passes/fold_window_producers.h, "A stored K").
// On the CPU (no fold-window-producers), the pre-activations stay: the forward's GEMM
// epilogue; the GRU's backward's first kernel (gru 3; lstm 2: saved).
TEST(RnnCellLowering, BackwardStepsStoreTheGateGradientsInTheConcat) {
  struct Want {
    Graph step;
    Lines gpu, cpu;
  };
  const Want kWant[] = {
      {lstm_step(),
       {"body: generated 1, library matmul 1", "body: generated 1, library matmul 1",
        "grad_body: generated 1, library matmul 1", "grad_body: generated 1, library matmul 1"},
       {"body: contraction 1, generated 1", "body: contraction 1, generated 1",
        "grad_body: generated 1, library matmul 1", "grad_body: generated 1, library matmul 1"}},
      {gru_step(),
       {"body: generated 1, library matmul 1", "grad_body: contraction 1, generated 1"},
       {"body: contraction 1, generated 1", "grad_body: contraction 1, generated 2"}}};
  for (const Want& want : kWant) {
    EXPECT_EQ(lowered_per_step(want.step, cuda_lower_options(), true), want.gpu);
    EXPECT_EQ(lowered_per_step(want.step, LowerOptions{}, true), want.cpu);
  }
}

// The bytes each trip writes ([4,8] f32 values of 128 bytes; a contraction counts C and
// its epilogue's result). gru backward, GPU: the gates' kernel stores r's and z's
// gradients in their two concats' windows only (parts of the stacked one, passes/
// fold_concats.h: 1152 → 896 bytes), then the GEMM's C and its epilogue dh + C, written
// into the carry's buffer (one invocation: the arena keeps no C; the arena holds the two
// concats and dh·z). lstm backward, both: four gate windows and dc·f, then the GEMM (the
// pre-activations saved, not recomputed). Forward: the GEMM (4H or 3H columns) and the
// cell (h, and c for the LSTM); the LSTM's pre-activations [4,32] are a ys (saved for the
// backward), stored by the cell in its windows (GPU) or by the GEMM's epilogue (CPU), in
// the ys's slot: the body's arena counts them, the trip writes them into the slot. The
// CPU adds the GRU's pre-activations (kept apart there).
TEST(RnnCellLowering, TripsWriteEachGateGradientOnce) {
  EXPECT_EQ(written_per_step(gru_step(), cuda_lower_options()),
            (Lines{"body: 512 bytes written, arena 512", "grad_body: 1152 bytes written, arena 896"}));
  EXPECT_EQ(written_per_step(gru_step(), LowerOptions{}),
            (Lines{"body: 896 bytes written, arena 896", "grad_body: 1536 bytes written, arena 1280"}));
  EXPECT_EQ(written_per_step(lstm_step(), cuda_lower_options()),
            (Lines{"body: 1280 bytes written, arena 1280", "body: 1280 bytes written, arena 1280",
                   "grad_body: 768 bytes written, arena 512", "grad_body: 768 bytes written, arena 512"}));
  EXPECT_EQ(written_per_step(lstm_step(), LowerOptions{}),
            (Lines{"body: 1280 bytes written, arena 768", "body: 1280 bytes written, arena 768",
                   "grad_body: 768 bytes written, arena 512", "grad_body: 768 bytes written, arena 512"}));
}

// WEFT_FOLD_WINDOW_PRODUCERS=0 (the A/B switch, runtime/ab_switch.h) keeps the gate
// pre-activations a kernel of their own: the forward's GEMM carries them as its epilogue
// (a contraction, storing them: a ys) and the LSTM backward reads them (saved).
TEST(RnnCellLowering, WindowProducersSwitchedOffKeepThePreActivationsApart) {
  ASSERT_EQ(setenv("WEFT_FOLD_WINDOW_PRODUCERS", "0", 1), 0);
  const Lines got = lowered_per_step(lstm_step(), cuda_lower_options(), true);
  unsetenv("WEFT_FOLD_WINDOW_PRODUCERS");
  EXPECT_EQ(got, (Lines{"body: contraction 1, generated 1", "body: contraction 1, generated 1",
                        "grad_body: generated 1, library matmul 1", "grad_body: generated 1, library matmul 1"}));
}

// Outside loops too: the parts of a concat (a tanh kernel and a product read by another
// kernel too, so apart) stored in their windows, its copy gone; a concat of [4,1] columns
// (stride 2 along their kernels' rows) kept. Both run on the cpu as the interpreter does.
TEST(RnnCellLowering, TopLevelConcatsAreStoredWhereTheWindowsAllow) {
  for (const auto& [text, concats] : {std::pair{"graph @f(%x: f32[4,8], %y: f32[4,8], %w: f32[16,8]) {\n"
                                                "  %a = tanh(%x)\n  %p = mul(%x, %y)\n  %b = neg(%p)\n"
                                                "  %q = sum(%p) {axes=[1]}\n  %c = concat(%a, %b) {axis=1}\n"
                                                "  %m = matmul(%c, %w)\n  return %m, %q\n}\n",
                                                0},
                                      std::pair{"graph @f(%x: f32[4,1], %y: f32[4,1]) {\n  %a = tanh(%x)\n"
                                                "  %b = exp(%y)\n  %c = concat(%a, %b) {axis=1}\n"
                                                "  %m = mul(%c, %c)\n  return %m\n}\n",
                                                1}}) {
    SCOPED_TRACE(text);
    const Graph g = testing::parse_typed(text);
    StatusOr<Lowering> l = lower_to_program(g);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    int kept = 0;
    for (const Invocation& inv : l->program.code) kept += describe(inv) == "library concat";
    EXPECT_EQ(kept, concats) << l->program.to_string();
    expect_target_matches_reference("cpu", g, 5);
  }
}

// The cpu target's steps, and the same with fold-window-producers on (the GPU's lowering
// of the cells, run where it can run: the CPU), against the interpreter.
TEST(RnnCellLowering, StepsOnTheCpuMatchTheInterpreter) {
  for (const Graph& step : {lstm_step(), gru_step()}) {
    expect_target_matches_reference("cpu", step, 7);
    const std::vector<Tensor> inputs = weft::testing::random_inputs(step, 7);
    StatusOr<reference::RunResult> want = reference::run(step, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    CpuOptions folded;
    folded.lower.fold_window_producers = true;
    StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(step, folded);
    ASSERT_TRUE(ex.ok()) << ex.error().to_string();
    for (size_t k = 0; k < inputs.size(); ++k) ASSERT_TRUE((*ex)->set_input(static_cast<int>(k), inputs[k]).ok());
    ASSERT_TRUE((*ex)->run().ok());
    for (size_t k = 0; k < want->outputs.size(); ++k) {
      std::string why;
      EXPECT_TRUE(all_close((*ex)->output(static_cast<int>(k)), want->outputs[k], 1e-5, &why)) << k << ": " << why;
    }
  }
}

// Windowed bodies: column windows of one source (offsets 0, 40, 80: the CPU's vector
// loop and its scalar tail), in f32 and bf16, a window of one column broadcast along the
// row (a splat at an offset), a window of rows, a cell computing its gate pre-activations
// in its windows (passes/fold_window_producers.h: a window of a [120] bias broadcast along
// the rows, a window of a wider x·W_ihᵀ, the slices between the sums as the pass leaves
// them); then store windows, whose padding the
// kernels leave as it is (zeros here, as the interpreter pads).
std::vector<Graph> window_bodies() {
  std::vector<Graph> bodies;
  for (const char* text : {
           "graph @k(%a: f32[3,120], %b: f32[3,120], %c: f32[3,120], %h: f32[3,40]) {\n"
           "  %i = slice(%a) {start=[0,0], stop=[3,40]}\n  %f = slice(%b) {start=[0,40], stop=[3,80]}\n"
           "  %g = slice(%c) {start=[0,80], stop=[3,120]}\n  %si = sigmoid(%i)\n  %sf = sigmoid(%f)\n"
           "  %tg = tanh(%g)\n  %m = mul(%sf, %h)\n  %n = mul(%si, %tg)\n  %y = add(%m, %n)\n  return %y, %n\n}\n",
           "graph @k(%a: bf16[3,120], %b: bf16[3,120], %h: bf16[3,40]) {\n"
           "  %i = slice(%a) {start=[0,0], stop=[3,40]}\n  %g = slice(%b) {start=[0,80], stop=[3,120]}\n"
           "  %si = sigmoid(%i)\n  %m = mul(%si, %h)\n  %y = add(%m, %g)\n  return %y\n}\n",
           "graph @k(%a: f32[3,5], %x: f32[3,40]) {\n  %s = slice(%a) {start=[0,2], stop=[3,3]}\n"
           "  %y = mul(%s, %x)\n  return %y\n}\n",
           "graph @k(%a: f32[7,16], %x: f32[4,16]) {\n  %s = slice(%a) {start=[2,0], stop=[6,16]}\n"
           "  %y = sub(%x, %s)\n  return %y\n}\n",
           "graph @k(%c: f32[3,120], %b: f32[120], %x: f32[3,160], %h: f32[3,40]) {\n"
           "  %i = slice(%c) {start=[0,0], stop=[3,40]}\n  %bi = slice(%b) {start=[40], stop=[80]}\n"
           "  %p = add(%i, %bi)\n  %xi = slice(%x) {start=[0,80], stop=[3,120]}\n  %q = add(%p, %xi)\n"
           "  %si = sigmoid(%q)\n  %y = mul(%si, %h)\n  return %y\n}\n",
           // Store windows (passes/fold_concats.h): a column window of a [3,120]
           // destination beside a plain result, rows of a [7,16] one (one strided row of
           // 64), a bf16 window read through an input window (the vector loop and its
           // tail), a long row cut in rows of 4000, one value stored in its buffer and in two
           // windows, one value stored in two windows only (a GRU's r gradient: a part of the
           // stacked concat, a window of dh·W_hh's operand), two values of one kernel
           // each in its window of one destination beside a plain result (an LSTM's gate
           // gradients and dc·f).
           "graph @k(%a: f32[3,40], %b: f32[3,40]) {\n  %y = mul(%a, %b)\n  %t = tanh(%a)\n"
           "  %w = pad(%y) {low=[0,40], high=[0,40]}\n  return %w, %t\n}\n",
           "graph @k(%a: f32[4,16]) {\n  %y = exp(%a)\n  %w = pad(%y) {low=[2,0], high=[1,0]}\n  return %w\n}\n",
           "graph @k(%a: bf16[3,120], %h: bf16[3,40]) {\n  %i = slice(%a) {start=[0,40], stop=[3,80]}\n"
           "  %si = sigmoid(%i)\n  %y = mul(%si, %h)\n  %w = pad(%y) {low=[0,80], high=[0,0]}\n  return %w\n}\n",
           "graph @k(%a: f32[2,20000]) {\n  %y = neg(%a)\n  %w = pad(%y) {low=[0,20000], high=[0,0]}\n"
           "  return %w\n}\n",
           "graph @k(%a: f32[3,40]) {\n  %y = exp(%a)\n  %w = pad(%y) {low=[0,40], high=[0,0]}\n"
           "  %v = pad(%y) {low=[3,0], high=[0,0]}\n  return %y, %w, %v\n}\n",
           "graph @k(%a: f32[3,40]) {\n  %y = tanh(%a)\n  %w = pad(%y) {low=[0,80], high=[0,0]}\n"
           "  %v = pad(%y) {low=[0,0], high=[0,40]}\n  return %w, %v\n}\n",
           "graph @k(%a: f32[3,40], %b: f32[3,40]) {\n  %y = mul(%a, %b)\n  %z = tanh(%a)\n  %s = add(%y, %z)\n"
           "  %w = pad(%y) {low=[0,0], high=[0,40]}\n  %v = pad(%z) {low=[0,40], high=[0,0]}\n"
           "  return %s, %w, %v\n}\n"}) {
    bodies.push_back(testing::parse_typed(text));
  }
  return bodies;
}

TEST(RnnCellLowering, WindowedKernelsMatchTheInterpreter) {
  for (const Graph& body : window_bodies()) {
    SCOPED_TRACE(kernel_key(body));
    if (body.type(body.outputs()[0]).dtype == DType::bf16) {
      testing::expect_random_half_matches(body, 1);  // one ulp: sigmoid's approximation
    } else {
      testing::expect_random_matches(body, 1e-5);
    }
  }
}

// The GPU kernels' scalar code (one thread per element) with the host's ABI.
TEST(RnnCellLowering, WindowedGpuKernelsMatchTheInterpreterOnTheHost) {
  Jit jit;
  for (const Graph& body : window_bodies()) {
    SCOPED_TRACE(kernel_key(body));
    std::vector<Tensor> inputs = testing::random_body_inputs(body, -3, 3, 5);
    StatusOr<std::vector<Tensor>> ran = testing::run_gpu_kernel_on_host(jit, body, inputs);
    ASSERT_TRUE(ran.ok()) << ran.error().to_string();
    const std::vector<Tensor>& outputs = *ran;
    StatusOr<reference::RunResult> want = reference::run(body, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].dtype() == DType::bf16) {
        EXPECT_LE(testing::max_half_ulps(outputs[o], want->outputs[o]), 1) << "output " << o;
        continue;
      }
      std::string why;
      EXPECT_TRUE(all_close(outputs[o], want->outputs[o], 1e-5, &why)) << "output " << o << ": " << why;
    }
  }
}

// The whole steps' PTX (every kernel, the windowed cells among them) assembles with the
// toolkit's ptxas (no GPU needed) for each architecture of third_party/cuda.bzl.
TEST(RnnCellLowering, StepsPtxAssemblesForEveryArchitecture) {
  constexpr char kPtxas[] = "/usr/local/cuda/bin/ptxas";
  for (auto [name, step] : {std::pair{"lstm", lstm_step()}, std::pair{"gru", gru_step()}}) {
    StatusOr<CudaProgram> p = compile_cuda_program(step);
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    if (!std::ifstream(kPtxas).good()) GTEST_SKIP() << kPtxas << " not found: PTX not assembled";
    const char* dir = std::getenv("TEST_TMPDIR");
    const std::string path = std::string(dir ? dir : "/tmp") + "/" + name + "_step.ptx";
    std::ofstream(path) << p->ptx;
    for (const int arch : cuda::kCudaArchs) {
      const std::string cmd =
          std::string(kPtxas) + " -arch=sm_" + std::to_string(arch) + " " + path + " -o " + path + ".cubin";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
}

}  // namespace rnn_cell_lowering_test
}  // namespace
}  // namespace weft::codegen
