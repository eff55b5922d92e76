// One model of the benchmark suite on weft's AOT path, in one process: the timed runs of
// bench/weft_worker (bench/PROTOCOL.md 3) on the libraries of bench/aot, compiled by
// `bazel build`: //bench:weft_aot_worker at the cpu preset on the CPU, and
// //bench:weft_aot_cuda_worker at the paper preset on one NVIDIA GPU (bench/aot_suite.h:
// which libraries). Links weft's runtime only: no frontend, no MLIR, no LLVM (the JSON
// line's "compiler_mapped" says whether any libMLIR/libLLVM was mapped). On the GPU the
// JSON line also has "device_peak_bytes", the device memory the step's executor allocated.
//
//   weft_aot_worker --model=M [--preset=cpu] --init=INIT.safetensors [--epochs=E] [--warmup=W]
//       Loads the weights (by weft name) and `input.K` / `target` from INIT, trains W
//       warm-up and E measured epochs of 50 steps and prints one JSON line.
//   weft_aot_worker --model=M --random-init [--seed=S] [--epochs=E] [--warmup=W]
//       The same from the library's own initializers (the JIT Trainer's values for the
//       same seed) and weft_worker's random data for that seed.
//   Either takes --steps=N (steps per epoch instead of 50), --profile,
//   --precision=f32|bf16: bf16 runs the model's bf16 library (NAME_bf16, built for the
//   GEMM-bound transformer, mlp and residual_tower only; weft_library's `precision`), and
//   --fuse-attention: the model's f32 library compiled with fused attention (transformer_fa,
//   on the GPU transformer_cuda_fa; weft_library's `fuse_attention`), refused for a model
//   without attention.
//
//   weft_aot_worker --model=M --names-out=NAMES.json
//       weft_worker's --names-out from the library's table (but its "loss"), for the GPU
//       machine, which has no compiler: `bench:suite --device=cuda` names with it.
//
// A preset other than the libraries' is declined.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/aot_suite.h"
#include "bench/timed_run.h"
#include "training/aot/compiled_model.h"

namespace weft::bench {
namespace {

using nlohmann::json;

int fail(const Error& e) {
  std::fprintf(stderr, "weft_aot_worker: %s\n", e.to_string().c_str());
  return 1;
}

/// The models that have the library `variant` (AotModel::bf16_table, ...), for messages:
/// "transformer, mlp, residual_tower".
std::string models_with(const aot::ModelTable& (*AotModel::*variant)()) {
  std::string with;
  for (const AotModel& other : aot_models()) {
    if (other.*variant) with += (with.empty() ? "" : ", ") + std::string(other.name);
  }
  return with;
}

/// The library of `m` compiled at `precision` ("f32" or "bf16"), with fused attention or
/// not, or an error naming the models that have one.
StatusOr<const aot::ModelTable*> table_at(const AotModel& m, const std::string& precision,
                                          bool fuse_attention) {
  if (fuse_attention) {
    if (precision != "f32") {
      return Error{"--fuse-attention with --precision=" + precision +
                   ": bench/aot builds its fused-attention libraries in f32 only; drop one of them"};
    }
    if (!m.fused_attention_table) {
      return Error{"--fuse-attention: " + std::string(m.name) +
                   " has no attention (softmax(q·kᵀ·scale + mask)·v) to fuse; bench/aot builds a "
                   "fused-attention library of " + models_with(&AotModel::fused_attention_table) +
                   " only"};
    }
    return &m.fused_attention_table();
  }
  if (precision == "f32") return &m.table();
  const std::string with = models_with(&AotModel::bf16_table);
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

/// weft_worker's --names-out JSON from `table` (run.py --names checks PyTorch's state
/// against it): the model's values but `rng`, with their kinds, the inputs and the target.
Status write_names(const AotModel& m, const aot::ModelTable& table, const std::string& path) {
  const InitLayout layout = init_layout(m, table);
  nlohmann::json params = nlohmann::json::array();
  for (int i = 0; i < table.num_model_values; ++i) {
    const aot::ValueEntry& v = table.values[size_t(i)];
    if (v.name == "rng") continue;  // the generator's state is weft's own
    nlohmann::json j = type_json(v.name, v.type, 0);
    j.erase("high");
    j["kind"] = std::string(input_kind_name(v.kind));
    params.push_back(j);
  }
  nlohmann::json inputs = nlohmann::json::array();
  for (const NamedType& in : layout.inputs) inputs.push_back(type_json(in.name, in.type, m.token_range));
  nlohmann::json target = type_json("target", layout.target.type, m.token_range);
  if (m.target_is_input) target["same_as"] = layout.inputs[0].name;
  nlohmann::json out = {{"model", m.name},         {"preset", aot_preset()},
                        {"lr", table.lr},          {"param_count", parameter_count(table)},
                        {"params", params},        {"inputs", inputs},
                        {"target", target}};
  std::ofstream f(path);
  f << out.dump(1) << "\n";
  if (!f) return Error{"cannot write " + path};
  return Status();
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
  const std::string preset = args.get("preset", aot_preset());
  if (preset != aot_preset()) {
    return fail(Error{std::string(aot_libraries()) + " are compiled at the " + aot_preset() +
                      " preset; preset '" + preset + "' needs bench/weft_worker (the JIT)"});
  }
  const std::string precision = args.get("precision", "f32");
  const bool fuse_attention = args.has("fuse-attention");
  StatusOr<const aot::ModelTable*> at = table_at(*model, precision, fuse_attention);
  if (!at.ok()) return fail(at.error());
  const aot::ModelTable& table = **at;
  if (args.has("names-out")) {
    Status s = write_names(*model, table, cli::resolve_path(args.get("names-out")));
    return s.ok() ? 0 : fail(s.error());
  }
  StatusOr<TimedRunFlags> flags = parse_timed_run_flags(args, preset);
  if (!flags.ok()) return fail(flags.error());

  const int64_t rss_before = proc_status_bytes("VmRSS");
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
  const std::string config = aot_config(table, *m.step_executor()) +
                             (precision == "f32" ? "" : ", " + precision) +
                             (fuse_attention ? ", fused attention" : "");
  json out = result_json(model->name, config, *flags, *times, parameter_count(table), rss_before);
  out["arena_bytes"] = m.step_executor()->program().arena_bytes;
  out["arena_lower_bound_bytes"] = m.step_executor()->program().lower_bound_bytes;
  out["compiler_mapped"] = compiler_mapped();
  if (std::optional<int64_t> bytes = aot_device_bytes(*m.step_executor())) {
    out["device_peak_bytes"] = *bytes;
  }
  out["precision"] = precision;
  out["fuse_attention"] = fuse_attention;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  std::vector<std::string> argv_list(argv + 1, argv + argc);
  std::vector<weft::cli::FlagSpec> specs = weft::bench::worker_flag_specs();
  specs.push_back(weft::cli::FlagSpec("precision"));
  auto args = weft::cli::parse_args("weft_aot_worker", argv_list, specs, /*program=*/"");
  if (!args.ok()) return weft::bench::fail(args.error());
  return weft::bench::run(*args);
}
