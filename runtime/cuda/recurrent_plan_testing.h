#pragma once
// Tests' side of recurrent_plan.h: every loop of a graph lowered for CUDA, bound in host
// memory as the CUDA executor binds it (the loop's operands and results where the root
// Program puts them, the body's own arena and inputs block), its operands random, planned,
// run by a given runner (the host oracle, run_recurrent_on_host; or the persistent loop
// kernel emulated on the host) and compared with the reference interpreter's run of the
// same scan node (reference::run_loop). recurrent_plan_test and the kernel's emulation of
// planned programs share it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/models.h"
#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/binding.h"
#include "runtime/cuda/recurrent_plan.h"
#include "runtime/reference/interpreter.h"

namespace weft::cuda::plan_testing {

using codegen::Lowering;

inline Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

inline Graph typed(const std::string& text) {
  StatusOr<Graph> g = parse_graph(text, "recurrent_plan.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  if (!g.ok()) return Graph();
  const Status inferred = InferTypesPass().run(*g).status();
  EXPECT_TRUE(inferred.ok()) << inferred.to_string();
  return std::move(*g);
}

// The training step (Adam, MSE on the last hidden state through a Linear) of `rnn` over
// [batch 4, 5 steps, 6 features], as codegen/rnn_cell_lowering_test.cc builds it; at
// `precision` bf16 or f16, autocast's loops (passes/autocast.h: casts in the body, the
// weights cast once outside, f32 carries).
inline Graph sequence_step(ModulePtr rnn, int64_t hidden, DType precision = DType::f32) {
  auto net = FlowBuilder::from(std::move(rnn)).through(Linear(hidden, 6)).build();
  EXPECT_TRUE(net.ok()) << net.error().to_string();
  auto trainer = Trainer::compile(*net, {{"x", f32({4, 5, 6})}}, LossSpec::mse(), OptimizerSpec::adam(),
                                  {.backend = "reference", .precision = precision});
  EXPECT_TRUE(trainer.ok()) << trainer.error().to_string();
  return trainer->step_graph();
}

// The training step (Adam) of the suite's loop model `model` (bench/models.h:
// feedback_fixed, iterative_refine) at the cpu preset, at `precision` (bf16: autocast's).
inline Graph suite_step(const std::string& model, DType precision = DType::f32) {
  StatusOr<bench::BenchModel> m = bench::make_bench_model(model, bench::Preset::cpu);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  if (!m.ok()) return Graph();
  auto trainer = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr),
                                  {.seed = 1, .backend = "reference", .precision = precision});
  EXPECT_TRUE(trainer.ok()) << trainer.error().to_string();
  return trainer->step_graph();
}

// A tanh RNN's forward loop (h·W + x·U + b) and a reversed one reading W transposed.
inline constexpr char kTanhRnn[] = R"(graph @rnn(%w: f32[8,8], %u: f32[6,8], %b: f32[8], %h0: f32[4,8], %xs: f32[5,4,6]) {
  %h, %hs = scan(%w, %u, %b, %h0, %xs) {carries=1, consts=3, length=5} : f32[4,8], f32[5,4,8] ({
    ^cell(%cw: f32[8,8], %cu: f32[6,8], %cb: f32[8], %ch: f32[4,8], %cx: f32[4,6]):
      %m = matmul(%ch, %cw) : f32[4,8]
      %x = matmul(%cx, %cu) : f32[4,8]
      %a = add(%m, %x) : f32[4,8]
      %z = add(%a, %cb) : f32[4,8]
      %n = tanh(%z) : f32[4,8]
      return %n, %n
  })
  %g, %gs = scan(%w, %h, %hs) {carries=1, consts=1, length=5, reverse=true} : f32[4,8], f32[5,4,8] ({
    ^back(%bw: f32[8,8], %bg: f32[4,8], %bh: f32[4,8]):
      %bm = matmul(%bg, %bw) {transpose_b=true} : f32[4,8]
      %bt = mul(%bh, %bh) : f32[4,8]
      %bo = sub(%bm, %bt) : f32[4,8]
      %bn = tanh(%bo) : f32[4,8]
      return %bn, %bn
  })
  return %h, %hs, %g, %gs
}
)";

// gelu in both forms (an op per form in the register program, recurrent_cell_op.h): the
// tanh form after a matmul's bias (the contraction's epilogue), erf's in a kernel of its
// own after the carry's product.
inline constexpr char kGeluRnn[] = R"(graph @gelus(%w: f32[8,8], %b: f32[8], %h0: f32[4,8], %xs: f32[5,4,8]) {
  %h, %hs = scan(%w, %b, %h0, %xs) {carries=1, consts=2, length=5} : f32[4,8], f32[5,4,8] ({
    ^cell(%cw: f32[8,8], %cb: f32[8], %ch: f32[4,8], %cx: f32[4,8]):
      %m = matmul(%ch, %cw) : f32[4,8]
      %z = add(%m, %cb) : f32[4,8]
      %t = gelu(%z) {approximate="tanh"} : f32[4,8]
      %p = mul(%t, %cx) : f32[4,8]
      %e = gelu(%p) : f32[4,8]
      %n = tanh(%e) : f32[4,8]
      return %n, %n
  })
  return %h, %hs
}
)";

