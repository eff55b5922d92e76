// Planned loops run by the persistent loop kernel itself, without a GPU: every loop of
// small LSTM and GRU training steps, a tanh RNN and the shifted/chained carries graph,
// lowered with codegen::cuda_lower_options() and planned (recurrent_plan.h) as
// recurrent_plan_test plans them, then run by the kernel's source (recurrent_kernel_device.inc)
// under cuda_emulation.h's cooperative launch — the recurrent weights in shared memory, and
// again from global memory — and compared with the reference interpreter's run of the
// same scan node; bf16 and f16 bodies too, on tensor cores and SIMT; gelu, row kernels
// and the suite's feedback_fixed and iterative_refine steps. The plan and the kernel meet
// here before a GPU runs them.
#include "runtime/cuda/cuda_emulation.h"  // first: CUDA's built-ins for the kernel's source

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/cuda/recurrent_kernel_device.inc"

#include "runtime/cuda/recurrent_kernel_layout.h"
#include "runtime/cuda/recurrent_plan_testing.h"
#include "runtime/cuda/recurrent_testing.h"
#include "tests/testing/loop_graphs.h"

namespace weft::cuda {
namespace {

using namespace plan_testing;

// The kernel on `blocks` blocks of 32 threads, with the shared memory the layout's rule
// gives under `shared_limit` (0: every B read from global memory); `tensor_cores` as the
// launch's (bf16/f16 matmuls on the emulated mma.sync).
std::function<Status(const RecurrentProgramView&)> kernel(unsigned blocks, uint64_t shared_limit,
                                                          bool tensor_cores = false) {
  return [=](const RecurrentProgramView& program) {
    const uint64_t shared = recurrent_shared_bytes(program, blocks, shared_limit);
    // The barrier's counter, then the split-K scratch the cost model's partition needs.
    std::vector<unsigned> barrier(1 + recurrent_workspace_bytes(program, blocks) / sizeof(unsigned), 0);
    const std::vector<MatmulPlacement> table = matmul_placements(program, blocks, shared);
    const RecurrentProgramView placed = with_placements(program, table.data(), blocks, shared);
    emulation::run_cooperative_grid(blocks, 32, shared,
                                    [&] { recurrent_loop(placed, barrier.data(), tensor_cores); });
    return Status::ok_status();
  };
}

void expect_on_kernel(const Graph& g, uint64_t seed, int loops) {
  for (uint64_t limit : {uint64_t{1} << 20, uint64_t{0}}) {
    SCOPED_TRACE(limit == 0 ? "B from global memory" : "B in shared memory");
    EXPECT_EQ(expect_loops_match_reference(g, seed, kernel(3, limit)), loops);
  }
}

TEST(RecurrentPlanOnKernel, LstmStepLoops) {
  expect_on_kernel(sequence_step(LSTM(6, 8, {.layers = 2, .last = true}), 8), 3, 4);
}

TEST(RecurrentPlanOnKernel, GruStepLoops) { expect_on_kernel(sequence_step(GRU(6, 8, {.last = true}), 8), 5, 2); }

TEST(RecurrentPlanOnKernel, TanhRnnLoops) { expect_on_kernel(typed(kTanhRnn), 7, 2); }

TEST(RecurrentPlanOnKernel, ShiftedAndChainedCarries) { expect_on_kernel(typed(testing::kScanSlotsGraph), 11, 2); }

TEST(RecurrentPlanOnKernel, ACarryNextFromAConst) { expect_on_kernel(typed(kConstCarry), 29, 1); }

// bf16 and f16 bodies (recurrent_plan_testing.h) on the kernel's tensor-core matmul and on
// its SIMT one, against the reference interpreter at the type's tolerance.
TEST(RecurrentPlanOnKernel, LowPrecisionLoops) {
  for (bool tensor_cores : {true, false}) {
    SCOPED_TRACE(tensor_cores ? "tensor cores" : "SIMT");
    for (const std::string& text : {std::string(kHalfRnn), in_f16(kHalfRnn)}) {
      EXPECT_EQ(expect_loops_match_reference(typed(text), 13, kernel(3, uint64_t{1} << 20, tensor_cores)), 2);
    }
    for (const std::string& text : {std::string(kAutocastRnn), in_f16(kAutocastRnn)}) {
      EXPECT_EQ(expect_loops_match_reference(typed(text), 17, kernel(3, 0, tensor_cores)), 1);
    }
    for (const std::string& text : {std::string(kRoundTrip), in_f16(kRoundTrip)}) {
      EXPECT_EQ(expect_loops_match_reference(typed(text), 19, kernel(3, 0, tensor_cores)), 1);
    }
  }
}

// Autocast's loops in small LSTM and GRU training steps at bf16 and f16 (forward and
// gradient: casts in the bodies, some read between a kernel's ops and rounded in their
// registers, f32 carries, low weights and xs) on the kernel's tensor-core matmul and its
// SIMT one, B in shared memory, against the reference interpreter at the type's tolerance.
TEST(RecurrentPlanOnKernel, AutocastStepLoops) {
  for (DType precision : {DType::bf16, DType::f16}) {
    const ElementType body = *element_type(precision);
    const Graph lstm = sequence_step(LSTM(6, 8, {.layers = 2, .last = true}), 8, precision);
    const Graph gru = sequence_step(GRU(6, 8, {.last = true}), 8, precision);
    for (bool tensor_cores : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(precision)) + (tensor_cores ? " tensor cores" : " SIMT"));
      EXPECT_EQ(expect_loops_match_reference(lstm, 3, kernel(3, uint64_t{1} << 20, tensor_cores), body), 4);
      EXPECT_EQ(expect_loops_match_reference(gru, 5, kernel(3, uint64_t{1} << 20, tensor_cores), body), 2);
    }
  }
}

