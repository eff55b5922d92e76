// The suite's device memory on one NVIDIA GPU, estimated on the host (no GPU needed):
// per model and preset, what runtime/cuda's executor would allocate for the step
// (bench/device_memory.h) and the values live at the arena's peak.
//
//   bazel run //bench:device_memory -- [--preset=paper|cpu|both] [--models=a,b,...]
//                                       [--lowering=gpu|cpu] [--unroll] [--rows=N]
//                                       [--no-fuse] [--graph] [--precision=f32|bf16|f16]
//
// --lowering=cpu lowers with the CPU's options instead of cuda_lower_options() (the
// memory the same step would need with the CPU's fusion); --unroll unrolls the loops;
// --no-fuse lowers without fusion (LowerOptions::fuse); --graph prints the lowered graph
// (its node indices are those of the peak's lines); --precision the step's
// (TrainOptions::precision: autocast's mixed precision).
// Measured device memory (`bench:suite --device=cuda`) adds cuDNN's workspaces beyond the
// arena's free bytes and the CUDA context, which no estimate here counts.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench/device_memory.h"
#include "bench/models.h"
#include "codegen/cuda_program.h"
#include "ir/text.h"
#include "training/flag_values.h"

namespace weft::bench {
namespace {

int usage(const std::string& why) {
  std::fprintf(stderr,
               "device_memory: %s\nusage: device_memory [--preset=paper|cpu|both] [--models=a,b,...] "
               "[--lowering=gpu|cpu] [--unroll] [--rows=N] [--no-fuse] [--graph]\n"
               "                     [--precision=f32|bf16|f16]\n",
               why.c_str());
  return 2;
}

constexpr const char* kHelp =
    "usage: device_memory [--preset=paper|cpu|both] [--models=a,b,...] [--lowering=gpu|cpu]\n"
    "                     [--unroll] [--rows=N] [--no-fuse] [--graph] [--precision=f32|bf16|f16]\n"
    "The suite's device memory on one NVIDIA GPU, estimated on the host (no GPU needed): per\n"
    "model and preset, what the CUDA executor would allocate for the training step, and the\n"
    "values live at the arena's peak. cuDNN's workspaces beyond the arena's free bytes and\n"
    "the CUDA context are not counted.\n"
    "  --preset=P       paper, cpu or both (default both)\n"
    "  --models=a,b     the models (default: all ten)\n"
    "  --lowering=L     gpu (default: cuda_lower_options()) or cpu (the CPU's fusion)\n"
    "  --unroll         unroll the loops\n"
    "  --rows=N         values listed at the peak (default 12)\n"
    "  --no-fuse        lower without fusion\n"
    "  --graph          also print the lowered graph (the peak's node indices)\n"
    "  --precision=P    the step's precision: f32 (default), bf16 or f16\n";

int run(int argc, char** argv) {
  std::vector<Preset> presets = {Preset::paper, Preset::cpu};
  std::vector<std::string> models = bench_model_names();
  bool gpu = true, unroll = false, fuse = true, graph = false;
  int rows = 12;
  DType precision = DType::f32;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kHelp);
      return 0;
    } else if (a.rfind("--preset=", 0) == 0) {
      if (a.substr(9) == "both") continue;
      StatusOr<Preset> p = parse_preset(a.substr(9));
      if (!p.ok()) return usage(p.error().message);
      presets = {*p};
    } else if (a.rfind("--models=", 0) == 0) {
      models.clear();
      std::stringstream list(a.substr(9));
      for (std::string m; std::getline(list, m, ',');) models.push_back(m);
      if (models.empty() || a.back() == ',' ||
          std::find(models.begin(), models.end(), "") != models.end()) {
        return usage("an empty model name in " + a);
      }
    } else if (a == "--lowering=gpu" || a == "--lowering=cpu") {
      gpu = a == "--lowering=gpu";
    } else if (a == "--unroll") {
      unroll = true;
    } else if (a == "--no-fuse") {
      fuse = false;
    } else if (a == "--graph") {
      graph = true;
    } else if (a == "--precision=f32" || a == "--precision=bf16" || a == "--precision=f16") {
      precision = a == "--precision=f32" ? DType::f32 : a == "--precision=bf16" ? DType::bf16 : DType::f16;
    } else if (a.rfind("--precision=", 0) == 0) {
      return usage(a + ": one of f32, bf16, f16");
    } else if (a.rfind("--rows=", 0) == 0) {
      const FlagNumber<int64_t> n = parse_whole_number(a.substr(7));
      if (!n.ok() || n.value < 0 || n.value > 1000000) return usage(a + ": a whole number from 0 to 1000000");
      rows = static_cast<int>(n.value);
    } else {
      return usage("unknown argument " + a);
    }
  }
  codegen::LowerOptions options = gpu ? codegen::cuda_lower_options() : codegen::LowerOptions{};
  options.unroll_loops = unroll;
  options.fuse = fuse;
  for (Preset preset : presets) {
    for (const std::string& name : models) {
      StatusOr<BenchModel> m = make_bench_model(name, preset);
      if (!m.ok()) return usage(m.error().message);
      TrainOptions reference;
      reference.backend = "reference";  // Only for its step graph.
      reference.precision = precision;
      StatusOr<Trainer> t = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr), reference);
      StatusOr<StepMemory> sm = t.ok() ? step_memory(t->step_graph(), options, rows) : StatusOr<StepMemory>(t.error());
      if (!sm.ok()) {
        std::fprintf(stderr, "device_memory: %s (%s): %s\n", name.c_str(), to_string(preset),
                     sm.error().to_string().c_str());
        return 1;
      }
      std::printf("%s, %s preset, %s lowering%s%s\n%s\n", name.c_str(), to_string(preset), gpu ? "GPU" : "CPU",
                  unroll ? ", unrolled" : "", precision == DType::f32 ? "" : (", " + std::string(dtype_name(precision))).c_str(),
                  format_step_memory(*sm).c_str());
      if (graph) {
        StatusOr<codegen::Lowering> l = codegen::lower_to_program(t->step_graph(), options);
        if (l.ok()) std::printf("%s\n", print_graph(l->graph).c_str());
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::run(argc, argv); }
