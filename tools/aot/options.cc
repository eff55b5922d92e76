#include "tools/aot/options.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "codegen/targets.h"
#include "training/flag_values.h"
#include "training/learning_rate.h"

namespace weft::aot {
namespace {

const std::vector<std::string> kLossHyper = {
    "label_smoothing", "beta", "delta", "class_weight", "log_input", "full", "poisson_eps",
    "focal_alpha",     "focal_gamma", "margin"};
const std::vector<std::string> kOptimizerHyper = {
    "lr",  "momentum", "dampening", "nesterov", "weight_decay", "beta1", "beta2", "eps",
    "amsgrad", "alpha", "centered", "lr_decay", "initial_accumulator_value", "momentum_decay",
    "max_grad_norm", "accumulate_steps", "param_groups", "scheduled_momentum"};
/// The flags, for errors; the backends are the compiled targets (codegen/targets.h).
std::string usage() {
  std::string backends;
  for (const codegen::Target& t : codegen::targets()) {
    if (t.compiled()) backends += (backends.empty() ? "" : "|") + t.name;
  }
  return "flags: --batch=N --dtype=f32 --loss=NAME --optimizer=NAME [--eval_batch=N] [--backend=" + backends +
         "] "
    "[--cpu=CPU] [--inference_only] [--data_parallel] [--precision=f32|bf16|f16] [--fuse_attention] and the hyper-parameters --label_smoothing --beta --delta "
    "--class_weight --log_input --full --poisson_eps --focal_alpha --focal_gamma --margin --lr "
    "--momentum "
    "--dampening --nesterov --weight_decay --beta1 --beta2 --eps --amsgrad --alpha --centered "
    "--lr_decay --initial_accumulator_value --momentum_decay --max_grad_norm --accumulate_steps --param_groups "
    "--scheduled_momentum";
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

StatusOr<double> to_double(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    return Error{"--" + flag + "=" + text + ": not a number"};
  }
  return v;
}

StatusOr<int64_t> to_int(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Error{"--" + flag + "=" + text + ": not an integer"};
  }
  return v;
}

StatusOr<bool> to_bool(const std::string& flag, const std::string& text) {
  if (text == "1" || text == "true" || text == "True") return true;
  if (text == "0" || text == "false" || text == "False") return false;
  return Error{"--" + flag + "=" + text + ": not a boolean (true or false)"};
}

/// --param_groups=PATH[:lr=X][:weight_decay=Y],PATH2...: parameter groups by label path
/// (OptimizerSpec::with_group).
Status add_param_groups(const std::string& text, OptimizerSpec& spec) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string group = text.substr(start, comma - start);
    const size_t colon = std::min(group.find(':'), group.size());
    const auto in_group = [&](const std::string& problem) {
      return Error{"--param_groups=" + text + ": group '" + group.substr(0, colon) + "': " + problem};
    };
    OptimizerSpec::GroupOptions options;
    for (size_t at = colon; at < group.size();) {
      const size_t next = std::min(group.find(':', at + 1), group.size());
      const std::string option = group.substr(at + 1, next - at - 1);
      const size_t eq = option.find('=');
      const std::string key = option.substr(0, eq), value = eq == std::string::npos ? "" : option.substr(eq + 1);
      if (key != "lr" && key != "weight_decay") {
        return Error{"--param_groups=" + text + ": group '" + group.substr(0, colon) + "' has '" + option +
                     "'; a group takes lr=X and weight_decay=Y (PATH:lr=X:weight_decay=Y, groups "
                     "separated by commas)"};
      }
      StatusOr<double> v = to_double(key, value);
      if (!v.ok()) return in_group(v.error().message);
      if (key == "lr") {
        const Status rate = check_learning_rate(*v, "lr=" + value);
        if (!rate.ok()) return in_group(rate.error().message);
      }
      (key == "lr" ? options.lr : options.weight_decay) = *v;
      at = next;
    }
    spec.with_group(group.substr(0, colon), options);
    start = comma + 1;
  }
  return Status();
}

}  // namespace

namespace {

/// "--flag=0.5,2,1" -> {0.5, 2, 1}.
StatusOr<std::vector<double>> to_doubles(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  for (size_t b = 0, e; b <= text.size(); b = e + 1) {
    e = std::min(text.find(',', b), text.size());
    StatusOr<double> v = to_double(flag, text.substr(b, e - b));
    if (!v.ok()) {
      return Error{"--" + flag + "=" + text + ": not a comma-separated list of numbers"};
    }
    out.push_back(*v);
  }
  return out;
}

}  // namespace

