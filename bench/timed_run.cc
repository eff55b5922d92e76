#include "bench/timed_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/safetensors.h"

namespace weft::bench {

using nlohmann::json;

int64_t proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

StatusOr<std::vector<Tensor>> load_init(
    const std::string& path, const InitLayout& layout,
    const std::function<Status(const std::string& name, const Tensor& value)>& set_value) {
  WEFT_ASSIGN_OR_RETURN(SafetensorsFile file, read_safetensors(path));
  std::set<std::string> expected;
  std::string problems;
  // The file's tensor for `want`, or null after noting why it is missing or wrong.
  auto find = [&](const NamedType& want, bool optional) -> const Tensor* {
    expected.insert(want.name);
    const Tensor* t = file.find(want.name);
    if (!t) {
      if (!optional) problems += "\n  missing " + want.name + " " + want.type.to_string();
      return nullptr;
    }
    if (t->type() != want.type) {
      problems += "\n  " + want.name + " is " + t->type().to_string() + ", weft needs " +
                  want.type.to_string();
      return nullptr;
    }
    return t;
  };
  for (const NamedType& v : layout.values) {
    if (const Tensor* t = find(v, false)) WEFT_RETURN_IF_ERROR(set_value(v.name, *t));
  }
  std::vector<Tensor> batch;
  for (const NamedType& in : layout.inputs) {
    if (const Tensor* t = find(in, false)) batch.push_back(*t);
  }
  if (const Tensor* t = find(layout.target, layout.target_is_input)) {
    batch.push_back(*t);
  } else if (layout.target_is_input && batch.size() == layout.inputs.size() && !batch.empty()) {
    batch.push_back(batch[0]);
  }
  for (const auto& [name, t] : file.tensors) {
    if (!expected.count(name)) {
      problems += "\n  " + name + " is not a weft parameter of " + layout.model;
    }
  }
  if (!problems.empty()) {
    return Error{path + " does not match weft's " + layout.model + ":" + problems};
  }
  return batch;
}

nlohmann::json type_json(const std::string& name, const Type& t, int64_t high) {
  nlohmann::json j = {{"name", name},
                      {"shape", t.shape.dims},
                      {"dtype", std::string(safetensors_dtype_name(t.dtype))}};
  if (t.dtype == DType::i64) j["high"] = high;
  return j;
}

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

std::vector<Tensor> random_batch(const InitLayout& layout, int64_t token_range, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> batch;
  for (const NamedType& in : layout.inputs) batch.push_back(random_tensor(in.type, token_range, rng));
  batch.push_back(layout.target_is_input ? batch[0]
                                         : random_tensor(layout.target.type, token_range, rng));
  return batch;
}

namespace {

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

StatusOr<int64_t> parse_int(const std::string& flag, const std::string& value, int64_t min,
                            int64_t max) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (value.empty() || used != value.size() || v < min || v > max) {
    return Error{"bad value for --" + flag + ": '" + value + "' (an integer in [" +
                 std::to_string(min) + ", " + std::to_string(max) + "])"};
  }
  return v;
}

std::vector<cli::FlagSpec> worker_flag_specs() {
  using cli::FlagSpec;
  return {FlagSpec("model"), FlagSpec("preset"), FlagSpec("names-out"), FlagSpec("init"),
          FlagSpec("epochs"), FlagSpec("warmup"), FlagSpec("seed"), FlagSpec("steps"),
          FlagSpec("random-init", "", /*takes_value_in=*/false),
          FlagSpec("profile", "", /*takes_value_in=*/false),
          FlagSpec("fuse-attention", "", /*takes_value_in=*/false)};
}

StatusOr<TimedRunFlags> parse_timed_run_flags(const cli::Args& args, const std::string& preset) {
  TimedRunFlags f;
  f.preset = preset;
  if (args.has("random-init") == args.has("init")) {
    return Error{
        "give exactly one of --names-out=PATH, --init=PATH, --random-init or --print-params"};
  }
  if (args.has("init")) f.init_path = cli::resolve_path(args.get("init"));
  const bool cpu = preset == "cpu";
  WEFT_ASSIGN_OR_RETURN(int64_t epochs,
                        parse_int("epochs", args.get("epochs", cpu ? "5" : "20"), 1, 100000));
  WEFT_ASSIGN_OR_RETURN(int64_t warmup,
                        parse_int("warmup", args.get("warmup", cpu ? "1" : "3"), 0, 100000));
  // The protocol's epoch is 50 steps; fewer only for quick checks.
  WEFT_ASSIGN_OR_RETURN(int64_t steps, parse_int("steps", args.get("steps", "50"), 1, 100000));
  WEFT_ASSIGN_OR_RETURN(int64_t seed,
                        parse_int("seed", args.get("seed", "0"), 0, INT64_MAX));
  f.epochs = int(epochs);
  f.warmup = int(warmup);
  f.steps_per_epoch = int(steps);
  f.seed = uint64_t(seed);
  return f;
}

StatusOr<EpochTimes> run_epochs(const std::string& model, const TimedRunFlags& flags,
                                const std::function<StatusOr<double>()>& step,
                                const std::function<void()>& before_measured) {
  EpochTimes t;
  int64_t steps = 0;
  for (int epoch = 0; epoch < flags.warmup + flags.epochs; ++epoch) {
    if (epoch == flags.warmup && before_measured) before_measured();
    auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < flags.steps_per_epoch; ++s) {
      WEFT_ASSIGN_OR_RETURN(double loss, step());
      if (++steps == 1) t.first_loss = loss;
      t.last_loss = loss;
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (epoch >= flags.warmup) t.epoch_ms.push_back(ms);
    std::fprintf(stderr, "%s epoch %d/%d%s: %.1f ms, loss %.6f\n", model.c_str(), epoch + 1,
                 flags.warmup + flags.epochs, epoch < flags.warmup ? " (warm-up)" : "", ms,
                 t.last_loss);
  }
  return t;
}

json result_json(const std::string& model, const std::string& config, const TimedRunFlags& flags,
                 const EpochTimes& times, int64_t param_count, int64_t rss_before) {
  const int64_t peak = proc_status_bytes("VmHWM");
  return {{"model", model},
          {"framework", "weft"},
          {"config", config},
          {"preset", flags.preset},
          {"init", flags.init_path.empty() ? "random" : "file"},
          {"steps_per_epoch", flags.steps_per_epoch},
          {"warmup", flags.warmup},
          {"epoch_ms", times.epoch_ms},
          {"median_ms", median(times.epoch_ms)},
          {"first_loss", times.first_loss},
          {"last_loss", times.last_loss},
          {"param_count", param_count},
          {"peak_rss_increase_bytes",
           peak >= 0 && rss_before >= 0 ? json(peak - rss_before) : json(nullptr)}};
}

std::string run_config(const std::string& backend, int threads) {
  if (backend == "reference") return "reference interpreter, 1 thread";
  return "compiled " + backend + (threads > 0 ? ", " + std::to_string(threads) + " threads" : "");
}

}  // namespace weft::bench
