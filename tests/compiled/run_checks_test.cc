// The compiled CPU backend's run-time checks ([Reliability]): check-numerics names the
// op that first produced a NaN or infinity — inside a fused kernel, the body node, with
// its own `.wir` location — and a plan larger than the memory allowed is refused before
// anything is allocated.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <limits>
#include <regex>

#include "codegen/cpu_backend.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/pipeline.h"

namespace weft {
namespace {
namespace run_checks_test {  // this file's names, apart in its package's unity test

Graph typed(const char* text) {
  StatusOr<Graph> g = parse_graph(text, "step.wir");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  Pipeline p = default_pipeline();
  EXPECT_TRUE(p.run_until(*g, "infer-types").ok());
  return std::move(*g);
}

Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(Shape({int64_t(v.size())}), v); }

// mul, log, add and sqrt fuse into one generated kernel; sum over it is a reduction
// kernel; the last sum (of %big alone) is a library reduction.
constexpr const char* kStep = R"(graph @step(%x: f32[4], %y: f32[4], %big: f32[2]) {
  %a = mul(%x, %y) : f32[4]
  %b = log(%a) : f32[4]
  %c = add(%b, %x) : f32[4]
  %d = sqrt(%c) : f32[4]
  %s = sum(%big) : f32[]
  return %d, %s
}
)";

std::unique_ptr<cpu::Executor> compile(const Graph& g) {
  StatusOr<std::unique_ptr<cpu::Executor>> ex = codegen::compile_for_cpu(g);
  EXPECT_TRUE(ex.ok()) << ex.status().to_string();
  (*ex)->set_check_numerics(true);
  return std::move(*ex);
}

TEST(CompiledCheckNumerics, FiniteStepRuns) {
  auto ex = compile(typed(kStep));
  ASSERT_TRUE(ex->set_input("x", f32({1, 2, 3, 4})).ok());
  ASSERT_TRUE(ex->set_input("y", f32({1, 1, 1, 1})).ok());
  ASSERT_TRUE(ex->set_input("big", f32({1, 2})).ok());
  Status s = ex->run();
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_FLOAT_EQ(ex->output(1).data<float>()[0], 3.0f);
}

TEST(CompiledCheckNumerics, FindsTheBodyNodeOfAFusedKernel) {
  auto ex = compile(typed(kStep));
  ASSERT_TRUE(ex->set_input("x", f32({1, 2, 3, 4})).ok());
  ASSERT_TRUE(ex->set_input("y", f32({1, 1, 0, 1})).ok());
  ASSERT_TRUE(ex->set_input("big", f32({1, 2})).ok());
  Status s = ex->run();
  ASSERT_FALSE(s.ok());
  const std::string m = s.error().to_string();
  EXPECT_EQ(m, "step.wir:3:3: error: check-numerics: log produced -inf (f32[4], element 2) "
               "inside the fused kernel computing %d");
}

TEST(CompiledCheckNumerics, NamesALibraryKernel) {
  auto ex = compile(typed(kStep));
  ASSERT_TRUE(ex->set_input("x", f32({1, 2, 3, 4})).ok());
  ASSERT_TRUE(ex->set_input("y", f32({1, 1, 1, 1})).ok());
  ASSERT_TRUE(ex->set_input("big", f32({3e38f, 3e38f})).ok());
  Status s = ex->run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            "step.wir:6:3: error: check-numerics: sum produced inf in %s (f32[], element 0)");
}

