// One model of the benchmark suite on weft, in one process (bench/PROTOCOL.md).
//
//   weft_worker --model=M --preset=cpu|paper --names-out=NAMES.json
//       Builds the model and writes its parameter/state names, shapes and dtypes and the
//       input/target types (layout in PROTOCOL.md), then exits.
//   weft_worker --model=M --preset=P --init=INIT.safetensors [--epochs=E] [--warmup=W]
//       Loads the weights (by weft name) and `input.K` / `target` from INIT, trains
//       W warm-up and E measured epochs of 50 steps and prints one JSON line.
//   weft_worker --model=M --preset=P --random-init [--seed=S] [--epochs=E] [--warmup=W]
//       The same with weft's own initialization and random data (standalone use).
//   Either timed run takes --steps=N: N steps per epoch instead of 50, for quick checks,
//   --precision=f32|bf16|f16 (TrainOptions::precision) and --fuse-attention
//   (TrainOptions::fuse_attention: refused for a model whose step has no attention pattern).
//   weft_worker --model=all|M [--preset=P] --print-params
//       Prints each model's trainable parameter count.
//
// Defaults: 3 warm-up and 20 measured epochs; at the cpu preset 1 and 5. Timed runs at
// the paper preset are declined unless --allow-paper: weft's backends so far run on the
// CPU. --profile prints the compiled step's per-kernel times after the warm-up, the 25
// costliest invocations or --profile-rows=N of them.
//
// The timed run's flags, INIT loading, epoch loop and JSON fields are bench/timed_run.h,
// shared with bench/weft_aot_worker (the same runs on the AOT libraries of bench/aot).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/models.h"
#include "bench/step_stats.h"
#include "bench/timed_run.h"
#include "training/flag_values.h"
#include "runtime/cpu/executor.h"
#include "formats/safetensors.h"
#include "tools/weftc/args.h"

namespace weft::bench {
namespace {

using nlohmann::json;

const char* loss_name(const LossSpec& loss) {
  return loss.kind == LossSpec::Kind::CrossEntropy ? "cross_entropy" : "mse";
}

Status write_names(const BenchModel& m, Preset preset, const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(Model built, m.net->build(m.inputs));
  json params = json::array();
  for (const ParamInfo& p : built.parameters()) {
    if (p.name == "rng") continue;  // the generator's state is weft's own
    json j = type_json(p.name, built.graph().type(p.value), 0);
    j.erase("high");
    j["kind"] = std::string(input_kind_name(p.kind));
    params.push_back(j);
  }
  json inputs = json::array();
  for (const InputSpec& in : m.inputs) inputs.push_back(type_json(in.name, in.type, m.token_range));
  json target = type_json("target", m.target, m.token_range);
  if (m.target_is_input) target["same_as"] = m.inputs[0].name;
  json out = {{"model", m.name},
              {"preset", to_string(preset)},
              {"loss", loss_name(m.loss)},
              {"lr", m.lr},
              {"param_count", built.parameter_count()},
              {"params", params},
              {"inputs", inputs},
              {"target", target}};
  std::ofstream f(path);
  f << out.dump(1) << "\n";
  if (!f) return Error{"cannot write " + path};
  return Status();
}

/// What INIT must hold for `trainer` (compiled from `m`).
InitLayout init_layout(const Trainer& trainer, const BenchModel& m) {
  InitLayout layout;
  layout.model = m.name;
  for (const ParamInfo& p : trainer.model().parameters()) {
    if (p.name == "rng") continue;  // the generator's state is weft's own
    layout.values.push_back({p.name, trainer.values().at(p.name).type()});
  }
  for (const InputSpec& in : m.inputs) layout.inputs.push_back({in.name, in.type});
  layout.target = {"target", m.target};
  layout.target_is_input = m.target_is_input;
  return layout;
}

int fail(const Error& e) {
  std::fprintf(stderr, "weft_worker: %s\n", e.to_string().c_str());
  return 1;
}

/// Whether fuse-attention made an `attention` node in the training step `g`.
bool has_attention(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Attention) return true;
  }
  return false;
}

int print_params(const std::string& which, Preset preset) {
  std::vector<std::string> names =
      which == "all" ? bench_model_names() : std::vector<std::string>{which};
  std::printf("%-18s %14s   (weft, preset %s)\n", "model", "parameters", to_string(preset));
  for (const std::string& name : names) {
    StatusOr<BenchModel> m = make_bench_model(name, preset);
    if (!m.ok()) return fail(m.error());
    StatusOr<Model> built = m->net->build(m->inputs);
    if (!built.ok()) return fail(built.error());
    std::printf("%-18s %14lld\n", name.c_str(), static_cast<long long>(built->parameter_count()));
  }
  return 0;
}

