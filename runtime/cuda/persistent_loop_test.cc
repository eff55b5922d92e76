// A loop bound as one persistent launch (persistent_loop.h) on a GPU (skipped without one:
// tests/cuda/persistent_loops_check.sh runs it there). A hand-built Program, so that no
// code generator is needed: h' = h·w + x_t over 5 iterations (a library matmul, then a
// PTX add kernel whose body Graph the plan compiles), h chained to its ys. With
// WEFT_PERSISTENT_LOOPS=1 the loop binds as "persistent loop 5x over @cell", without it
// as the per-trip loop; both, launch by launch and as one CUDA graph, equal the loop
// computed on the host; and without a GPU, the same Program planned and run by the host
// oracle.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/binding.h"
#include "runtime/cuda/executor_testing.h"
#include "runtime/cuda/recurrent_plan.h"
#include "runtime/cuda/recurrent_reference.h"

namespace weft::cuda {
namespace {

using namespace executor_testing;

constexpr int64_t kLength = 5;

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

// The Program of scan(%w, %h0, %xs) {consts=1, carries=1, length=5} returning h and hs.
Program rnn_program() {
  const Type h = f32({4, 8}), w = f32({8, 8});
  Program body;
  body.name = "cell";
  body.inputs = {{"w", w, InputKind::data}, {"h", h, InputKind::data}, {"x", h, InputKind::data}};
  lay_out_inputs_in_order(body);
  Invocation matmul;
  matmul.kind = Invocation::Kind::library;
  matmul.node.op = Op::Matmul;
  matmul.operands = {input(1, h), input(0, w)};
  matmul.results = {arena(0, h)};
  body.code = {matmul, generated(0, {arena(0, h), input(2, h)}, arena(256, h))};
  body.outputs = {arena(256, h), arena(256, h)};
  body.arena_bytes = 512;

  Program p;
  p.name = "rnn";
  p.inputs = {{"w", w, InputKind::data}, {"h0", h, InputKind::data}, {"xs", f32({kLength, 4, 8}), InputKind::data}};
  GeneratedKernel k = kernel("k0", 4, 8);
  StatusOr<Graph> g = parse_graph("graph @k0(%a: f32[4,8], %b: f32[4,8]) {\n  %c = add(%a, %b)\n  return %c\n}\n", "k0");
  WEFT_CHECK(g.ok() && InferTypesPass().run(*g).ok(), "persistent_loop_test: the kernel's body");
  k.body = std::move(*g);
  p.kernels = {k};
  p.bodies = {body};
  Invocation loop;
  loop.kind = Invocation::Kind::loop;
  loop.body = 0;
  loop.node.op = Op::Scan;
  loop.node.attrs = {{"length", kLength}, {"consts", int64_t{1}}, {"carries", int64_t{1}}};
  loop.operands = {input(0, w), input(1, h), input(2, f32({kLength, 4, 8}))};
  loop.results = {arena(0, h), arena(256, f32({kLength, 4, 8}))};
  p.code = {loop};
  p.outputs = loop.results;
  p.arena_bytes = 256 + round_up(kLength * 4 * 8 * 4);
  return p;
}

// h and hs computed on the host.
std::vector<Tensor> host_rnn(const Tensor& w, const Tensor& h0, const Tensor& xs) {
  Tensor h = h0, hs(f32({kLength, 4, 8}));
  for (int64_t t = 0; t < kLength; ++t) {
    Tensor next(f32({4, 8}));
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 8; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < 8; ++q) sum += static_cast<double>(h.data<float>()[i * 8 + q]) * w.data<float>()[q * 8 + j];
        next.data<float>()[i * 8 + j] = static_cast<float>(sum) + xs.data<float>()[t * 32 + i * 8 + j];
      }
    }
    h = next;
    for (int64_t e = 0; e < 32; ++e) hs.data<float>()[t * 32 + e] = h.data<float>()[e];
  }
  return {h, hs};
}

