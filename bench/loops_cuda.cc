// Loop overhead per iteration on one NVIDIA GPU (#31), without MLIR: the suite's loop
// models from their AOT CUDA libraries (bench/aot, paper preset, NAME_cuda), the direct
// method of bench/loops_overhead.h — the step's loop line, CUDA events launch by launch
// (bench/loops_cuda_profile.h), minus `length` runs of its body bound alone with the
// step's PTX, per trip — and the step's median time as one CUDA graph (run()) beside the
// same step launch by launch. bench/loops.cc --device=cuda measures the same through the
// JIT where MLIR is at hand; this binary is what tests/cuda/loop_overhead_check.sh carries
// to a GPU machine (runtime-only, libstdc++ linked in).
//
//   loops_cuda [--models=gru_seq,lstm_seq,feedback_fixed,iterative_refine] [--steps=20]
//
// Without a GPU it stops with the reason (exit status 2). Random weights (each library's
// initializers, seed 1) and a random batch: the kernels' times do not depend on values.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "bench/aot_suite.h"
#include "bench/loops_cuda_profile.h"
#include "bench/loops_overhead.h"
#include "bench/timed_run.h"
#include "runtime/cuda/executor.h"
#include "training/aot/compiled_model.h"

namespace weft::bench {
namespace {

const AotModel* find_model(const std::string& name) {
  for (const AotModel& m : aot_models()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

// One model: its trips per step, the step as a graph and launch by launch, and each loop's
// line by the direct method.
Status measure(const AotModel& model, int steps) {
  const aot::ModelTable& table = model.table();
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<aot::CompiledModel> m, aot::CompiledModel::create(table, /*seed=*/1));
  InitLayout layout;
  layout.model = model.name;
  for (size_t i = 0; i + 1 < table.step_inputs.size(); ++i) {
    layout.inputs.push_back({table.step_inputs[i].name, table.step_inputs[i].type});
  }
  layout.target = {"target", table.step_inputs.back().type};
  layout.target_is_input = model.target_is_input;
  const std::vector<Tensor> batch = random_batch(layout, model.token_range, /*seed=*/1);
  std::vector<double> ms;
  for (int s = 0; s < steps + 3; ++s) {
    const auto at = std::chrono::steady_clock::now();
    WEFT_RETURN_IF_ERROR(m->step(batch).status());
    if (s >= 3) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - at).count());
  }
  std::sort(ms.begin(), ms.end());
  auto* ex = dynamic_cast<cuda::Executor*>(m->step_executor());
  if (ex == nullptr) return Error{std::string(model.name) + ": the step is not on runtime/cuda"};
  WEFT_ASSIGN_OR_RETURN(std::vector<double> root_us, cuda_profile_us(*ex, steps));
  const Program& program = ex->program();
  std::printf("%-17s trips per step %lld; step %.3f ms as %s, %.3f ms launch by launch (events)\n", model.name,
              static_cast<long long>(trips_per_step(program)), ms[ms.size() / 2],
              ex->uses_cuda_graph() ? "one CUDA graph" : "launches",
              std::accumulate(root_us.begin(), root_us.end(), 0.0) / 1e3);
  WEFT_ASSIGN_OR_RETURN(std::vector<LoopCost> costs,
                        loop_costs(program, root_us, cuda_body_timer(table.step_ptx ? table.step_ptx : "", table.step_symbols, steps)));
  std::stringstream described(ex->describe());
  std::vector<std::string> lines;
  for (std::string line; std::getline(described, line);) lines.push_back(line);
  for (const LoopCost& c : costs) {
    std::printf("%s    %s\n", format_loop_cost(model.name, "looped", c).c_str(),
                c.site.invocation < lines.size() ? lines[c.site.invocation].c_str() : "");
  }
  return Status();
}

int run(int argc, char** argv) {
  int steps = 20;
  std::vector<std::string> names = {"gru_seq", "lstm_seq", "feedback_fixed", "iterative_refine"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--steps=", 0) == 0) {
      steps = std::max(1, std::atoi(a.c_str() + 8));
    } else if (a.rfind("--models=", 0) == 0) {
      names.clear();
      std::stringstream list(a.substr(9));
      for (std::string n; std::getline(list, n, ',');) names.push_back(n);
    } else {
      std::fprintf(stderr, "usage: loops_cuda [--models=a,b,...] [--steps=N]\n");
      return 2;
    }
  }
  for (const std::string& name : names) {
    if (find_model(name) == nullptr) {
      std::fprintf(stderr, "loops_cuda: no model '%s' in %s\n", name.c_str(), aot_libraries());
      return 2;
    }
  }
  if (!cuda::available()) {
    std::fprintf(stderr, "loops_cuda: needs an NVIDIA GPU, and this machine has none (%s)\n",
                 cuda::unavailable_reason().c_str());
    return 2;
  }
  std::printf("preset %s (%s), %d steps per figure, one GPU\n%s", aot_preset(), aot_libraries(), steps,
              overhead_method_note().c_str());
  std::printf("cuda: the loop line and its body alone launch by launch (CUDA events); no unrolled form here\n");
  for (const std::string& name : names) {
    if (Status s = measure(*find_model(name), steps); !s.ok()) {
      std::fprintf(stderr, "loops_cuda: %s: %s\n", name.c_str(), s.error().to_string().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::run(argc, argv); }
