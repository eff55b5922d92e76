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
//   Either timed run takes --steps=N: N steps per epoch instead of 50, for quick checks.
//   weft_worker --model=all|M [--preset=P] --print-params
//       Prints each model's trainable parameter count.
//
// Defaults: 3 warm-up and 20 measured epochs; at the cpu preset 1 and 5. Timed runs at
// the paper preset are declined unless --allow-paper: weft's backends so far run on the
// CPU. --profile prints the compiled step's per-kernel times after the warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>

#include "bench/models.h"
#include "bench/step_stats.h"
#include "runtime/safetensors.h"
#include "tools/weftc/args.h"

namespace weft::bench {
namespace {

using nlohmann::json;

/// A field of /proc/self/status in bytes (`VmRSS`, `VmHWM`), or -1.
int64_t proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

json type_json(const std::string& name, const Type& t, int64_t high) {
  json j = {{"name", name},
            {"shape", t.shape.dims},
            {"dtype", std::string(safetensors_dtype_name(t.dtype))}};
  if (t.dtype == DType::i64) j["high"] = high;
  return j;
}

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

/// Random data for `t`: N(0, 1) floats, or integers in [0, high).
Tensor random_tensor(const Type& t, int64_t high, std::mt19937_64& rng) {
  Tensor out(t);
  if (t.dtype == DType::i64) {
    std::uniform_int_distribution<int64_t> d(0, high - 1);
    for (int64_t i = 0; i < t.numel(); ++i) out.data<int64_t>()[i] = d(rng);
  } else {
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = d(rng);
  }
  return out;
}

/// Sets every parameter and state from `init` (by name, types checked; a file tensor
/// that is neither a parameter, a state, an input nor the target is an error too) and
/// returns the batch: `input.K` ..., then `target`.
StatusOr<std::vector<Tensor>> load_init(Trainer& trainer, const BenchModel& m,
                                        const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(SafetensorsFile file, read_safetensors(path));
  std::set<std::string> expected;
  std::string problems;
  for (const ParamInfo& p : trainer.model().parameters()) {
    if (p.name == "rng") continue;
    expected.insert(p.name);
    const Tensor* t = file.find(p.name);
    const Type want = trainer.values().at(p.name).type();
    if (!t) {
      problems += "\n  missing " + p.name + " " + want.to_string();
    } else if (t->type() != want) {
      problems +=
          "\n  " + p.name + " is " + t->type().to_string() + ", weft needs " + want.to_string();
    } else {
      WEFT_RETURN_IF_ERROR(trainer.set_value(p.name, *t));
    }
  }
  std::vector<Tensor> batch;
  auto data = [&](const std::string& name, const Type& want, bool optional) {
    expected.insert(name);
    const Tensor* t = file.find(name);
    if (!t && optional) return;
    if (!t) {
      problems += "\n  missing " + name + " " + want.to_string();
    } else if (t->type() != want) {
      problems +=
          "\n  " + name + " is " + t->type().to_string() + ", weft needs " + want.to_string();
    } else {
      batch.push_back(*t);
    }
  };
  for (const InputSpec& in : m.inputs) data(in.name, in.type, false);
  data("target", m.target, m.target_is_input);
  if (m.target_is_input && batch.size() == m.inputs.size()) batch.push_back(batch[0]);
  for (const auto& [name, t] : file.tensors) {
    if (!expected.count(name)) problems += "\n  " + name + " is not a weft parameter of " + m.name;
  }
  if (!problems.empty()) return Error{path + " does not match weft's " + m.name + ":" + problems};
  return batch;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int fail(const Error& e) {
  std::fprintf(stderr, "weft_worker: %s\n", e.to_string().c_str());
  return 1;
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
  const bool random_init = args.has("random-init");
  if (random_init == args.has("init")) {
    return fail(Error{
        "give exactly one of --names-out=PATH, --init=PATH, --random-init or --print-params"});
  }
  if (*preset == Preset::paper && !args.has("allow-paper")) {
    return fail(
        Error{"the paper preset is meant for GPU backends and weft's backends run on the "
              "CPU; use --preset=cpu (or --allow-paper to run it anyway)"});
  }
  const bool cpu = *preset == Preset::cpu;
  const int epochs = std::stoi(args.get("epochs", cpu ? "5" : "20"));
  const int warmup = std::stoi(args.get("warmup", cpu ? "1" : "3"));
  const uint64_t seed = std::stoull(args.get("seed", "0"));
  // The protocol's epoch is 50 steps; fewer only for quick checks.
  const int steps_per_epoch = std::stoi(args.get("steps", "50"));

  TrainOptions options;
  options.seed = seed;
  StatusOr<Trainer> trainer =
      Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr), options);
  if (!trainer.ok()) return fail(trainer.error());
  std::vector<Tensor> batch;
  if (random_init) {
    std::mt19937_64 rng(seed);
    for (const InputSpec& in : m->inputs)
      batch.push_back(random_tensor(in.type, m->token_range, rng));
    batch.push_back(m->target_is_input ? batch[0] : random_tensor(m->target, m->token_range, rng));
  } else {
    StatusOr<std::vector<Tensor>> loaded =
        load_init(*trainer, *m, cli::resolve_path(args.get("init")));
    if (!loaded.ok()) return fail(loaded.error());
    batch = std::move(*loaded);
  }

