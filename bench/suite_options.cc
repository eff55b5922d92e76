#include "bench/suite_options.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <sstream>

#include <sys/stat.h>

#include "training/flag_values.h"

namespace weft::bench {

const std::vector<std::string>& suite_models() {
  static const std::vector<std::string> models = {
      "transformer",      "mlp",     "residual_tower", "feedback_fixed", "gated_routing",
      "iterative_refine", "gru_seq", "conv_autoenc",   "lstm_seq",       "convnet"};
  return models;
}

const std::vector<std::string>& suite_aot_bf16_models(const std::string& device) {
  // On the CPU the GEMM-bound models only (CI's build time); the CUDA libraries all ten.
  static const std::vector<std::string> cpu = {"transformer", "mlp", "residual_tower"};
  return device == "cuda" ? suite_models() : cpu;
}

const std::vector<std::string>& suite_attention_models() {
  static const std::vector<std::string> models = {"transformer"};
  return models;
}

const char* const kSuiteUsage =
    "bazel run //bench:suite -- --preset=cpu|paper [--device=cpu|cuda] [--weft=jit|aot] [--models=a,b] "
    "[--epochs=N] [--warmup=N] [--rounds=N] [--json=PATH] [--pytorch-only] "
    "[--allow-paper] [--keep-tmp] [--python=PATH] [--precision=f32|bf16] "
    "[--fuse-attention=off|on|both]";

const char* const kSuiteHelp =
    "The benchmark suite: the ten models on weft and on PyTorch, one table (bench/PROTOCOL.md).\n"
    "Each model: weft's parameter names, PyTorch's initial weights under them, then timed\n"
    "rounds of weft and of PyTorch in each configuration, every run its own process; first\n"
    "losses compared; weft against PyTorch's fastest configuration.\n"
    "\n"
    "  --preset=P       cpu (small batches and widths) or paper (full sizes); required\n"
    "  --device=D       cpu (default), or cuda: one NVIDIA GPU, weft from the AOT CUDA\n"
    "                   libraries of bench/aot (paper preset, f32 or bf16), PyTorch eager,\n"
    "                   fused Adam, torch.compile and the whole step as one CUDA graph\n"
    "  --weft=W         jit (default: bench/weft_worker, the Trainer) or aot\n"
    "                   (bench/weft_aot_worker, the libraries of bench/aot; cpu preset)\n"
    "  --models=a,b     the models to run (default: all ten)\n"
    "  --epochs=N       measured epochs per run (default 5 at cpu, 20 at paper)\n"
    "  --warmup=N       warm-up epochs per run (default 1 at cpu, 3 at paper)\n"
    "  --rounds=N       rounds of every configuration (default 2); odd rounds reversed\n"
    "  --precision=P    f32 (default) or bf16 (weft's TrainOptions::precision, PyTorch's\n"
    "                   torch.autocast); with --weft=aot on the CPU the GEMM-bound\n"
    "                   models only; with --device=cuda all ten\n"
    "  --fuse-attention=F\n"
    "                   weft's side with fused attention (TrainOptions::fuse_attention;\n"
    "                   the AOT libraries transformer_fa, transformer_cuda_fa): off\n"
    "                   (default); on: the models with attention (the transformer) fused;\n"
    "                   both: those models' weft side unfused and fused, interleaved, one\n"
    "                   row each against the same PyTorch runs, the other models once;\n"
    "                   f32 only with --weft=aot or --device=cuda\n"
    "  --json=PATH      also write the results as JSON\n"
    "  --pytorch-only   skip weft's timed runs\n"
    "  --allow-paper    let weft's CPU worker time the paper preset (it declines it)\n"
    "  --keep-tmp       keep the intermediate files and logs (kept anyway on failure)\n"
    "  --python=PATH    the Python with torch (default /usr/bin/python3)\n"
    "  -h, --help       this text\n"
    "\n"
    "PyTorch runs without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE; weft keeps the\n"
    "environment as it is.\n";

namespace {

/// The tuned environment's malloc settings (../shared/ENVIRONMENT.md).
constexpr const char* kTunedMalloc =
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296";

bool contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

/// `names` as "a, b, c", for messages.
std::string comma_list(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

/// --device=cuda's constraints: the AOT CUDA libraries, built at the paper preset, in f32
/// and bf16.
Status check_cuda_options(SuiteOptions& o, bool weft_set) {
  if (weft_set && o.weft != "aot") {
    return Error{"--device=cuda runs weft from the AOT CUDA libraries of bench/aot "
                 "(bench/weft_aot_cuda_worker); --weft=" + o.weft + " is the CPU suite's"};
  }
  o.weft = "aot";
  if (o.preset != "paper") {
    return Error{"--device=cuda: bench/aot builds its CUDA libraries at the paper preset; "
                 "use --preset=paper"};
  }
  if (o.precision == "f16") {
    return Error{"--device=cuda --precision=f16: planned (bench/aot builds its CUDA libraries "
                 "in f32 and bf16, and PyTorch's side has no loss scaling); use --precision=bf16"};
  }
  return {};
}

/// --fuse-attention=on|both: models with attention (on: every one; both: at least one),
/// f32 where bench/aot's libraries run (it builds them in f32 only).
Status check_fuse_attention(SuiteOptions& o, bool models_set) {
  const std::vector<std::string>& with = suite_attention_models();
  const std::string list = comma_list(with);
  if (o.precision != "f32" && o.weft == "aot") {
    return Error{"--fuse-attention=" + o.fuse_attention + " with --precision=" + o.precision +
                 ": bench/aot builds its fused-attention libraries (of " + list +
                 ") in f32 only; drop one of the two"};
  }
  if (o.fuse_attention == "on" && !models_set) o.models = with;
  bool any = false;
  for (const std::string& m : o.models) {
    if (contains(with, m)) {
      any = true;
    } else if (o.fuse_attention == "on") {
      return Error{"--fuse-attention=on: " + m + " has no attention (softmax(q·kᵀ·scale + mask)·v) to "
                   "fuse; the models with attention: " + list + ". Drop " + m +
                   " from --models, or use --fuse-attention=both (those both ways, the others once)"};
    }
  }
  if (!any) {
    return Error{"--fuse-attention=both: none of --models has attention to fuse; the models with "
                 "attention: " + list};
  }
  return {};
}

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

/// Which flags the command line gave, for the defaults and checks that depend on it.
struct Given {
  bool epochs = false, warmup = false, models = false, weft = false;
};

/// `value` if it is one of `allowed`, else the error naming them as `hint` says.
Status check_choice(const std::string& flag, const std::string& value,
                    std::initializer_list<const char*> allowed, const std::string& hint) {
  for (const char* a : allowed) {
    if (value == a) return {};
  }
  return Error{"bad value for " + flag + ": '" + value + "' (" + hint + ")"};
}

/// --models=A,B: each a suite model, at least one.
Status parse_models(const std::string& value, SuiteOptions& o) {
  o.models.clear();
  std::stringstream ss(value);
  for (std::string m; std::getline(ss, m, ',');) {
    if (m.empty()) continue;
    if (!contains(suite_models(), m)) {
      return Error{"unknown model '" + m + "' in --models; the models are " + comma_list(suite_models())};
    }
    o.models.push_back(m);
  }
  if (o.models.empty()) return Error{"--models names no model"};
  return {};
}

/// One command-line argument into `o` (--help sets o.help).
Status apply_flag(const std::string& a, SuiteOptions& o, Given& given) {
  std::string name = a, value;
  bool has_value = false;
  if (size_t eq = a.find('='); eq != std::string::npos) {
    name = a.substr(0, eq);
    value = a.substr(eq + 1);
    has_value = true;
  }
  const bool takes_value = name == "--preset" || name == "--device" || name == "--models" || name == "--epochs" ||
                           name == "--warmup" || name == "--rounds" || name == "--json" ||
                           name == "--python" || name == "--weft" || name == "--precision" ||
                           name == "--fuse-attention";
  if (takes_value && !has_value) {
    return Error{"flag " + name + " needs a value (" + name + "=...)"};
  }
  if ((name == "--help" || name == "-h") && !has_value) {
    o.help = true;
  } else if (name == "--preset") {
    WEFT_RETURN_IF_ERROR(check_choice(name, value, {"cpu", "paper"}, "cpu or paper"));
    o.preset = value;
  } else if (name == "--weft") {
    WEFT_RETURN_IF_ERROR(check_choice(name, value, {"jit", "aot"},
                                      "jit: bench/weft_worker, the Trainer's JIT; aot: "
                                      "bench/weft_aot_worker, the libraries of bench/aot"));
    o.weft = value;
    given.weft = true;
  } else if (name == "--device") {
    WEFT_RETURN_IF_ERROR(check_choice(name, value, {"cpu", "cuda"}, "cpu or cuda"));
    o.device = value;
  } else if (name == "--precision") {
    WEFT_RETURN_IF_ERROR(check_choice(name, value, {"f32", "bf16", "f16"}, "f32 or bf16"));
    o.precision = value;
  } else if (name == "--fuse-attention") {
    WEFT_RETURN_IF_ERROR(check_choice(name, value, {"off", "on", "both"}, "off, on or both"));
    o.fuse_attention = value;
  } else if (name == "--models") {
    WEFT_RETURN_IF_ERROR(parse_models(value, o));
    given.models = true;
  } else if (name == "--epochs") {
    WEFT_ASSIGN_OR_RETURN(o.epochs, parse_count("epochs", value, 1));
    given.epochs = true;
  } else if (name == "--warmup") {
    WEFT_ASSIGN_OR_RETURN(o.warmup, parse_count("warmup", value, 0));
    given.warmup = true;
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
  return {};
}

/// --precision=bf16 with --weft=aot: the models bench/aot builds bf16 libraries of (all
/// of them by default).
Status check_aot_precision(SuiteOptions& o, bool models_given) {
  // bench/aot builds bf16 CPU libraries of the GEMM-bound models only (build time).
  const std::vector<std::string>& built = suite_aot_bf16_models(o.device);
  if (!models_given) o.models = built;
  for (const std::string& m : o.models) {
    if (contains(built, m)) continue;
    return Error{"--precision=" + o.precision + " with --weft=aot: bench/aot builds " + o.precision +
                 " libraries of " + comma_list(built) + " only (the GEMM-bound models), not of " + m +
                 "; drop it from --models or use --weft=jit"};
  }
  return {};
}

/// What the flags ask together: a preset, a writable --json, the device's and the AOT
/// libraries' constraints, fuse-attention's models.
Status check_combinations(SuiteOptions& o, const Given& given) {
  if (o.preset.empty()) return Error{"--preset=cpu or --preset=paper is required"};
  // Checked now, not after the whole run (which then failed at the end: "cannot write").
  if (!o.json_path.empty()) {
    if (std::optional<std::string> why = unwritable_file(o.json_path)) return Error{"--json=" + o.json_path + ": " + *why};
  }
  if (o.device == "cuda") {
    WEFT_RETURN_IF_ERROR(check_cuda_options(o, given.weft));
  } else if (o.precision == "f16") {
    return Error{"--precision=f16: the suite's peer, PyTorch 1.13, autocasts to bfloat16 "
                 "only on the CPU; use --precision=bf16"};
  }
  if (o.precision != "f32" && o.weft == "aot") WEFT_RETURN_IF_ERROR(check_aot_precision(o, given.models));
  if (o.fuse_attention != "off") WEFT_RETURN_IF_ERROR(check_fuse_attention(o, given.models));
  return {};
}

}  // namespace

StatusOr<SuiteOptions> parse_suite_options(const std::vector<std::string>& args) {
  SuiteOptions o;
  Given given;
  for (const std::string& a : args) {
    WEFT_RETURN_IF_ERROR(apply_flag(a, o, given));
    if (o.help) return o;
  }
  WEFT_RETURN_IF_ERROR(check_combinations(o, given));
  // bench/PROTOCOL.md: 3 warm-up and 20 measured epochs; the cpu preset 1 and 5.
  if (!given.epochs) o.epochs = o.preset == "cpu" ? 5 : 20;
  if (!given.warmup) o.warmup = o.preset == "cpu" ? 1 : 3;
  return o;
}

const std::vector<std::string>& suite_compile_models() {
  static const std::vector<std::string> models = {"transformer", "mlp"};
  return models;
}

std::vector<PytorchConfig> pytorch_configs(const SuiteOptions& o, const std::string& model) {
  std::vector<PytorchConfig> configs;
  if (o.device == "cuda") {
    for (const char* c : {"eager", "fused", "compile", "cuda_graph"}) {
      if (std::string(c) == "compile" && !contains(suite_compile_models(), model)) continue;
      configs.push_back({c, 0, false, {"--device=cuda", std::string("--config=") + c}, {}});
    }
    return configs;
  }
  for (int threads : {1, 2}) {
    for (bool tuned : {false, true}) {
      PytorchConfig c;
      c.label = std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
                (tuned ? " tuned" : "");
      c.threads = threads;
      c.tuned = tuned;
      c.args = {"--threads=" + std::to_string(threads)};
      if (tuned) c.env = {{"OMP_WAIT_POLICY", "PASSIVE"}, {"GLIBC_TUNABLES", kTunedMalloc}};
      configs.push_back(c);
    }
  }
  return configs;
}

std::string names_worker(const SuiteOptions& o) {
  return o.device == "cuda" ? timed_worker(o) : "bench/weft_worker";
}

std::string timed_worker(const SuiteOptions& o) {
  if (o.device == "cuda") return "bench/weft_aot_cuda_worker";
  return o.weft == "aot" ? "bench/weft_aot_worker" : "bench/weft_worker";
}

std::vector<bool> weft_fuse_attention_runs(const SuiteOptions& o, const std::string& model) {
  if (o.fuse_attention == "off" || !contains(suite_attention_models(), model)) return {false};
  if (o.fuse_attention == "on") return {true};
  return {false, true};
}

std::vector<std::string> weft_timed_args(const SuiteOptions& o, const std::string& worker,
                                         const std::string& model, const std::string& init,
                                         bool fuse_attention) {
  std::vector<std::string> args = {worker,
                                   "--model=" + model,
                                   "--preset=" + o.preset,
                                   "--init=" + init,
                                   "--epochs=" + std::to_string(o.epochs),
                                   "--warmup=" + std::to_string(o.warmup)};
  if (o.precision != "f32") args.push_back("--precision=" + o.precision);
  if (fuse_attention) args.push_back("--fuse-attention");
  if (o.allow_paper && o.weft == "jit") args.push_back("--allow-paper");
  return args;
}

std::vector<std::string> pytorch_timed_args(const SuiteOptions& o, const std::string& run_py,
                                            const std::string& model, const std::string& init,
                                            const PytorchConfig& config) {
  std::vector<std::string> args = {o.python,
                                   run_py,
                                   "--model=" + model,
                                   "--preset=" + o.preset,
                                   "--init=" + init,
                                   "--epochs=" + std::to_string(o.epochs),
                                   "--warmup=" + std::to_string(o.warmup)};
  args.insert(args.end(), config.args.begin(), config.args.end());
  if (o.precision != "f32") args.push_back("--precision=" + o.precision);
  return args;
}

std::optional<std::string> cuda_device_missing(const std::string& dev) {
  struct stat st;
  if (stat((dev + "/nvidiactl").c_str(), &st) == 0 && stat((dev + "/nvidia0").c_str(), &st) == 0) {
    return std::nullopt;
  }
  return "--device=cuda: no CUDA device on this machine (no " + dev + "/nvidia0 or " + dev +
         "/nvidiactl): the suite on a GPU needs an NVIDIA GPU with its driver, and PyTorch "
         "with CUDA for its peer (tests/cuda/suite_check.sh runs it on a GPU machine)";
}

}  // namespace weft::bench
