// The GPU case of #30's loss scaling (gen_cases_half.cc's mlp_f16_overflow_adam_step)
// checked on the host: with the inputs cases_test gives it, the reference interpreter —
// the oracle the GPU's step is compared with, launch by launch and as one CUDA graph —
// overflows f16 in each of its 3 steps, so each skips its update, halves loss_scale and
// counts the skip. Without this the case could pass on a GPU while testing no skip at all.
#include <gtest/gtest.h>

#include <string>

#include "runtime/reference/interpreter.h"
#include "tests/cuda/case_inputs.h"
#include "tests/cuda/cases.h"

namespace weft::cuda_cases {
namespace {

TEST(LossScaleCase, TheReferenceSkipsEveryStepOfTheOverflowCase) {
  size_t index = 0;
  while (index < all_cases().size() && all_cases()[index].name != "mlp_f16_overflow_adam_step") ++index;
  ASSERT_LT(index, all_cases().size()) << "no case mlp_f16_overflow_adam_step";
  const Case& c = all_cases()[index];
  const Graph g = parse_case(c);
  std::vector<Tensor> inputs = make_inputs(g, 1000 + index);  // cases_test's seed
  const std::vector<Tensor> start = inputs;
  double scale = 65536;
  for (int step = 0; step < c.steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    set_step(g, inputs, step);
    StatusOr<reference::RunResult> r = reference::run(g, inputs);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    for (auto& [name, value] : r->updated) {
      inputs[static_cast<size_t>(g.input_index(*g.find_value(name)))] = value;
    }
    scale /= 2;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = g.value(g.inputs()[i].value).name;
      if (name == "loss_scale") {
        EXPECT_EQ(inputs[i].get_double(0), scale);
      } else if (name == "skipped_steps") {
        EXPECT_EQ(inputs[i].get_double(0), step + 1);
      } else if (g.inputs()[i].kind != InputKind::data) {  // parameters, slots, copies
        EXPECT_EQ(inputs[i].to_doubles(), start[i].to_doubles()) << name << " changed in a skipped step";
      }
    }
  }
}

}  // namespace
}  // namespace weft::cuda_cases