// #28: inside a loop, the body op and the iteration that made the first NaN (log of a
// negative value in iteration 2), not the loop's line and its final carry.
TEST(CompiledCheckNumerics, NamesTheBodyOpAndIterationOfALoop) {
  auto ex = compile(typed(R"(graph @loop(%h0: f32[2], %xs: f32[4,2]) {
  %h, %ys = scan(%h0, %xs) {carries=1, length=4} : f32[2], f32[4,2] ({
    ^cell(%ch: f32[2], %cx: f32[2]):
      %a = add(%ch, %cx) : f32[2]
      %l = log(%a) : f32[2]
      return %a, %l
  })
  return %h, %ys
}
)"));
  ASSERT_TRUE(ex->set_input("h0", f32({1, 1})).ok());
  ASSERT_TRUE(ex->set_input("xs", Tensor::from_vector<float>({4, 2}, {1, 1, 1, 1, -6, 1, 1, 1})).ok());
  Status s = ex->run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            "step.wir:5:7: error: check-numerics: log produced nan (f32[2], element 0) inside the fused kernel "
            "computing %l, in iteration 2 of the loop at step.wir:2:3");
  // Nested loops name each level's iteration: log(-1) in row 1 of the outer slot 1.
  auto nested = compile(typed(R"(graph @nested(%h0: f32[2], %xs: f32[2,2,2]) {
  %h = scan(%h0, %xs) {carries=1, length=2} : f32[2] ({
    ^outer(%oh: f32[2], %ox: f32[2,2]):
      %in = scan(%oh, %ox) {carries=1, length=2} : f32[2] ({
        ^inner(%ih: f32[2], %ix: f32[2]):
          %l = log(%ix) : f32[2]
          %n = add(%ih, %l) : f32[2]
          return %n
      })
      return %in
  })
  return %h
}
)"));
  ASSERT_TRUE(nested->set_input("h0", f32({0, 0})).ok());
  ASSERT_TRUE(nested->set_input("xs", Tensor::from_vector<float>({2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, -1})).ok());
  s = nested->run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            "step.wir:6:11: error: check-numerics: log produced nan (f32[2], element 1) inside the fused kernel "
            "computing %n, in iteration 1 of the loop at step.wir:4:7, in iteration 1 of the loop at step.wir:2:3");
}

// README: WEFT_DUMP_PROGRAM=DIR writes DIR/NAME.program.txt, the Program and every
// generated kernel's body; a directory it cannot write to is an error naming the file.
TEST(CompiledDumpProgram, WritesTheProgramAndItsKernels) {
  const char* tmpdir = std::getenv("TEST_TMPDIR");
  ASSERT_NE(tmpdir, nullptr);
  const std::string dir = std::string(tmpdir) + "/dump";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  ASSERT_EQ(setenv("WEFT_DUMP_PROGRAM", dir.c_str(), 1), 0);
  StatusOr<std::unique_ptr<cpu::Executor>> ex = codegen::compile_for_cpu(typed(kStep));
  ASSERT_TRUE(ex.ok()) << ex.status().to_string();
  std::ifstream in(dir + "/step.program.txt");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("program @step"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\nkernel "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("log("), std::string::npos) << "the fused kernel's body";
  ASSERT_EQ(setenv("WEFT_DUMP_PROGRAM", "/nonexistent-dir", 1), 0);
  ex = codegen::compile_for_cpu(typed(kStep));
  unsetenv("WEFT_DUMP_PROGRAM");
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.error().to_string(),
            "error: WEFT_DUMP_PROGRAM: cannot write '/nonexistent-dir/step.program.txt': No such file or directory");
}

TEST(CompiledCheckNumerics, NamesAnInput) {
  auto ex = compile(typed(kStep));
  ASSERT_TRUE(ex->set_input("x", f32({1, 2, 3, 4})).ok());
  ASSERT_TRUE(ex->set_input("y", f32({1, std::numeric_limits<float>::infinity(), 1, 1})).ok());
  ASSERT_TRUE(ex->set_input("big", f32({1, 2})).ok());
  Status s = ex->run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "check-numerics: input %y holds inf (f32[4], element 1)");
}