// Row kernels in a loop (a row phase, recurrent_program.h): a layer norm of h·W + x (its
// means over the rows; its eps a `full` the lowering hoists before the loop and the row
// kernel reads as a const), then a row's sum subtracted.
inline constexpr char kNormRnn[] = R"(graph @norm(%w: f32[8,8], %g: f32[8], %b: f32[8], %h0: f32[4,8], %xs: f32[5,4,8]) {
  %h, %hs = scan(%w, %g, %b, %h0, %xs) {carries=1, consts=3, length=5} : f32[4,8], f32[5,4,8] ({
    ^cell(%cw: f32[8,8], %cg: f32[8], %cb: f32[8], %ch: f32[4,8], %cx: f32[4,8]):
      %m = matmul(%ch, %cw) : f32[4,8]
      %a = add(%m, %cx) : f32[4,8]
      %n = layer_norm(%a, %cg, %cb) : f32[4,8]
      %s = sum(%n) {axes=[1], keepdims=true} : f32[4,1]
      %d = sub(%n, %s) : f32[4,8]
      %t = tanh(%d) : f32[4,8]
      return %t, %t
  })
  return %h, %hs
}
)";

// Loop bodies in bf16 (in_f16: f16): a cell wholly in the low type (its matmul's A, B
// and C, its elementwise kernel's operands and results) forward and reversed with Wᵀ,
// and an autocast-shaped one (f32 carries cast to bf16 for a matmul with a bf16 weight,
// the product cast back to f32). Each recurrence ends in tanh: without it a step's
// rounding difference (a sum rounded to bf16 after another order) grows with |W| each
// iteration past any bf16 tolerance.
inline constexpr char kHalfRnn[] = R"(graph @half(%w: bf16[8,8], %h0: bf16[4,8], %xs: bf16[5,4,8]) {
  %h, %hs = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : bf16[4,8], bf16[5,4,8] ({
    ^cell(%cw: bf16[8,8], %ch: bf16[4,8], %cx: bf16[4,8]):
      %m = matmul(%ch, %cw) : bf16[4,8]
      %a = add(%m, %cx) : bf16[4,8]
      %t = tanh(%a) : bf16[4,8]
      return %t, %t
  })
  %g, %gs = scan(%w, %h, %hs) {carries=1, consts=1, length=5, reverse=true} : bf16[4,8], bf16[5,4,8] ({
    ^back(%bw: bf16[8,8], %bg: bf16[4,8], %bh: bf16[4,8]):
      %bm = matmul(%bg, %bw) {transpose_b=true} : bf16[4,8]
      %bt = mul(%bh, %bh) : bf16[4,8]
      %bo = sub(%bm, %bt) : bf16[4,8]
      %bn = tanh(%bo) : bf16[4,8]
      return %bn, %bn
  })
  return %h, %hs, %g, %gs
}
)";

inline constexpr char kAutocastRnn[] = R"(graph @mixed(%w: bf16[8,8], %h0: f32[4,8], %xs: f32[5,4,8]) {
  %h, %hs = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : f32[4,8], f32[5,4,8] ({
    ^cell(%cw: bf16[8,8], %ch: f32[4,8], %cx: f32[4,8]):
      %hb = cast(%ch) {dtype=bf16} : bf16[4,8]
      %m = matmul(%hb, %cw) : bf16[4,8]
      %mf = cast(%m) {dtype=f32} : f32[4,8]
      %a = add(%mf, %cx) : f32[4,8]
      %t = tanh(%a) : f32[4,8]
      return %t, %t
  })
  return %h, %hs
}
)";

// A value rounded to bf16 and read again inside one kernel (its register rounded, as the
// interpreter rounds the cast).
inline constexpr char kRoundTrip[] = R"(graph @round(%h0: f32[2,4], %xs: f32[3,2,4]) {
  %h, %hs = scan(%h0, %xs) {carries=1, length=3} : f32[2,4], f32[3,2,4] ({
    ^cell(%ch: f32[2,4], %cx: f32[2,4]):
      %a = add(%ch, %cx) : f32[2,4]
      %b = cast(%a) {dtype=bf16} : bf16[2,4]
      %c = cast(%b) {dtype=f32} : f32[2,4]
      %t = tanh(%c) : f32[2,4]
      return %t, %t
  })
  return %h, %hs
}
)";

