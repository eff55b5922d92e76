// Row kernels on the suite's training steps: each model's compiled step lowered three
// ways on one binary — as before row kernels (reductions take only producers, the
// composites run as library kernels), with row groups (codegen::LowerOptions::
// fuse_rows), and with the composites decomposed too (decompose_composites, the
// default) — printing the Program's invocation counts, the median ms per step and the
// processor time per step.
// Random parameters and data; prints figures, asserts nothing.
//
//   bazel run //bench:row_fusion -- transformer mlp [--profile]
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "bench/models.h"
#include "codegen/cpu_backend.h"
#include "runtime/cpu/bench_util.h"

namespace weft::bench {
namespace {

struct Config {
  const char* name;
  bool rows, decompose;
};

Status measure(const std::string& name, bool profile) {
  WEFT_ASSIGN_OR_RETURN(BenchModel m, make_bench_model(name, Preset::cpu));
  TrainOptions reference;
  reference.backend = "reference";  // Only for its step graph.
  WEFT_ASSIGN_OR_RETURN(Trainer trainer, Trainer::compile(m.net, m.inputs, m.loss,
                                                          OptimizerSpec::adam(m.lr), reference));
  for (const Config& c : {Config{"before row kernels", false, false},
                          Config{"row groups", true, false},
                          Config{"row groups + decomposed composites", true, true}}) {
    codegen::CpuOptions options;
    options.lower.fuse_rows = c.rows;
    options.lower.decompose_composites = c.decompose;
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Executor> ex,
                          codegen::compile_for_cpu(trainer.step_graph(), options));
    std::mt19937_64 rng(1);
    const Program& p = ex->program();
    for (size_t k = 0; k < p.inputs.size(); ++k) {
      Tensor x(p.inputs[k].type);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const bool integer = !is_floating(x.dtype());
        const double step = p.inputs[k].name == "weft.step" ? 1 : 0;
        x.set_double(i, integer ? (m.token_range > 0 ? static_cast<double>(rng() % m.token_range) : step)
                                : std::uniform_real_distribution<double>(-0.1, 0.1)(rng));
      }
      WEFT_RETURN_IF_ERROR(ex->set_input(static_cast<int>(k), x));
    }
    int generated = 0, library = 0;
    for (const Invocation& inv : p.code) {
      generated += inv.kind == Invocation::Kind::generated;
      library += inv.kind == Invocation::Kind::library;
    }
    const double ms = cpu::bench::seconds_per_call([&] { (void)ex->run(); }, 9) * 1e3;
    // Processor time is less disturbed than wall time by other jobs on a shared machine
    // (with WEFT_NUM_THREADS=1 it is the step's own work).
    const std::clock_t c0 = std::clock();
    const int steps = std::max(3, static_cast<int>(200 / std::max(ms, 1.0)));
    for (int i = 0; i < steps; ++i) (void)ex->run();
    const double cpu_ms = 1e3 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC / steps;
    std::printf("%-16s %-36s %4zu invocations (%3d generated, %3d library)  %8.2f ms/step, "
                "%8.2f ms processor time\n",
                name.c_str(), c.name, p.code.size(), generated, library, ms, cpu_ms);
    if (profile) {
      ex->set_profiling(true);
      for (int i = 0; i < 20; ++i) (void)ex->run();
      std::printf("%s\n", ex->profile_report(12).c_str());
    }
  }
  return Status::ok_status();
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  std::vector<std::string> models;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--profile") profile = true;
    else models.push_back(argv[i]);
  }
  if (models.empty()) models = {"transformer"};
  for (const std::string& m : models) {
    if (weft::Status s = weft::bench::measure(m, profile); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", m.c_str(), s.to_string().c_str());
      return 1;
    }
  }
  return 0;
}
