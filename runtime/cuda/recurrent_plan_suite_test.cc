// The suite's four loop models (bench/models.h: lstm_seq, gru_seq, feedback_fixed,
// iterative_refine) as persistent loop programs (recurrent_plan.h), planned on the host:
// feedback_fixed's and iterative_refine's cpu-preset steps through the host oracle
// against the reference interpreter (f32 and autocast's bf16), and every loop of the four
// planned at paper sizes (and the cpu preset in bf16) with the plans pinned and the cost
// model's figures printed (recurrent_kernel_layout.h; bench/RESULTS.md). Moved out of
// recurrent_plan_test.cc (session 28), names kept.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/models.h"
#include "codegen/lower.h"
#include "runtime/binding.h"
#include "runtime/cuda/recurrent_kernel_layout.h"
#include "runtime/cuda/recurrent_plan.h"
#include "runtime/cuda/recurrent_plan_testing.h"
#include "runtime/cuda/recurrent_testing.h"

namespace weft::cuda {
namespace {
namespace recurrent_plan_suite_test {  // this file's names, apart in its package's unity test

using namespace plan_testing;

constexpr auto kOracle = run_recurrent_on_host;

// The suite's other two loop models (feedback_fixed, iterative_refine: Linear → GELU →
// LayerNorm as a residual, looped) at the cpu preset, f32 and autocast's bf16: the forward
// loop (a matmul and the layer norm's row kernel, its eps hoisted before the loop; in bf16
// the bias and gelu in the matmul's epilogue) and the gradient loop (the layer norm's and gelu's gradient in
// one row kernel, a matmul, elementwise kernels) plan and match the interpreter: f32 at
// its tolerance, bf16 within 2^-4 of max(1, |x|) (2^-5 fails on the forward loop: its
// epilogue adds the bias and applies gelu in f32 registers where the interpreter rounds
// the bias's sum to bf16 first, passes/round_at_stores.h, and the residual stream carries
// each iteration's difference into the next, ten and eight times).
TEST(RecurrentPlan, SuiteLoopModelStepsMatchTheInterpreter) {
  for (const char* model : {"feedback_fixed", "iterative_refine"}) {
    for (DType precision : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(std::string(model) + " " + std::string(dtype_name(precision)));
      const float bf16_residual = precision == DType::bf16 ? 0x1p-4f : 0.0f;
      EXPECT_EQ(expect_loops_match_reference(suite_step(model, precision), 41, kOracle, *element_type(precision),
                                             bf16_residual),
                2);
    }
  }
}

// Each loop of `p` planned at nominal addresses (the plan reads no memory): the root
// arena at 1 TiB, its inputs block at 2 TiB, each body's arena at 3 TiB and inputs block
// at 4 TiB. One line per loop: "@BODY xLENGTH: N invocations, C copies -> P phases" (the
// invocations and copies a trip of the bound loop runs, the phases of one iteration of
// its persistent launch), or the refusal.
/// Every loop of `p` (whose layout is checked) bound at nominal addresses and planned.
std::vector<std::pair<std::string, StatusOr<RecurrentPlan>>> plan_loops(Program& p) {
  check_layout(p, "recurrent_plan_suite_test");
  const auto nominal = [](int tib, int64_t offset) {
    return reinterpret_cast<void*>((uintptr_t{1} << 40) * static_cast<uintptr_t>(tib) + static_cast<uintptr_t>(offset));
  };
  std::vector<void*> inputs;
  for (int64_t offset : p.input_offsets) inputs.push_back(nominal(2, offset));
  std::vector<std::pair<std::string, StatusOr<RecurrentPlan>>> plans;
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::loop) continue;
    LoopAddresses where;
    where.body_arena = nominal(3, 0);
    where.body_inputs = nominal(4, 0);
    for (const BufferRef& r : inv.operands) where.in.push_back(buffer_address(r, nominal(1, 0), inputs));
    for (const BufferRef& r : inv.results) where.results.push_back(buffer_address(r, nominal(1, 0), inputs));
    plans.emplace_back(p.bodies[static_cast<size_t>(inv.body)].name, plan_recurrent_loop(p, inv, where));
  }
  return plans;
}

std::vector<std::string> plan_lines(Program& p) {
  std::vector<std::string> lines;
  for (const auto& [body, plan] : plan_loops(p)) {
    lines.push_back(plan.ok() ? "@" + body + " x" + std::to_string(plan->program.length) + ": " +
                                    std::to_string(plan->body_invocations) + " invocations, " +
                                    std::to_string(plan->copy_phases) + " copies -> " +
                                    std::to_string(plan->program.phases.size()) + " phases"
                              : plan.error().message);
  }
  return lines;
}

/// `model`'s training step (Adam) at `preset` (bench/models.h) and `precision` (f32, or
/// autocast's bf16 / f16: passes/autocast.h), lowered for CUDA.
StatusOr<Lowering> lowered_step(const char* model, bench::Preset preset, DType precision) {
  WEFT_ASSIGN_OR_RETURN(bench::BenchModel m, bench::make_bench_model(model, preset));
  WEFT_ASSIGN_OR_RETURN(Trainer t, Trainer::compile(m.net, m.inputs, m.loss, OptimizerSpec::adam(m.lr),
                                                    {.seed = 1, .backend = "reference", .precision = precision}));
  return codegen::lower_to_program(t.step_graph(), codegen::cuda_lower_options());
}

StatusOr<Lowering> lowered_paper_step(const char* model) {
  return lowered_step(model, bench::Preset::paper, DType::f32);
}

// The suite's loop models' f32 steps at paper sizes (bench/models.h), lowered for CUDA:
// every loop plans. feedback_fixed's and iterative_refine's forward loop: the matmul and
// the layer norm's row kernel (the bias, gelu, the layer norm, the residual); their
// gradient loop: the layer norm's and gelu's gradient in one row kernel, the matmul, two
// elementwise kernels. The forward loop planned 3 phases (the eps's `full` a phase of its
// own, written each iteration) until decompose-composites ran before hoist-loop-invariants
// (session 28), which takes the eps out of the loop: 2 since.
TEST(RecurrentPlan, SuiteRecurrentModelsPlan) {
  const std::map<std::string, std::vector<std::string>> kPlans = {
      {"feedback_fixed",
       {"@body x10: 2 invocations, 0 copies -> 2 phases", "@grad_body x10: 4 invocations, 0 copies -> 4 phases"}},
      {"iterative_refine",
       {"@body x8: 2 invocations, 0 copies -> 2 phases", "@grad_body x8: 4 invocations, 0 copies -> 4 phases"}},
  };
  for (const char* model : {"lstm_seq", "gru_seq", "feedback_fixed", "iterative_refine"}) {
    SCOPED_TRACE(model);
    StatusOr<Lowering> l = lowered_paper_step(model);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    const std::vector<std::string> lines = plan_lines(l->program);
    EXPECT_FALSE(lines.empty());
    for (const std::string& line : lines) {
      std::printf("  %s %s\n", model, line.c_str());
      EXPECT_EQ(line.find("persistent loop"), std::string::npos) << line;
    }
    if (auto plans = kPlans.find(model); plans != kPlans.end()) {
      EXPECT_EQ(lines, plans->second);
    }
  }
}

// The cost model (recurrent_kernel_layout.h) of lstm_seq's and gru_seq's loops at the
// paper preset on an H200 model (h200_limits), as planned in f32 and with every buffer
// of the program bf16 (what autocast's bf16 bodies are heading for; a model of the
// tensor-core path, not a measurement, and not a plan of a bf16 graph): per loop, its
// launch and the matmul phases' modelled time per iteration, f32 then bf16. Figures for
// bench/RESULTS.md; nothing asserted beyond the plan and the tensor-core choice.
TEST(RecurrentPlan, SuiteLoopsCostInBf16OnAnH200Model) {
  for (const char* model : {"lstm_seq", "gru_seq"}) {
    SCOPED_TRACE(model);
    StatusOr<Lowering> l = lowered_paper_step(model);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    for (auto& [body, plan] : plan_loops(l->program)) {
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      RecurrentProgram program = plan->program;
      std::string line = std::string(model) + " @" + body + " x" + std::to_string(program.length) + ", " +
                         std::to_string(program.phases.size()) + " phases:";
      for (ElementType type : {ElementType::f32, ElementType::bf16}) {
        for (StepAddress& b : program.buffers) b.type = type;
        StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(program.view(), recurrent_testing::h200_limits());
        ASSERT_TRUE(launch.ok()) << launch.error().message;
        EXPECT_EQ(launch->tensor_cores, type == ElementType::bf16);
        const RecurrentCost cost = recurrent_cost(program.view(), *launch);
        line += std::string(" ") + recurrent_testing::type_name(type) + " " + std::to_string(launch->blocks) + " blocks, " +
                std::to_string(launch->shared_bytes) + " shared B, " + std::to_string(cost.matmuls.size()) +
                " matmuls modelled " + std::to_string(cost.modelled_ps / 1000) + " ns, A " +
                std::to_string(cost.grid_a_bytes) + " B across the grid, " + std::to_string(cost.grid_barriers) +
                " grid barriers;";
      }
      std::printf("  %s\n", line.c_str());
    }
  }
}

// The suite's loop models' steps at --precision=bf16 (autocast's bodies: casts inside,
// the weights cast once outside, f32 carries, bf16 xs), at the cpu and paper presets,
// lowered for CUDA: every loop plans. feedback_fixed's and iterative_refine's forward loop:
// the matmul with the bias and gelu (erf's form, kGeluOp) in its epilogue and the layer
// norm's row kernel; their gradient loop: one row kernel (the layer norm's and gelu's
// gradients), an elementwise kernel, the matmul. The forward loop planned 4 phases before
// fuse-contraction-epilogue took a bf16 product widened to f32 into its epilogue (session
// 27, epicast), 3 after, and 2 since decompose-composites runs before hoist-loop-invariants,
// which takes the eps's `full` out of the loop (session 28).
TEST(RecurrentPlan, SuiteBf16LoopsPlan) {
  const std::map<std::string, std::vector<std::string>> kPlans = {
      {"feedback_fixed",
       {"@body x10: 2 invocations, 0 copies -> 2 phases", "@grad_body x10: 3 invocations, 0 copies -> 3 phases"}},
      {"iterative_refine",
       {"@body x8: 2 invocations, 0 copies -> 2 phases", "@grad_body x8: 3 invocations, 0 copies -> 3 phases"}},
  };
  for (bench::Preset preset : {bench::Preset::cpu, bench::Preset::paper}) {
    for (const char* model : {"lstm_seq", "gru_seq", "feedback_fixed", "iterative_refine"}) {
      SCOPED_TRACE(std::string(bench::to_string(preset)) + " " + model);
      StatusOr<Lowering> l = lowered_step(model, preset, DType::bf16);
      ASSERT_TRUE(l.ok()) << l.error().to_string();
      const std::vector<std::string> lines = plan_lines(l->program);
      for (const std::string& line : lines) std::printf("  %s %s bf16 %s\n", bench::to_string(preset), model, line.c_str());
      if (auto plans = kPlans.find(model); plans != kPlans.end()) {
        EXPECT_EQ(lines, plans->second);
      }
      EXPECT_EQ(lines.size(), std::string(model) == "lstm_seq" ? 4u : 2u);
      for (const std::string& line : lines) EXPECT_EQ(line.find("persistent loop"), std::string::npos) << line;
    }
  }
}

// The cost model of the suite's four loop models' real bf16 loops (autocast's bodies, not
// a retyped f32 plan) at the paper preset on an H200 model (h200_limits), beside the f32
// plans: per loop, what one trip of today's bound loop launches (the body's invocations
// and copies, each iteration) against the persistent loop's one launch, its phases per
// iteration, and the matmul phases' modelled time per iteration. Figures for
// bench/RESULTS.md; asserted: the plans, and tensor cores for the bf16 ones.
TEST(RecurrentPlan, SuiteBf16LoopsCostOnAnH200Model) {
  for (const char* model : {"lstm_seq", "gru_seq", "feedback_fixed", "iterative_refine"}) {
    for (DType precision : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(std::string(model) + " " + std::string(dtype_name(precision)));
      StatusOr<Lowering> l = lowered_step(model, bench::Preset::paper, precision);
      ASSERT_TRUE(l.ok()) << l.error().to_string();
      int64_t bound_launches = 0, persistent_launches = 0;
      for (auto& [body, plan] : plan_loops(l->program)) {
        ASSERT_TRUE(plan.ok()) << plan.error().message;
        const RecurrentProgram& program = plan->program;
        StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(program.view(), recurrent_testing::h200_limits());
        ASSERT_TRUE(launch.ok()) << launch.error().message;
        EXPECT_EQ(launch->tensor_cores, precision == DType::bf16);
        const RecurrentCost cost = recurrent_cost(program.view(), *launch);
        const int64_t bound = program.length * (plan->body_invocations + plan->copy_phases);
        const size_t around = plan->before.size() + plan->after.size();
        bound_launches += bound;
        persistent_launches += 1 + static_cast<int64_t>(around);
        std::printf("  %s %s @%s x%lld: bound %d invocations + %d copies per iteration = %lld launches; persistent 1 "
                    "launch + %zu copies around it, %zu phases per iteration, %d blocks, %zu shared B, %zu matmuls "
                    "modelled %llu ns per iteration, %lld grid barriers; modelled per iteration: matmuls %llu + rows "
                    "%llu + elementwise %llu + barriers %llu = %llu ns\n",
                    model, std::string(dtype_name(precision)).c_str(), body.c_str(), static_cast<long long>(program.length),
                    plan->body_invocations, plan->copy_phases, static_cast<long long>(bound), around,
                    program.phases.size(), launch->blocks, launch->shared_bytes, cost.matmuls.size(),
                    static_cast<unsigned long long>(cost.modelled_ps / 1000), static_cast<long long>(cost.grid_barriers),
                    static_cast<unsigned long long>(cost.modelled_ps / 1000),
                    static_cast<unsigned long long>(cost.row_ps / 1000),
                    static_cast<unsigned long long>(cost.elementwise_ps / 1000),
                    static_cast<unsigned long long>(cost.barrier_ps / 1000),
                    static_cast<unsigned long long>(cost.iteration_ps / 1000));
        if (std::getenv("RPLAN_COST")) std::printf("%s", describe_recurrent_cost(cost).c_str());
      }
      std::printf("  %s %s step's loops: bound %lld launches, persistent %lld (launches and copies)\n", model,
                  std::string(dtype_name(precision)).c_str(), static_cast<long long>(bound_launches),
                  static_cast<long long>(persistent_launches));
    }
  }
}

}  // namespace recurrent_plan_suite_test
}  // namespace
}  // namespace weft::cuda