TEST(CompiledInputs, WrongTypesAndNamesAreRefusedWithoutChangingTheInput) {
  auto ex = compile(typed(kStep));
  ASSERT_TRUE(ex->set_input("x", f32({1, 2, 3, 4})).ok());
  Status s = ex->set_input("x", f32({1, 2, 3}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "input %x of program @step is f32[4], but the value given is f32[3]");
  s = ex->set_input("x", Tensor::from_doubles(DType::f64, Shape({4}), {1, 2, 3, 4}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "input %x of program @step is f32[4], but the value given is f64[4]");
  s = ex->set_input("z", f32({1}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "program @step has no input %z");
  EXPECT_EQ(ex->input(ex->find_input("x")), f32({1, 2, 3, 4}));
}

TEST(CompiledMemoryCheck, RefusesAPlanLargerThanTheLimit) {
  Graph g = typed(R"(graph @wide(%x: f32[1024,256]) {
  %a = exp(%x) : f32[1024,256]
  %b = sum(%a) {axes=[1]} : f32[1024]
  %c = neg(%x) : f32[1024,256]
  return %b, %c
}
)");
  codegen::CpuOptions options;
  options.executor.max_memory = 1 << 20;  // 1 MiB; the inputs alone take 1 MiB
  StatusOr<std::unique_ptr<cpu::Executor>> ex = codegen::compile_for_cpu(g, options);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.error().message,
            "program @wide needs 2.0 MiB (arena 1.0 MiB + inputs 1.0 MiB) but only 1.0 MiB are "
            "available (the memory limit); largest buffers: %x f32[1024,256] (input) 1.0 MiB, "
            "%c f32[1024,256] (arena+0) 1.0 MiB, %b f32[1024] (arena+1048576) 4.0 KiB; raise the "
            "limit (--max-memory, max_memory) or use a smaller batch");
  options.executor.max_memory = 3 << 20;
  EXPECT_TRUE(codegen::compile_for_cpu(g, options).ok());
}

// Weights of 3e38 overflow the first Linear's product: found on both backends at the same
// op, and named by its builder call site in this file and its builder path.
TEST(TrainerCheckNumerics, NamesTheBuilderCallSite) {
  std::string messages[2];
  for (int b = 0; b < 2; ++b) {
    auto net = FlowBuilder::from(Linear(4, 8)).through(ReLU()).through(Linear(8, 2)).build();
    ASSERT_TRUE(net.ok());
    TrainOptions options;
    options.backend = b == 0 ? "reference" : "cpu";
    options.check_numerics = true;
    StatusOr<Trainer> t = Trainer::compile(*net, {{"x", Type{DType::f32, Shape({3, 4})}}},
                                           LossSpec::mse(), OptimizerSpec::sgd(0.1), options);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    const std::string w = t->model().parameters()[0].name;
    const Type wt = t->values().at(w).type();
    ASSERT_TRUE(t->set_value(w, Tensor::from_doubles(DType::f32, wt.shape,
                                                     std::vector<double>(wt.numel(), 3e38)))
                    .ok());
    Tensor x = Tensor::from_doubles(DType::f32, Shape({3, 4}), std::vector<double>(12, 1.0));
    Tensor y = Tensor::from_doubles(DType::f32, Shape({3, 2}), std::vector<double>(6, 0.5));
    Status failed;
    for (int step = 0; step < 5 && failed.ok(); ++step) failed = t->step({x, y}).status();
    ASSERT_FALSE(failed.ok()) << options.backend;
    messages[b] = failed.error().to_string();
    EXPECT_NE(messages[b].find("run_checks_test.cc:"), std::string::npos) << messages[b];
    EXPECT_NE(messages[b].find(": error: check-numerics: "), std::string::npos) << messages[b];
    EXPECT_NE(messages[b].find("produced inf"), std::string::npos) << messages[b];
    EXPECT_NE(messages[b].find("Linear"), std::string::npos) << messages[b];
    std::printf("%s: %s\n", options.backend.c_str(), messages[b].c_str());
  }
  // The same op at the same line on both; the compiled backend names the fused kernel
  // (a GEMM with its bias epilogue) where the reference names the matmul's own value.
  const std::regex value_name(" in %[0-9a-z_.]+");
  const std::regex kernel(" inside the fused kernel computing %[0-9a-z_.]+");
  EXPECT_EQ(std::regex_replace(messages[0], value_name, ""),
            std::regex_replace(messages[1], kernel, "")) << messages[1];
}

// The loss's nodes carry the Trainer::compile call site, with builder path `loss`.
TEST(TrainerCheckNumerics, NamesTheLoss) {
  auto net = FlowBuilder::from(Linear(2, 2)).build();
  ASSERT_TRUE(net.ok());
  for (const char* backend : {"reference", "cpu"}) {
    TrainOptions options;
    options.backend = backend;
    options.check_numerics = true;
    StatusOr<Trainer> t = Trainer::compile(*net, {{"x", Type{DType::f32, Shape({1, 2})}}},
                                           LossSpec::mse(), OptimizerSpec::sgd(0.1), options);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    // Outputs near 1e20 are finite; their squares are not.
    Tensor x = Tensor::from_doubles(DType::f32, Shape({1, 2}), {1e20, 1e20});
    Tensor y = Tensor::from_doubles(DType::f32, Shape({1, 2}), {0, 0});
    const std::string w = t->model().parameters()[0].name;
    ASSERT_TRUE(t->set_value(w, Tensor::from_doubles(DType::f32, Shape({2, 2}), {1, 0, 0, 1})).ok());
    Status s = t->step({x, y}).status();
    ASSERT_FALSE(s.ok()) << backend;
    const std::string m = s.error().to_string();
    EXPECT_NE(m.find("run_checks_test.cc:" + std::to_string(__LINE__ - 11)), std::string::npos) << m;
    EXPECT_NE(m.find("check-numerics: "), std::string::npos) << m;
    EXPECT_NE(m.find("[in loss]"), std::string::npos) << m;
  }
}

}  // namespace run_checks_test
}  // namespace
}  // namespace weft