int run(const cli::Args& args) {
  const std::string model_name = args.get("model");
  if (model_name.empty())
    return fail(Error{"--model=NAME is required (or --model=all --print-params)"});
  StatusOr<Preset> preset = parse_preset(args.get("preset", "cpu"));
  if (!preset.ok()) return fail(preset.error());
  if (args.has("print-params")) return print_params(model_name, *preset);

  const int64_t rss_before = proc_status_bytes("VmRSS");
  StatusOr<BenchModel> m = make_bench_model(model_name, *preset);
  if (!m.ok()) return fail(m.error());
  if (args.has("names-out")) {
    Status s = write_names(*m, *preset, cli::resolve_path(args.get("names-out")));
    return s.ok() ? 0 : fail(s.error());
  }
  StatusOr<TimedRunFlags> flags = parse_timed_run_flags(args, to_string(*preset));
  if (!flags.ok()) return fail(flags.error());
  StatusOr<int64_t> profile_rows = parse_int("profile-rows", args.get("profile-rows", "25"), 1, 100000);
  if (!profile_rows.ok()) return fail(profile_rows.error());
  if (*preset == Preset::paper && !args.has("allow-paper")) {
    return fail(
        Error{"the paper preset is meant for GPU backends and weft's backends run on the "
              "CPU; use --preset=cpu (or --allow-paper to run it anyway)"});
  }

  TrainOptions options;
  options.seed = flags->seed;
  const std::string precision = args.get("precision", "f32");
  const std::optional<DType> dtype = parse_precision(precision);
  if (!dtype) return fail(Error{"--precision=" + precision + ": one of f32, bf16, f16"});
  options.precision = *dtype;
  options.fuse_attention = args.has("fuse-attention");
  StatusOr<Trainer> trainer =
      Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr), options);
  if (!trainer.ok()) return fail(trainer.error());
  if (options.fuse_attention && !has_attention(trainer->step_graph())) {
    return fail(Error{"--fuse-attention: fuse-attention finds no attention (softmax(q·kᵀ·scale + "
                      "mask)·v, passes/fuse_attention.h) in " + m->name + "'s step: nothing to fuse"});
  }
  const InitLayout layout = init_layout(*trainer, *m);
  std::vector<Tensor> batch;
  if (flags->init_path.empty()) {
    batch = random_batch(layout, m->token_range, flags->seed);
  } else {
    StatusOr<std::vector<Tensor>> loaded =
        load_init(flags->init_path, layout, [&](const std::string& name, const Tensor& t) {
          return trainer->set_value(name, t);
        });
    if (!loaded.ok()) return fail(loaded.error());
    batch = std::move(*loaded);
  }

  const bool profile = args.has("profile");
  // On the cpu backend the thread count is the cpu executor's own, asked of it rather
  // than of ProgramExecutor.
  auto* cpu_step = dynamic_cast<cpu::Executor*>(trainer->compiled_step());
  StatusOr<EpochTimes> times = run_epochs(
      m->name, *flags, [&] { return trainer->step(batch); },
      [&] {
        if (profile && cpu_step) (void)trainer->set_profiling(true);
      });
  if (!times.ok()) return fail(times.error());
  if (profile && cpu_step) {
    std::fprintf(stderr, "%s", trainer->profile_report(static_cast<int>(*profile_rows))->c_str());
  }
  const std::string config =
      run_config(options.backend, cpu_step ? cpu_step->pool().num_threads() : 0) +
      (precision == "f32" ? "" : ", " + precision) + (options.fuse_attention ? ", fused attention" : "");
  json out = result_json(m->name, config, *flags, *times, trainer->model().parameter_count(),
                         rss_before);
  out["precision"] = precision;
  out["fuse_attention"] = options.fuse_attention;
  StepStats st = step_stats(*trainer);
  json gemms = json::array();
  for (const auto& g : st.gemm_shapes) gemms.push_back({g[0], g[1], g[2], g[3]});
  out["planned_bytes"] = st.planned_bytes;
  out["arena_bytes"] = cpu_step ? json(cpu_step->program().arena_bytes) : json(nullptr);
  out["arena_lower_bound_bytes"] = cpu_step ? json(cpu_step->program().lower_bound_bytes) : json(nullptr);
  out["matmul_flops"] = st.matmul_flops;
  out["gemm_shapes"] = gemms;
  out["state_bytes"] = st.state_bytes;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  using weft::cli::FlagSpec;
  std::vector<std::string> argv_list(argv + 1, argv + argc);
  std::vector<FlagSpec> specs = weft::bench::worker_flag_specs();
  specs.push_back(FlagSpec("print-params", "", /*takes_value_in=*/false));
  specs.push_back(FlagSpec("allow-paper", "", /*takes_value_in=*/false));
  specs.push_back(FlagSpec("precision"));
  specs.push_back(FlagSpec("profile-rows"));
  auto args = weft::cli::parse_args("weft_worker", argv_list, specs, /*program=*/"");
  if (!args.ok()) return weft::bench::fail(args.error());
  return weft::bench::run(*args);
}