  double first_loss = 0, last_loss = 0;
  std::vector<double> epoch_ms;
  const bool profile = args.has("profile");
  for (int epoch = 0; epoch < warmup + epochs; ++epoch) {
    if (profile && epoch == warmup && trainer->step_executor()) {
      trainer->step_executor()->set_profiling(true);
    }
    auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps_per_epoch; ++s) {
      StatusOr<double> loss = trainer->step(batch);
      if (!loss.ok()) return fail(loss.error());
      if (trainer->steps() == 1) first_loss = *loss;
      last_loss = *loss;
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (epoch >= warmup) epoch_ms.push_back(ms);
    std::fprintf(stderr, "%s epoch %d/%d%s: %.1f ms, loss %.6f\n", m->name.c_str(), epoch + 1,
                 warmup + epochs, epoch < warmup ? " (warm-up)" : "", ms, last_loss);
  }
  if (profile && trainer->step_executor()) {
    std::fprintf(stderr, "%s", trainer->step_executor()->profile_report().c_str());
  }
  const int64_t peak = proc_status_bytes("VmHWM");
  StepStats st = step_stats(*trainer);
  json gemms = json::array();
  for (const auto& g : st.gemm_shapes) gemms.push_back({g[0], g[1], g[2], g[3]});
  json out = {{"model", m->name},
              {"framework", "weft"},
              {"config", trainer->step_executor()
                             ? "compiled cpu, " +
                                   std::to_string(trainer->step_executor()->pool().num_threads()) +
                                   " threads"
                             : std::string("reference interpreter, 1 thread")},
              {"preset", to_string(*preset)},
              {"init", random_init ? "random" : "file"},
              {"steps_per_epoch", steps_per_epoch},
              {"warmup", warmup},
              {"epoch_ms", epoch_ms},
              {"median_ms", median(epoch_ms)},
              {"first_loss", first_loss},
              {"last_loss", last_loss},
              {"param_count", trainer->model().parameter_count()},
              {"peak_rss_increase_bytes",
               peak >= 0 && rss_before >= 0 ? json(peak - rss_before) : json(nullptr)},
              {"planned_bytes", st.planned_bytes},
              {"arena_bytes", trainer->step_executor()
                                  ? json(trainer->step_executor()->program().arena_bytes)
                                  : json(nullptr)},
              {"arena_lower_bound_bytes",
               trainer->step_executor()
                   ? json(trainer->step_executor()->program().lower_bound_bytes)
                   : json(nullptr)},
              {"matmul_flops", st.matmul_flops},
              {"gemm_shapes", gemms},
              {"state_bytes", st.state_bytes}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  using weft::cli::FlagSpec;
  std::vector<std::string> argv_list(argv + 1, argv + argc);
  auto args = weft::cli::parse_args(
      "weft_worker", argv_list,
      {FlagSpec("model"), FlagSpec("preset"), FlagSpec("names-out"), FlagSpec("init"),
       FlagSpec("epochs"), FlagSpec("warmup"), FlagSpec("seed"), FlagSpec("steps"),
       FlagSpec("random-init", "", /*takes_value_in=*/false),
       FlagSpec("print-params", "", /*takes_value_in=*/false),
       FlagSpec("allow-paper", "", /*takes_value_in=*/false),
       FlagSpec("profile", "", /*takes_value_in=*/false)});
  if (!args.ok()) return weft::bench::fail(args.error());
  return weft::bench::run(*args);
}
