// An optimizer update merged into one kernel over flat ranges (passes/merge_updates.h),
// compiled ahead of time: the generated C++ keeps the inputs block's layout
// (Program::input_offsets) and three steps match the reference interpreter.
#include <gtest/gtest.h>

#include <random>

#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/cpu/executor.h"
#include "runtime/reference/interpreter.h"

weft::Program sgd_momentum_aot_program();
std::vector<weft::GeneratedFn> sgd_momentum_aot_kernels();

namespace weft {
namespace {

TEST(AotMergedUpdate, ThreeStepsMatchTheReference) {
  Program program = sgd_momentum_aot_program();
  // One update invocation for the three parameters, over 48 + 48 + 80 = 176 elements.
  int updates = 0;
  for (const Invocation& inv : program.code) {
    if (inv.results[0].space != Space::input) continue;
    ++updates;
    EXPECT_EQ(inv.results[0].type.to_string(), "f32[176]");
  }
  EXPECT_EQ(updates, 1);
  ASSERT_EQ(program.input_offsets.size(), program.inputs.size());
  EXPECT_EQ(program.input_offsets[1] - program.input_offsets[0], 48 * 4);  // %b after %w
  EXPECT_EQ(program.input_offsets[4] - program.input_offsets[3], 48 * 4);  // %bb after %bw

  StatusOr<std::unique_ptr<cpu::Executor>> ex =
      cpu::Executor::create(std::move(program), sgd_momentum_aot_kernels());
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  StatusOr<Graph> g = read_graph_file("tests/aot/testdata/sgd_momentum_step.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(default_pipeline().run(*g).ok());
  std::mt19937 rng(3);
  std::vector<Tensor> inputs;
  for (const Input& in : g->inputs()) {
    Tensor t(g->type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.set_double(i, std::uniform_real_distribution<double>(-1, 1)(rng));
    }
    ASSERT_TRUE((*ex)->set_input(g->value(in.value).name, t).ok());
    inputs.push_back(std::move(t));
  }
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE((*ex)->run().ok());
    auto ref = reference::run(*g, inputs);
    ASSERT_TRUE(ref.ok()) << ref.error().to_string();
    std::string why;
    EXPECT_TRUE(all_close((*ex)->output(0), ref->outputs[0], 1e-5, &why)) << why;
    for (const auto& [name, value] : ref->updated) {
      Tensor got = (*ex)->input((*ex)->find_input(name));
      EXPECT_TRUE(all_close(got, value, 1e-5, &why)) << "step " << step << " " << name << ": " << why;
      inputs[g->input_index(*g->find_value(name))] = value;
    }
  }
}

}  // namespace
}  // namespace weft
