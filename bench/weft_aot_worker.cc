// One model of the benchmark suite on weft's AOT path, in one process: the timed runs of
// bench/weft_worker (bench/PROTOCOL.md 3) on the libraries of bench/aot, compiled by
// `bazel build` at the cpu preset. Links weft's runtime only: no frontend, no MLIR, no
// LLVM (the JSON line's "compiler_mapped" says whether any libMLIR/libLLVM was mapped).
//
//   weft_aot_worker --model=M [--preset=cpu] --init=INIT.safetensors [--epochs=E] [--warmup=W]
//       Loads the weights (by weft name) and `input.K` / `target` from INIT, trains W
//       warm-up and E measured epochs of 50 steps and prints one JSON line.
//   weft_aot_worker --model=M --random-init [--seed=S] [--epochs=E] [--warmup=W]
//       The same from the library's own initializers (the JIT Trainer's values for the
//       same seed) and weft_worker's random data for that seed.
//   Either takes --steps=N (steps per epoch instead of 50), --profile, and
//   --precision=f32|bf16: bf16 runs the model's bf16 library (NAME_bf16, built for the
//   GEMM-bound transformer, mlp and residual_tower only; weft_library's `precision`).
//
// The parameter names (--names-out) come from bench/weft_worker, which builds the model
// without compiling it; the paper preset is declined (the libraries are the cpu preset's).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/aot/conv_autoenc.h"
#include "bench/aot/convnet.h"
#include "bench/aot/feedback_fixed.h"
#include "bench/aot/gated_routing.h"
#include "bench/aot/gru_seq.h"
#include "bench/aot/iterative_refine.h"
#include "bench/aot/lstm_seq.h"
#include "bench/aot/mlp.h"
#include "bench/aot/mlp_bf16.h"
#include "bench/aot/residual_tower.h"
#include "bench/aot/residual_tower_bf16.h"
#include "bench/aot/transformer.h"
#include "bench/aot/transformer_bf16.h"
#include "bench/timed_run.h"
#include "training/aot/compiled_model.h"
#include "runtime/cpu/executor.h"

namespace weft::bench {
namespace {

using nlohmann::json;

/// A suite model compiled ahead of time (bench/aot/BUILD).
struct AotModel {
  const char* name;
  const aot::ModelTable& (*table)();
  /// bench/models.cc's token_range: integer inputs and targets are drawn from [0, it).
  int64_t token_range = 0;
  /// bench/models.cc's target_is_input: the target is input.0 itself.
  bool target_is_input = false;
  /// The same model compiled with precision = "bf16" (bench/aot/BUILD), or null.
  const aot::ModelTable& (*bf16_table)() = nullptr;
};

/// The ten models in bench_model_names()' order.
const std::vector<AotModel>& aot_models() {
  static const std::vector<AotModel> models = {
      {"transformer", &weft_aot::Transformer::table, 1024, false, &weft_aot::TransformerBf16::table},
      {"mlp", &weft_aot::Mlp::table, 0, false, &weft_aot::MlpBf16::table},
      {"residual_tower", &weft_aot::ResidualTower::table, 0, false, &weft_aot::ResidualTowerBf16::table},
      {"feedback_fixed", &weft_aot::FeedbackFixed::table},
      {"gated_routing", &weft_aot::GatedRouting::table},
      {"iterative_refine", &weft_aot::IterativeRefine::table},
      {"gru_seq", &weft_aot::GruSeq::table},
      {"conv_autoenc", &weft_aot::ConvAutoenc::table, 0, /*target_is_input=*/true},
      {"lstm_seq", &weft_aot::LstmSeq::table},
      {"convnet", &weft_aot::Convnet::table},
  };
  return models;
}

int fail(const Error& e) {
  std::fprintf(stderr, "weft_aot_worker: %s\n", e.to_string().c_str());
  return 1;
}

/// The library of `m` compiled at `precision` ("f32" or "bf16"), or an error naming the
/// models that have one.
StatusOr<const aot::ModelTable*> table_at(const AotModel& m, const std::string& precision) {
  if (precision == "f32") return &m.table();
  std::string with;
  for (const AotModel& other : aot_models()) {
    if (other.bf16_table) with += (with.empty() ? "" : ", ") + std::string(other.name);
  }
  if (precision != "bf16") {
    return Error{"--precision=" + precision + ": bench/aot builds the suite's models in f32, and " +
                 with + " also in bf16"};
  }
  if (!m.bf16_table) {
    return Error{"--precision=bf16: bench/aot builds no bf16 library of " + std::string(m.name) +
                 " (only of the GEMM-bound " + with + "); use bench/weft_worker (the JIT)"};
  }
  return &m.bf16_table();
}

/// What INIT must hold for `table`: its parameters and state (not `rng`), then the step's
/// inputs; the step's last input is the target, `target` in INIT.
InitLayout init_layout(const AotModel& m, const aot::ModelTable& table) {
  InitLayout layout;
  layout.model = m.name;
  for (int i = 0; i < table.num_model_values; ++i) {
    const aot::ValueEntry& v = table.values[size_t(i)];
    if (v.name != "rng") layout.values.push_back({v.name, v.type});
  }
  for (size_t i = 0; i + 1 < table.step_inputs.size(); ++i) {
    layout.inputs.push_back({table.step_inputs[i].name, table.step_inputs[i].type});
  }
  layout.target = {"target", table.step_inputs.back().type};
  layout.target_is_input = m.target_is_input;
  return layout;
}

/// Trainable parameters (kind param), as frontend's Model::parameter_count counts them.
int64_t parameter_count(const aot::ModelTable& table) {
  int64_t n = 0;
  for (int i = 0; i < table.num_model_values; ++i) {
    const aot::ValueEntry& v = table.values[size_t(i)];
    if (v.kind == InputKind::param) n += v.type.numel();
  }
  return n;
}

/// Whether any of MLIR's or LLVM's shared libraries is mapped into this process.
bool compiler_mapped() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("libMLIR") != std::string::npos || line.find("libLLVM") != std::string::npos) {
      return true;
    }
  }
  return false;
}