// gelu in both forms (kGeluRnn) and row kernels (kNormRnn: a layer norm, its eps a
// hoisted const, a row's sum) on the kernel: its row phase's block sums over 32 threads, rows spread over
// the 3 blocks.
TEST(RecurrentPlanOnKernel, GeluAndRowKernelLoops) {
  expect_on_kernel(typed(kGeluRnn), 31, 1);
  expect_on_kernel(typed(kNormRnn), 37, 1);
}

// feedback_fixed's step at the cpu preset (recurrent_plan_test's
// SuiteLoopModelStepsMatchTheInterpreter, same tolerances; iterative_refine's is the same
// body, wider, and would double the test's half minute) on the kernel: f32 with B in
// shared memory, autocast's bf16 on the tensor-core matmul; rows of 128 columns over 32
// threads, 32 rows over 3 blocks.
TEST(RecurrentPlanOnKernel, FeedbackFixedStep) {
  EXPECT_EQ(expect_loops_match_reference(suite_step("feedback_fixed"), 41, kernel(3, uint64_t{1} << 20)), 2);
  EXPECT_EQ(expect_loops_match_reference(suite_step("feedback_fixed", DType::bf16), 41,
                                         kernel(3, uint64_t{1} << 20, true), ElementType::bf16, 0x1p-4f),
            2);
}

// Every loop of the suite's four loop models' f32 steps at the paper preset (bench/models.h),
// lowered for CUDA, planned and launched on an H200 model (h200_limits), as planned and
// with every buffer bf16: the table the host works out for the kernel (matmul_placements)
// is, entry by entry, what the kernel worked out itself at its start before
// (recurrent_testing.h), on the planned launch and with the stage alone.
TEST(RecurrentPlanOnKernel, SuiteLoopsPlacementsAreWhatTheKernelWorkedOut) {
  for (const char* model : {"lstm_seq", "gru_seq", "feedback_fixed", "iterative_refine"}) {
    SCOPED_TRACE(model);
    StatusOr<bench::BenchModel> m = bench::make_bench_model(model, bench::Preset::paper);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    StatusOr<Trainer> trainer = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr),
                                                 {.seed = 1, .backend = "reference"});
    ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
    StatusOr<Lowering> l = codegen::lower_to_program(trainer->step_graph(), codegen::cuda_lower_options());
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    std::vector<std::byte> arena, inputs;
    int loops = 0;
    for (HostLoop& h : bind_loops(*l, arena, inputs)) {
      SCOPED_TRACE("loop over @" + h.body.name);
      StatusOr<RecurrentPlan> plan = plan_recurrent_loop(l->program, *h.loop, h.where);
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      RecurrentProgram program = plan->program;
      for (ElementType type : {ElementType::f32, ElementType::bf16}) {
        for (StepAddress& b : program.buffers) b.type = type;
        const RecurrentProgramView view = program.view();
        const StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(view, recurrent_testing::h200_limits());
        ASSERT_TRUE(launch.ok()) << launch.error().message;
        EXPECT_EQ(recurrent_testing::expect_placements_as_the_kernel_worked_them_out(view, launch->blocks,
                                                                                     launch->shared_bytes, 0),
                  count_cached_phases(view, launch->blocks, launch->shared_bytes).cached);
        recurrent_testing::expect_placements_as_the_kernel_worked_them_out(view, launch->blocks, kMatmulStageBytes, 0);
      }
      ++loops;
    }
    EXPECT_GE(loops, 2);  // the forward loop and its gradient's
  }
}

}  // namespace
}  // namespace weft::cuda
