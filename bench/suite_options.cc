#include "bench/suite_options.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace weft::bench {

const std::vector<std::string>& suite_models() {
  static const std::vector<std::string> models = {
      "transformer",      "mlp",     "residual_tower", "feedback_fixed", "gated_routing",
      "iterative_refine", "gru_seq", "conv_autoenc",   "lstm_seq",       "convnet"};
  return models;
}

const std::vector<std::string>& suite_aot_bf16_models() {
  static const std::vector<std::string> models = {"transformer", "mlp", "residual_tower"};
  return models;
}

const char* const kSuiteUsage =
    "bazel run //bench:suite -- --preset=cpu|paper [--weft=jit|aot] [--models=a,b] "
    "[--epochs=N] [--warmup=N] [--rounds=N] [--json=PATH] [--pytorch-only] "
    "[--allow-paper] [--keep-tmp] [--python=PATH] [--precision=f32|bf16]";

namespace {

StatusOr<int> parse_count(const std::string& flag, const std::string& value, int min) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < min || v > 100000) {
    return Error{"bad value for --" + flag + ": '" + value + "' (an integer ≥ " +
                 std::to_string(min) + ")"};
  }
  return int(v);
}

/// Relative paths are the user's: against the folder `bazel run` was started from.
std::string user_path(const std::string& path) {
  const char* wd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || !wd) return path;
  return std::string(wd) + "/" + path;
}

}  // namespace

StatusOr<SuiteOptions> parse_suite_options(const std::vector<std::string>& args) {
  SuiteOptions o;
  bool epochs_set = false, warmup_set = false, models_set = false;
  for (const std::string& a : args) {
    std::string name = a, value;
    bool has_value = false;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    const bool takes_value = name == "--preset" || name == "--models" || name == "--epochs" ||
                             name == "--warmup" || name == "--rounds" || name == "--json" ||
                             name == "--python" || name == "--weft" || name == "--precision";
    if (takes_value && !has_value) {
      return Error{"flag " + name + " needs a value (" + name + "=...)"};
    }
    if (name == "--help" || name == "-h") {
      return Error{"runs the benchmark models on weft and PyTorch (bench/PROTOCOL.md)"};
    } else if (name == "--preset") {
      if (value != "cpu" && value != "paper") {
        return Error{"bad value for --preset: '" + value + "' (cpu or paper)"};
      }
      o.preset = value;
    } else if (name == "--weft") {
      if (value != "jit" && value != "aot") {
        return Error{"bad value for --weft: '" + value + "' (jit: bench/weft_worker, the "
                     "Trainer's JIT; aot: bench/weft_aot_worker, the libraries of bench/aot)"};
      }
      o.weft = value;
    } else if (name == "--precision") {
      if (value == "f16") {
        return Error{"--precision=f16: the suite's peer, PyTorch 1.13, autocasts to bfloat16 "
                     "only on the CPU; use --precision=bf16"};
      }
      if (value != "f32" && value != "bf16") {
        return Error{"bad value for --precision: '" + value + "' (f32 or bf16)"};
      }
      o.precision = value;
    } else if (name == "--models") {
      o.models.clear();
      std::stringstream ss(value);
      for (std::string m; std::getline(ss, m, ',');) {
        if (m.empty()) continue;
        const std::vector<std::string>& known = suite_models();
        if (std::find(known.begin(), known.end(), m) == known.end()) {
          std::string list;
          for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
          return Error{"unknown model '" + m + "' in --models; the models are " + list};
        }
        o.models.push_back(m);
      }
      if (o.models.empty()) return Error{"--models names no model"};
      models_set = true;
    } else if (name == "--epochs") {
      WEFT_ASSIGN_OR_RETURN(o.epochs, parse_count("epochs", value, 1));
      epochs_set = true;
    } else if (name == "--warmup") {
      WEFT_ASSIGN_OR_RETURN(o.warmup, parse_count("warmup", value, 0));
      warmup_set = true;
    } else if (name == "--rounds") {
      WEFT_ASSIGN_OR_RETURN(o.rounds, parse_count("rounds", value, 1));
    } else if (name == "--json") {
      o.json_path = user_path(value);
    } else if (name == "--python") {
      o.python = value;
    } else if (name == "--pytorch-only" && !has_value) {
      o.pytorch_only = true;
    } else if (name == "--allow-paper" && !has_value) {
      o.allow_paper = true;
    } else if (name == "--keep-tmp" && !has_value) {
      o.keep_tmp = true;
    } else {
      return Error{"unknown flag '" + a + "'"};
    }
  }
  if (o.preset.empty()) return Error{"--preset=cpu or --preset=paper is required"};
  if (o.precision != "f32" && o.weft == "aot") {
    // bench/aot builds bf16 libraries of the GEMM-bound models only (build time).
    const std::vector<std::string>& built = suite_aot_bf16_models();
    if (!models_set) o.models = built;
    for (const std::string& m : o.models) {
      if (std::find(built.begin(), built.end(), m) != built.end()) continue;
      std::string list;
      for (const std::string& b : built) list += (list.empty() ? "" : ", ") + b;
      return Error{"--precision=" + o.precision + " with --weft=aot: bench/aot builds " + o.precision +
                   " libraries of " + list + " only (the GEMM-bound models), not of " + m +
                   "; drop it from --models or use --weft=jit"};
    }
  }
  // bench/PROTOCOL.md: 3 warm-up and 20 measured epochs; the cpu preset 1 and 5.
  if (!epochs_set) o.epochs = o.preset == "cpu" ? 5 : 20;
  if (!warmup_set) o.warmup = o.preset == "cpu" ? 1 : 3;
  return o;
}

}  // namespace weft::bench
