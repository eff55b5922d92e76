// A graph compiled ahead of time (//codegen:weft_aot_compile, run by a genrule at build
// time) runs on runtime/cpu's executor with no MLIR or LLVM in the process, and computes
// what the reference interpreter computes.
#include <gtest/gtest.h>

#include <fstream>

#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/cpu/executor.h"
#include "formats/npy.h"
#include "runtime/reference/interpreter.h"

weft::Program mlp_aot_program();
std::vector<weft::GeneratedFn> mlp_aot_kernels();

namespace weft {
namespace {

const std::string kDir = "examples/mlp/";

TEST(AotProgram, RunsWithoutMlirOrLlvmAndMatchesTheReference) {
  StatusOr<std::unique_ptr<cpu::Executor>> ex =
      cpu::Executor::create(mlp_aot_program(), mlp_aot_kernels());
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  StatusOr<Graph> g = read_graph_file(kDir + "mlp.wir");
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(default_pipeline().run(*g).ok());
  std::vector<Tensor> inputs;
  for (const Input& in : g->inputs()) {
    StatusOr<Tensor> t = read_npy(kDir + g->value(in.value).name + ".npy");
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    ASSERT_TRUE((*ex)->set_input(g->value(in.value).name, *t).ok());
    inputs.push_back(std::move(*t));
  }
  ASSERT_TRUE((*ex)->run().ok());
  auto ref = reference::run(*g, inputs);
  ASSERT_TRUE(ref.ok());
  ASSERT_EQ((*ex)->num_outputs(), static_cast<int>(ref->outputs.size()));
  for (int i = 0; i < (*ex)->num_outputs(); ++i) {
    std::string why;
    EXPECT_TRUE(all_close((*ex)->output(i), ref->outputs[i], 1e-5, &why)) << i << ": " << why;
  }
  for (const auto& [name, value] : ref->updated) {
    std::string why;
    Tensor got = (*ex)->input((*ex)->find_input(name));
    EXPECT_TRUE(all_close(got, value, 1e-5, &why)) << name << ": " << why;
  }
  // Nothing of MLIR or LLVM is mapped into this process.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    EXPECT_EQ(line.find("libMLIR"), std::string::npos) << line;
    EXPECT_EQ(line.find("libLLVM"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace weft
