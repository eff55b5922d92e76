// NAME_runtime_test of an AOT model target (tools/aot/weft.bzl): linked with the generated
// library alone, the model initializes and trains with nothing of MLIR or LLVM in the
// process. It also prints the time from process start to the end of the first step.
// A model compiled for a device this machine lacks (cuda without a GPU) is checked without
// it: its PTX holds every kernel symbol and assembles for sm_90 (ptxas runs without a
// GPU), and creating it fails with the backend's pinned "no CUDA device: ..." error.
#include <gtest/gtest.h>

#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "training/aot/compiled_model.h"

namespace weft::aot {
namespace {

// Seconds since this process started (/proc/self/stat's starttime: clock ticks since boot).
double seconds_since_process_start() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;  // field 22 is starttime
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return now.tv_sec + now.tv_nsec * 1e-9 - std::stod(field) / sysconf(_SC_CLK_TCK);
}

void expect_no_compiler_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    EXPECT_EQ(line.find("libMLIR"), std::string::npos) << line;
    EXPECT_EQ(line.find("libLLVM"), std::string::npos) << line;
  }
}

constexpr char kPtxas[] = "/usr/local/cuda/bin/ptxas";

TEST(AotRuntimeOnly, DeviceCodeIsConsistent) {
  const ModelTable& t = linked_model_table();
  if (t.backend != "cuda") GTEST_SKIP() << t.backend << ": the kernels are object code in the binary";
  for (const char* part : {"step", "eval"}) {
    const bool step = std::string(part) == "step";
    if (step && !t.step_program) continue;
    const Program p = step ? t.step_program() : t.eval_program();
    const DeviceCode code = step ? t.step_code() : t.eval_code();
    EXPECT_TRUE(code.host_kernels.empty()) << part;
    ASSERT_EQ(code.symbols.size(), p.kernels.size()) << part;
    for (const std::string& s : code.symbols) {
      EXPECT_NE(code.module.find(".visible .entry " + s + "("), std::string::npos) << part << " " << s;
    }
    std::printf("%s: %zu kernels, %zu bytes of PTX\n", part, p.kernels.size(), code.module.size());
    if (!std::ifstream(kPtxas).good()) {
      std::printf("  %s not found: PTX not assembled\n", kPtxas);
      continue;
    }
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string path = std::string(tmp ? tmp : "/tmp") + "/" + t.name + "_" + part + ".ptx";
    std::ofstream(path) << code.module;
    const std::string cmd = std::string(kPtxas) + " -arch=sm_90 " + path + " -o " + path + ".cubin";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

TEST(AotRuntimeOnly, TrainsWithoutMlirOrLlvm) {
  const Backend& backend = **find_backend(linked_model_table().backend);
  const std::string unavailable = backend.unavailable_reason ? backend.unavailable_reason() : "";
  StatusOr<std::unique_ptr<driver::Trainable>> m = driver::make_compiled_model({.seed = 1});
  if (!unavailable.empty()) {  // the binary starts, and says why it cannot bind
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().message, "no CUDA device: " + unavailable);
    expect_no_compiler_mapped();
    GTEST_SKIP() << "compiled for " << backend.name << ", which this machine cannot run: " << unavailable;
  }
  if (backend.check_program && linked_model_table().step_program) {
    if (Status s = backend.check_program(linked_model_table().step_program()); !s.ok()) {
      ASSERT_FALSE(m.ok());
      EXPECT_EQ(m.error().message, s.error().message);
      GTEST_SKIP() << "the step is not yet runnable on " << backend.name << ": " << s.error().to_string();
    }
  }
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  auto* compiled = dynamic_cast<CompiledModel*>(m->get());
  ASSERT_NE(compiled, nullptr);
  if (compiled->inference_only()) {
    std::vector<Tensor> x;
    for (const driver::TensorSpec& s : (*m)->eval_inputs()) x.emplace_back(s.type);  // zeros
    StatusOr<std::vector<Tensor>> out = (*m)->evaluate(x);
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    std::printf("process start to the end of the first evaluation: %.0f ms\n",
                1e3 * seconds_since_process_start());
    EXPECT_EQ(out->size(), (*m)->eval_outputs().size());
  } else {
    std::vector<Tensor> batch;
    for (const driver::TensorSpec& s : (*m)->step_inputs()) batch.emplace_back(s.type);  // zeros
    StatusOr<double> loss = (*m)->step(batch);
    ASSERT_TRUE(loss.ok()) << loss.error().to_string();
    std::printf("process start to the end of the first step: %.0f ms\n",
                1e3 * seconds_since_process_start());
    EXPECT_TRUE(std::isfinite(*loss));
    EXPECT_EQ((*m)->steps(), 1);
  }
  expect_no_compiler_mapped();
}

}  // namespace
}  // namespace weft::aot