StatusOr<LossSpec> CompileOptions::loss_spec() const {
  double smoothing = 0, beta = 1, delta = 1, poisson_eps = 1e-8, alpha = 0.25, gamma = 2,
         margin = 1;
  bool log_input = true, full = false;
  std::vector<double> weight;
  for (const auto& [flag, text] : hyper) {
    if (!contains(kLossHyper, flag)) continue;
    if (flag == "class_weight") {
      WEFT_ASSIGN_OR_RETURN(weight, to_doubles(flag, text));
    } else if (flag == "log_input" || flag == "full") {
      WEFT_ASSIGN_OR_RETURN(bool b, to_bool(flag, text));
      (flag == "log_input" ? log_input : full) = b;
    } else {
      WEFT_ASSIGN_OR_RETURN(double v, to_double(flag, text));
      (flag == "label_smoothing" ? smoothing
       : flag == "beta"          ? beta
       : flag == "delta"         ? delta
       : flag == "focal_alpha"   ? alpha
       : flag == "focal_gamma"   ? gamma
       : flag == "margin"        ? margin
                                 : poisson_eps) = v;
    }
  }
  if (loss == "cross_entropy") return LossSpec::cross_entropy(smoothing, weight);
  if (loss == "nll") return LossSpec::nll(weight);
  if (!weight.empty()) {
    return Error{"--class_weight applies to cross_entropy and nll, not to --loss=" + loss};
  }
  if (loss == "mse") return LossSpec::mse();
  if (loss == "l1") return LossSpec::l1();
  if (loss == "smooth_l1") return LossSpec::smooth_l1(beta);
  if (loss == "huber") return LossSpec::huber(delta);
  if (loss == "poisson_nll") return LossSpec::poisson_nll(log_input, full, poisson_eps);
  if (loss == "bce") return LossSpec::bce();
  if (loss == "bce_with_logits") return LossSpec::bce_with_logits();
  if (loss == "kl_div") return LossSpec::kl_div();
  if (loss == "sigmoid_focal") return LossSpec::sigmoid_focal(alpha, gamma);
  if (loss == "hinge_embedding") return LossSpec::hinge_embedding(margin);
  return Error{"unknown loss '" + loss +
               "'; losses: cross_entropy nll mse l1 smooth_l1 huber poisson_nll bce "
               "bce_with_logits kl_div sigmoid_focal hinge_embedding"};
}