// Without a GPU: the same Program planned (recurrent_plan.h) in host memory and run by the
// host oracle, so that the GPU case below is known to bind as one launch.
TEST(PersistentLoop, ThePlanRunsOnTheHost) {
  Program p = rnn_program();
  check_layout(p, "persistent_loop_test");
  const Tensor w = random_tensor(f32({8, 8}), 1), h0 = random_tensor(f32({4, 8}), 2);
  const Tensor xs = random_tensor(f32({kLength, 4, 8}), 3);
  std::vector<std::byte> arena(static_cast<size_t>(p.arena_bytes)), block(static_cast<size_t>(p.inputs_bytes));
  std::vector<void*> inputs;
  for (size_t k = 0; k < p.inputs.size(); ++k) inputs.push_back(block.data() + p.input_offsets[k]);
  for (size_t k = 0; k < 3; ++k) std::memcpy(inputs[k], (k == 0 ? w : k == 1 ? h0 : xs).raw_data(), p.inputs[k].type.bytes());
  Program body = p.bodies[0];
  check_layout(body, "persistent_loop_test (body)");
  std::vector<std::byte> body_arena(static_cast<size_t>(body.arena_bytes)), body_inputs(static_cast<size_t>(body.inputs_bytes));
  LoopAddresses where{{}, {}, body_arena.data(), body_inputs.data()};
  for (const BufferRef& r : p.code[0].operands) where.in.push_back(buffer_address(r, arena.data(), inputs));
  for (const BufferRef& r : p.code[0].results) where.results.push_back(buffer_address(r, arena.data(), inputs));
  StatusOr<RecurrentPlan> plan = plan_recurrent_loop(p, p.code[0], where);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  for (const LoopCopy& c : plan->before) std::memmove(c.to, c.from, c.bytes);
  ASSERT_TRUE(run_recurrent_on_host(plan->program.view()).ok());
  for (const LoopCopy& c : plan->after) std::memmove(c.to, c.from, c.bytes);
  const std::vector<Tensor> want = host_rnn(w, h0, xs);
  for (size_t r = 0; r < 2; ++r) {
    Tensor got(want[r].type());
    std::memcpy(got.raw_data(), where.results[r], got.bytes());
    expect_close(got, want[r], 1e-5);
  }
}

TEST(PersistentLoop, BindsAsOneLaunchAndMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  const Tensor w = random_tensor(f32({8, 8}), 1), h0 = random_tensor(f32({4, 8}), 2);
  const Tensor xs = random_tensor(f32({kLength, 4, 8}), 3);
  const std::vector<Tensor> want = host_rnn(w, h0, xs);
  for (const char* on : {"1", "0"}) {
    for (bool graph : {false, true}) {
      SCOPED_TRACE(std::string("WEFT_PERSISTENT_LOOPS=") + on + (graph ? ", one CUDA graph" : ", launch by launch"));
      setenv("WEFT_PERSISTENT_LOOPS", on, 1);
      ExecutorOptions options = kDebug;
      options.cuda_graph = graph;
      StatusOr<std::unique_ptr<Executor>> ex =
          Executor::create(rnn_program(), ptx_module({ptx_entry("k0", "add", 32)}), {"k0"}, options);
      unsetenv("WEFT_PERSISTENT_LOOPS");
      ASSERT_TRUE(ex.ok()) << ex.error().to_string();
      const std::string d = (*ex)->describe();
      EXPECT_EQ(d.find("persistent loop 5x over @cell") != std::string::npos, std::string(on) == "1") << d;
      for (int step = 0; step < 2; ++step) {  // twice: the barrier and the carries start over
        const std::vector<Tensor> got = run_program(**ex, {w, h0, xs});
        ASSERT_EQ(got.size(), 2u);
        expect_close(got[0], want[0], 1e-5);
        expect_close(got[1], want[1], 1e-5);
      }
    }
  }
}

}  // namespace
}  // namespace weft::cuda
