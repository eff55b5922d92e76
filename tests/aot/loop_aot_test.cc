// Loops compiled ahead of time: tests/aot/testdata/rnn_loop.wir's two loops (one with
// xs and ys, one reversed) are loop invocations over body Programs in the generated
// tables, and the AOT library (no MLIR or LLVM) computes what the interpreter does.
#include <gtest/gtest.h>

#include <random>

#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/cpu/executor.h"
#include "runtime/reference/interpreter.h"

weft::Program rnn_loop_aot_program();
std::vector<weft::GeneratedFn> rnn_loop_aot_kernels();

namespace weft {
namespace {

TEST(LoopAot, RunsItsLoopsAsTheInterpreterDoes) {
  Program program = rnn_loop_aot_program();
  int loops = 0;
  for (const Invocation& inv : program.code) loops += inv.kind == Invocation::Kind::loop;
  EXPECT_EQ(loops, 2);
  EXPECT_EQ(program.bodies.size(), 2u);
  auto ex = cpu::Executor::create(std::move(program), rnn_loop_aot_kernels());
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  StatusOr<Graph> g = read_graph_file("tests/aot/testdata/rnn_loop.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(default_pipeline().run(*g).ok());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Tensor> inputs;
  for (const Input& in : g->inputs()) {
    Tensor t(g->type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, u(rng));
    ASSERT_TRUE((*ex)->set_input(g->value(in.value).name, t).ok());
    inputs.push_back(std::move(t));
  }
  ASSERT_TRUE((*ex)->run().ok());
  auto ref = reference::run(*g, inputs);
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  ASSERT_EQ((*ex)->num_outputs(), 3);
  for (int i = 0; i < 3; ++i) {
    std::string why;
    EXPECT_TRUE(all_close((*ex)->output(i), ref->outputs[i], 1e-5, &why)) << i << ": " << why;
  }
}

}  // namespace
}  // namespace weft