StatusOr<OptimizerSpec> CompileOptions::optimizer_spec() const {
  OptimizerSpec s;
  if (optimizer == "sgd") {
    if (!hyper.count("lr")) return Error{"optimizer sgd needs --lr (PyTorch's SGD has no default)"};
    s = OptimizerSpec::sgd(/*lr=*/0);
  } else if (optimizer == "adam") {
    s = OptimizerSpec::adam();
  } else if (optimizer == "adamw") {
    s = OptimizerSpec::adamw();
  } else if (optimizer == "rmsprop") {
    s = OptimizerSpec::rmsprop();
  } else if (optimizer == "adagrad") {
    s = OptimizerSpec::adagrad();
  } else if (optimizer == "radam") {
    s = OptimizerSpec::radam();
  } else if (optimizer == "nadam") {
    s = OptimizerSpec::nadam();
  } else {
    return Error{"unknown optimizer '" + optimizer +
                 "'; optimizers: sgd adam adamw rmsprop adagrad radam nadam"};
  }
  for (const auto& [flag, text] : hyper) {
    if (contains(kLossHyper, flag)) continue;
    if (flag == "nesterov" || flag == "amsgrad" || flag == "centered" || flag == "scheduled_momentum") {
      WEFT_ASSIGN_OR_RETURN(bool b, to_bool(flag, text));
      (flag == "nesterov"  ? s.nesterov
       : flag == "amsgrad" ? s.amsgrad
       : flag == "centered" ? s.centered
                            : s.scheduled_momentum) = b;
      continue;
    }
    if (flag == "param_groups") {
      WEFT_RETURN_IF_ERROR(add_param_groups(text, s));
      continue;
    }
    if (flag == "accumulate_steps") {  // gradient accumulation: an update every N steps
      WEFT_ASSIGN_OR_RETURN(s.accumulate_steps, to_int(flag, text));
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(double v, to_double(flag, text));
    if (flag == "lr") {
      WEFT_RETURN_IF_ERROR(check_learning_rate(v, "--lr=" + text));  // inf too
      s.lr = v;
    } else if (flag == "momentum") s.momentum = v;
    else if (flag == "dampening") s.dampening = v;
    else if (flag == "weight_decay") s.weight_decay = v;
    else if (flag == "beta1") s.betas[0] = v;
    else if (flag == "beta2") s.betas[1] = v;
    else if (flag == "eps") s.eps = v;
    else if (flag == "alpha") s.alpha = v;
    else if (flag == "lr_decay") s.lr_decay = v;
    else if (flag == "initial_accumulator_value") s.initial_accumulator_value = v;
    else if (flag == "momentum_decay") s.momentum_decay = v;
    else if (flag == "max_grad_norm") s.max_grad_norm = v;
  }
  WEFT_RETURN_IF_ERROR(s.validate());
  return s;
}

std::string CompileOptions::to_flags() const {
  std::string out = "--batch=" + std::to_string(batch) + " --dtype=" +
                    std::string(dtype_name(dtype)) + " --loss=" + loss + " --optimizer=" + optimizer;
  for (const auto& [flag, text] : hyper) out += " --" + flag + "=" + text;
  if (eval_batch != 0) out += " --eval_batch=" + std::to_string(eval_batch);
  if (backend != "cpu") out += " --backend=" + backend;
  out += " --cpu=" + cpu;
  if (inference_only) out += " --inference_only";
  if (data_parallel) out += " --data_parallel";
  if (precision != DType::f32) out += " --precision=" + std::string(dtype_name(precision));
  if (fuse_attention) out += " --fuse_attention";
  return out;
}

StatusOr<CompileOptions> parse_compile_options(const std::vector<std::string>& args,
                                               const std::vector<std::string>& passthrough) {
  CompileOptions o;
  for (const std::string& a : args) {
    if (a.rfind("--", 0) != 0) return Error{"unexpected argument '" + a + "'; " + usage()};
    const size_t eq = a.find('=');
    const std::string flag = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const std::string text = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (contains(passthrough, flag)) continue;
    if (flag == "inference_only" || flag == "data_parallel" || flag == "fuse_attention") {
      bool& on = flag == "inference_only" ? o.inference_only
                 : flag == "data_parallel" ? o.data_parallel
                                           : o.fuse_attention;
      on = true;
      if (eq != std::string::npos) {
        WEFT_ASSIGN_OR_RETURN(on, to_bool(flag, text));
      }
    } else if (eq == std::string::npos) {
      return Error{"flag --" + flag + " needs a value (--" + flag + "=...); " + usage()};
    } else if (flag == "batch") {
      WEFT_ASSIGN_OR_RETURN(o.batch, to_int(flag, text));
    } else if (flag == "eval_batch") {
      WEFT_ASSIGN_OR_RETURN(o.eval_batch, to_int(flag, text));
    } else if (flag == "dtype") {
      std::optional<DType> d = parse_dtype(text);
      if (!d) return Error{"--dtype=" + text + ": not a dtype (f32 f64 f16 bf16 ...)"};
      o.dtype = *d;
    } else if (flag == "loss") {
      o.loss = text;
    } else if (flag == "optimizer") {
      o.optimizer = text;
    } else if (flag == "cpu") {
      o.cpu = text;
    } else if (flag == "backend") {
      o.backend = text;
    } else if (flag == "precision") {
      std::optional<DType> precision = parse_precision(text);
      if (!precision) {
        return Error{"--precision=" + text + ": a training step runs in f32, or mixed precision "
                     "with bf16 or f16 (weft_library's precision: \"f32\", \"bf16\" or \"f16\")"};
      }
      o.precision = *precision;
    } else if (contains(kLossHyper, flag) || contains(kOptimizerHyper, flag)) {
      o.hyper[flag] = text;
    } else {
      return Error{"unknown flag --" + flag + "; " + usage()};
    }
  }
  if (o.batch <= 0) return Error{"--batch must be a positive integer (the training batch size)"};
  if (o.eval_batch < 0) return Error{"--eval_batch must be positive (or 0: the training batch)"};
  StatusOr<const codegen::Target*> target = codegen::find_target(o.backend);
  if (!target.ok() || !(*target)->compiled()) {
    return Error{"--backend=" + o.backend + ": the AOT generator compiles for " +
                 codegen::target_names([](const codegen::Target& t) { return t.compiled(); }, " and ")};
  }
  if (o.data_parallel && !(*target)->has_multi_rank()) {
    return Error{"--data_parallel needs --backend=" +
                 codegen::target_names([](const codegen::Target& t) { return t.has_multi_rank(); }, " or ") +
                 ": the " + o.backend + " backend runs one process"};
  }
  WEFT_RETURN_IF_ERROR(o.loss_spec().status());
  WEFT_RETURN_IF_ERROR(o.optimizer_spec().status());
  return o;
}

}  // namespace weft::aot