int run(const cli::Args& args) {
  const std::string model_name = args.get("model");
  const AotModel* model = nullptr;
  std::string known;
  for (const AotModel& m : aot_models()) {
    if (m.name == model_name) model = &m;
    known += (known.empty() ? "" : ", ") + std::string(m.name);
  }
  if (model_name.empty()) return fail(Error{"--model=NAME is required; models: " + known});
  if (!model) return fail(Error{"unknown model '" + model_name + "'; models: " + known});
  const std::string preset = args.get("preset", "cpu");
  if (preset != "cpu") {
    return fail(Error{"the AOT libraries of bench/aot are compiled at the cpu preset; preset '" +
                      preset + "' needs bench/weft_worker (the JIT)"});
  }
  if (args.has("names-out")) {
    return fail(Error{"--names-out is bench/weft_worker's (it builds the model without "
                      "compiling it); this worker only runs timed runs"});
  }
  StatusOr<TimedRunFlags> flags = parse_timed_run_flags(args, preset);
  if (!flags.ok()) return fail(flags.error());

  const int64_t rss_before = proc_status_bytes("VmRSS");
  const std::string precision = args.get("precision", "f32");
  StatusOr<const aot::ModelTable*> at = table_at(*model, precision);
  if (!at.ok()) return fail(at.error());
  const aot::ModelTable& table = **at;
  StatusOr<std::unique_ptr<aot::CompiledModel>> compiled =
      aot::CompiledModel::create(table, flags->seed);
  if (!compiled.ok()) return fail(compiled.error());
  aot::CompiledModel& m = **compiled;
  const InitLayout layout = init_layout(*model, table);
  std::vector<Tensor> batch;
  if (flags->init_path.empty()) {
    batch = random_batch(layout, model->token_range, flags->seed);
  } else {
    StatusOr<std::vector<Tensor>> loaded =
        load_init(flags->init_path, layout, [&](const std::string& name, const Tensor& t) {
          return m.set_value(name, t);
        });
    if (!loaded.ok()) return fail(loaded.error());
    batch = std::move(*loaded);
  }

  const bool profile = args.has("profile");
  Status profiling;
  StatusOr<EpochTimes> times = run_epochs(
      model->name, *flags, [&] { return m.step(batch); },
      [&] {
        if (profile) profiling = m.set_profiling(true);
      });
  if (!profiling.ok()) return fail(profiling.error());
  if (!times.ok()) return fail(times.error());
  if (profile) std::fprintf(stderr, "%s", m.profile_report().c_str());
  // The suite's CPU libraries run on runtime/cpu (their tables name "cpu").
  auto* cpu_executor = dynamic_cast<cpu::Executor*>(m.step_executor());
  const std::string config =
      "aot " + table.backend +
      (cpu_executor ? ", " + std::to_string(cpu_executor->pool().num_threads()) + " threads" : "") +
      (precision == "f32" ? "" : ", " + precision);
  json out = result_json(model->name, config, *flags, *times, parameter_count(table), rss_before);
  out["arena_bytes"] = m.step_executor()->program().arena_bytes;
  out["arena_lower_bound_bytes"] = m.step_executor()->program().lower_bound_bytes;
  out["compiler_mapped"] = compiler_mapped();
  out["precision"] = precision;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  std::vector<std::string> argv_list(argv + 1, argv + argc);
  std::vector<weft::cli::FlagSpec> specs = weft::bench::worker_flag_specs();
  specs.push_back(weft::cli::FlagSpec("precision"));
  auto args = weft::cli::parse_args("weft_aot_worker", argv_list, specs);
  if (!args.ok()) return weft::bench::fail(args.error());
  return weft::bench::run(*args);
}