// The f32 carry cast to bf16 for the product and for a bf16 mul, whose result a bf16 add
// reads.
inline constexpr char kRoundedRnn[] = R"(graph @rounded(%w: bf16[8,8], %h0: f32[4,8], %xs: bf16[5,4,8]) {
  %h, %hs = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : f32[4,8], f32[5,4,8] ({
    ^cell(%cw: bf16[8,8], %ch: f32[4,8], %cx: bf16[4,8]):
      %hb = cast(%ch) {dtype=bf16} : bf16[4,8]
      %m = matmul(%hb, %cw) : bf16[4,8]
      %p = mul(%hb, %cx) : bf16[4,8]
      %q = add(%p, %m) : bf16[4,8]
      %qf = cast(%q) {dtype=f32} : f32[4,8]
      %t = tanh(%qf) : f32[4,8]
      return %t, %t
  })
  return %h, %hs
}
)";

// A carry whose next value is a const of the loop (as passes/rotate_carry_casts.h leaves
// the f32 carry of a bf16 gradient body): copied from the const each iteration.
inline constexpr char kConstCarry[] = R"(graph @reset(%z: f32[2,3], %g0: f32[2,3], %h0: f32[2,3], %xs: f32[4,2,3]) {
  %g, %h, %hs = scan(%z, %g0, %h0, %xs) {carries=2, consts=1, length=4} : f32[2,3], f32[2,3], f32[4,2,3] ({
    ^cell(%cz: f32[2,3], %cg: f32[2,3], %ch: f32[2,3], %cx: f32[2,3]):
      %a = add(%cg, %ch) : f32[2,3]
      %s = add(%a, %cx) : f32[2,3]
      %t = tanh(%s) : f32[2,3]
      return %cz, %t, %t
  })
  return %g, %h, %hs
}
)";

inline std::string in_f16(std::string text) {
  for (size_t at = text.find("bf16"); at != std::string::npos; at = text.find("bf16", at)) text.replace(at, 4, "f16");
  return text;
}

// Host memory standing in for a device block (64 bytes more: a zero-sized block still
// has an address).
inline std::vector<std::byte> block(int64_t bytes) { return std::vector<std::byte>(static_cast<size_t>(bytes) + 64); }

// The scan node of `g` that loop invocation `loop` runs.
inline const Node* scan_of(const Graph& g, const Invocation& loop) {
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Scan && n.results == loop.node.results) return &n;
  }
  return nullptr;
}

// One loop invocation of a lowered program, bound in host memory.
struct HostLoop {
  const Invocation* loop = nullptr;
  Program body;
  std::vector<std::byte> body_arena, body_inputs;
  LoopAddresses where;
};

// Each loop of `l`'s root Program bound in `arena` and `inputs` (host memory laid out as
// the root Program says).
inline std::vector<HostLoop> bind_loops(Lowering& l, std::vector<std::byte>& arena, std::vector<std::byte>& inputs) {
  Program& root = l.program;
  check_layout(root, "recurrent_plan_test");
  arena = block(root.arena_bytes);
  inputs = block(root.inputs_bytes);
  std::vector<void*> input_at;
  for (int64_t offset : root.input_offsets) input_at.push_back(inputs.data() + offset);
  std::vector<HostLoop> loops;
  for (const Invocation& inv : root.code) {
    if (inv.kind != Invocation::Kind::loop) continue;
    HostLoop h;
    h.loop = &inv;
    h.body = root.bodies[static_cast<size_t>(inv.body)];
    check_layout(h.body, "recurrent_plan_test (body)");
    h.body_arena = block(h.body.arena_bytes);
    h.body_inputs = block(h.body.inputs_bytes);
    h.where.body_arena = h.body_arena.data();
    h.where.body_inputs = h.body_inputs.data();
    for (const BufferRef& r : inv.operands) h.where.in.push_back(buffer_address(r, arena.data(), input_at));
    for (const BufferRef& r : inv.results) h.where.results.push_back(buffer_address(r, arena.data(), input_at));
    loops.push_back(std::move(h));
  }
  return loops;
}

// `h`'s operands random in [-1, 1]; a scalar in [1/16, 1/8] (a layer norm's eps: a
// variance plus a negative one has no square root; gelu's gradient's constants, one of
// them a factor of x² under exp: a large one would make exp amplify any difference); a matrix of 64 rows or more (a layer's weight)
// in ±1/√rows, as a layer is initialized, so that ten products in a row neither explode
// nor vanish. Each loop's just before it runs: loops' operands may share the root arena's
// bytes (live at different times), and a bf16 operand written over by another loop's f32
// one would hold an f32's halves.
inline void randomize_operands(const HostLoop& h, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (size_t k = 0; k < h.where.in.size(); ++k) {
    const Type& t = h.loop->operands[k].type;
    const std::optional<ElementType> type = element_type(t.dtype);
    if (!type) continue;
    const auto at = reinterpret_cast<uint64_t>(h.where.in[k]);
    const int64_t n = t.numel();
    const bool weight = t.shape.rank() == 2 && t.shape[0] >= 64;
    const float scale = weight ? 1.0f / std::sqrt(static_cast<float>(t.shape[0])) : 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float x = uniform(rng);
      store_element(at, i, *type, n == 1 ? 0x1.8p-4f + 0x1p-5f * x : scale * x);
    }
  }
}

