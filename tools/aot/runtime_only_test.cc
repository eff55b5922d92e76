// NAME_runtime_test of an AOT model target (tools/aot/weft.bzl): linked with the generated
// library alone, the model initializes and trains with nothing of MLIR or LLVM in the
// process. It also prints the time from process start to the end of the first step.
#include <gtest/gtest.h>

#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/aot/compiled_model.h"

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

TEST(AotRuntimeOnly, TrainsWithoutMlirOrLlvm) {
  StatusOr<std::unique_ptr<driver::Trainable>> m = driver::make_compiled_model(/*seed=*/1, 0);
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

  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    EXPECT_EQ(line.find("libMLIR"), std::string::npos) << line;
    EXPECT_EQ(line.find("libLLVM"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace weft::aot
