// What bench/loops_cuda does on a GPU, checked on the host where it can be: every loop
// model's AOT CUDA step has loops, and each loop's body, made a Program of its own
// (standalone_body), names only kernels of the step's PTX module and runs every
// invocation on the device (the executor's check) — so binding it alone there is sound.
#include <gtest/gtest.h>

#include <string>

#include "bench/aot_suite.h"
#include "bench/loops_overhead.h"
#include "runtime/cuda/library.h"

namespace weft::bench {
namespace {

const aot::ModelTable& table_of(const std::string& name) {
  for (const AotModel& m : aot_models()) {
    if (name == m.name) return m.table();
  }
  ADD_FAILURE() << "no AOT model " << name;
  return aot_models().front().table();
}

TEST(LoopsCuda, EveryLoopBodyBindsAloneWithTheStepsPtx) {
  for (const std::string name : {"gru_seq", "lstm_seq", "feedback_fixed", "iterative_refine"}) {
    SCOPED_TRACE(name);
    const aot::ModelTable& table = table_of(name);
    const Program step = table.step_program();
    EXPECT_GT(trips_per_step(step), 0);
    const std::vector<LoopSite> sites = loop_sites(step);
    ASSERT_FALSE(sites.empty());
    for (const LoopSite& site : sites) {
      const Program body = standalone_body(step, site.body);
      EXPECT_TRUE(cuda::check_device_only(body).ok()) << body.name;
      ASSERT_EQ(body.kernels.size(), table.step_symbols.size());
      for (const Invocation& inv : body.code) {
        if (inv.kernel >= 0) {
          EXPECT_LT(static_cast<size_t>(inv.kernel), table.step_symbols.size()) << inv.label;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::bench