inline void run_copies(const std::vector<LoopCopy>& copies) {
  for (const LoopCopy& c : copies) std::memmove(c.to, c.from, c.bytes);
}

// The relative tolerance of a result of `type`: f32 at 1e-5; bf16 and f16 at 4 units in
// their last place (2^-6, 2^-8 relative): a sum rounded to f32 in another order may round
// to a neighbouring half at its store, and the next iterations carry it on.
inline float relative_tolerance(ElementType type) {
  return type == ElementType::f32 ? 1e-5f : type == ElementType::bf16 ? 0x1p-6f : 0x1p-8f;
}

// Every loop of `g` lowered for CUDA, planned, run by `run` (the host oracle, or the
// emulated kernel) and compared with the reference interpreter, at the tolerance of each
// result's type or of `body_type`, whichever is looser (an f32 carry of a bf16 body holds
// bf16 products; the lowered body computes a fused kernel's bf16 ops in f32,
// passes/round_at_stores.h, where the interpreter rounds each), or `at_least` when looser
// (a residual stream that adds a step's rounding each iteration). Returns how many loops
// there were.
inline int expect_loops_match_reference(const Graph& g, uint64_t seed,
                                        const std::function<Status(const RecurrentProgramView&)>& run,
                                        ElementType body_type = ElementType::f32, float at_least = 0.0f) {
  StatusOr<Lowering> l = codegen::lower_to_program(g, codegen::cuda_lower_options());
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return 0;
  std::vector<std::byte> arena, inputs;
  std::vector<HostLoop> loops = bind_loops(*l, arena, inputs);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (HostLoop& h : loops) {
    const Invocation& inv = *h.loop;
    SCOPED_TRACE("loop over @" + h.body.name);
    randomize_operands(h, rng);
    const Node* scan = scan_of(l->graph, inv);
    EXPECT_NE(scan, nullptr);
    if (scan == nullptr) continue;
    // The operands as the loop reads them (read before it runs: a chained result may
    // share nothing with them, but read them first all the same).
    std::vector<Tensor> operands;
    for (size_t k = 0; k < inv.operands.size(); ++k) {
      Tensor t(inv.operands[k].type);
      std::memcpy(t.raw_data(), h.where.in[k], t.bytes());
      operands.push_back(std::move(t));
    }
    std::vector<const Tensor*> operand_ptrs;
    for (const Tensor& t : operands) operand_ptrs.push_back(&t);
    std::vector<Type> types;
    for (const BufferRef& r : inv.results) types.push_back(r.type);
    StatusOr<std::vector<Tensor>> want = reference::run_loop(*scan, operand_ptrs, types);
    EXPECT_TRUE(want.ok()) << want.error().to_string();

    StatusOr<RecurrentPlan> plan = plan_recurrent_loop(l->program, inv, h.where);
    EXPECT_TRUE(plan.ok()) << plan.error().to_string() << "\n" << h.body.to_string();
    if (!plan.ok() || !want.ok()) continue;
    run_copies(plan->before);
    const Status ran = run(plan->program.view());
    EXPECT_TRUE(ran.ok()) << ran.to_string();
    run_copies(plan->after);
    for (size_t r = 0; r < inv.results.size(); ++r) {
      const ElementType type = element_type(inv.results[r].type.dtype).value_or(ElementType::f32);
      const float relative = std::max({relative_tolerance(type), relative_tolerance(body_type), at_least});
      const auto got = reinterpret_cast<uint64_t>(h.where.results[r]);
      const auto expected = reinterpret_cast<uint64_t>((*want)[r].raw_data());
      int bad = 0;
      for (int64_t i = 0; i < inv.results[r].type.numel() && bad < 5; ++i) {
        const float g = load_element(got, i, type), e = load_element(expected, i, type);
        if (!(std::fabs(g - e) <= relative * std::max(1.0f, std::fabs(e)))) {
          ADD_FAILURE() << "result " << r << " element " << i << ": " << g << ", want " << e << "\n"
                        << plan->program.to_string() << h.body.to_string();
          ++bad;
        }
      }
    }
  }
  return static_cast<int>(loops.size());
}


}  // namespace weft::cuda::plan_testing
