// run_driver (the command line: --backend, the flags, --help), run_training (a run with
// its stop signals and out-of-memory guard; training_run.h holds its steps) and the
// evaluation of a test split.
#include "training/driver/driver.h"

#include <algorithm>
#include <cmath>

#include "training/driver/stop_signals.h"
#include "training/driver/training_run.h"
#include "runtime/out_of_memory.h"

namespace weft::driver {

std::string Evaluation::to_string() const {
  std::string s;
  if (accuracy) s = "test accuracy: " + format_number("%.4f", *accuracy);
  if (loss) s += (s.empty() ? "" : ", ") + std::string("test ") + loss_name + ": " + format_number("%.4f", *loss);
  if (s.empty()) s = "evaluated " + std::to_string(samples) + " test samples (no metric for this target)";
  return s;
}

StatusOr<Evaluation> evaluate_split(Trainable& model, const Split& test) {
  const auto& eval_inputs = model.eval_inputs();
  const int64_t eval_batch = eval_inputs[0].type.shape[0];
  const int64_t n = test.size();
  const Tensor& target = test.columns.back().array;
  const int64_t target_elements = sample_elements(target.type());
  int64_t correct = 0;
  double loss_sum = 0;
  bool has_loss = true;
  Evaluation result;
  result.samples = n;
  std::vector<Tensor> inputs(eval_inputs.size());
  for (int64_t start = 0; start < n; start += eval_batch) {
    const int64_t rows = std::min(eval_batch, n - start);  // the last batch may be short: padded
    for (size_t k = 0; k < eval_inputs.size(); ++k) {
      inputs[k] = slice_rows(test.columns[k], start, rows, eval_inputs[k].type);
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, model.evaluate(inputs));
    if (outputs.empty() || outputs[0].rank() < 1 || outputs[0].shape()[0] != eval_batch) {
      return Error{"the model's evaluation returned " +
                   (outputs.empty() ? std::string("no outputs") : outputs[0].type().to_string()) +
                   "; expected a first output with " + std::to_string(eval_batch) + " rows"};
    }
    const Tensor& out = outputs[0];
    const int64_t width = sample_elements(out.type());
    std::vector<double> row(static_cast<size_t>(width));
    for (int64_t i = 0; i < rows; ++i) {  // the padding's rows are dropped
      for (int64_t c = 0; c < width; ++c) row[c] = out.get_double(i * width + c);
      if (test.classes) {
        const int64_t label = test.classes->data<int64_t>()[start + i];
        const int64_t best = std::max_element(row.begin(), row.end()) - row.begin();
        correct += best == label;
        const double top = row[best];
        double sum = 0;
        for (double v : row) sum += std::exp(v - top);
        loss_sum += top + std::log(sum) - row[label];
      } else if (width == target_elements) {
        for (int64_t c = 0; c < width; ++c) {
          const double d = row[c] - target.get_double((start + i) * width + c);
          loss_sum += d * d / static_cast<double>(width);
        }
      } else {
        has_loss = false;
      }
    }
  }
  if (n > 0 && test.classes) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(n);
    result.loss = loss_sum / static_cast<double>(n);
    result.loss_name = "cross-entropy";
  } else if (n > 0 && has_loss) {
    result.loss = loss_sum / static_cast<double>(n);
    result.loss_name = "mse";
  }
  return result;
}

ModelOptions model_options(const DriverConfig& config, std::shared_ptr<collective::Communicator> communicator) {
  return {.seed = config.seed,
          .bind = {.num_threads = static_cast<int>(config.threads),
                   .max_memory = config.max_memory,
                   .communicator = std::move(communicator),
                   .all_reduce_bucket_bytes = config.bucket_bytes,
                   .first_all_reduce_bucket_bytes = config.first_bucket_bytes,
                   .tf32 = config.tf32}};
}

namespace {

// `args` without a --backend naming `info.backend`; an error for one naming another.
// Without a known backend, --backend stays for parse_flags to refuse as unknown.
StatusOr<std::vector<std::string>> drop_backend_flag(const std::vector<std::string>& args,
                                                     const BinaryInfo& info) {
  if (info.backend.empty()) return args;
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (args[i].rfind("--backend=", 0) == 0) {
      value = args[i].substr(10);
    } else if (args[i] == "--backend" && i + 1 < args.size()) {
      value = args[++i];
    } else {
      out.push_back(args[i]);
      continue;
    }
    if (value != info.backend) {
      return Error{"--backend=" + value + ": this binary's model was compiled for " + info.backend +
                   ", and a binary trains on the backend it was built for; build one with "
                   "backend = \"" + value + "\" (weft_binary, tools/aot/weft.bzl)"};
    }
  }
  return out;
}

// Whether `args` set --NAME (--NAME=V or --NAME V).
bool given(const std::vector<std::string>& args, const std::string& name) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
    return a == "--" + name || a.rfind("--" + name + "=", 0) == 0;
  });
}

// The precision the binary's model was compiled for: f32 when unknown.
std::string built_precision(const BinaryInfo& info) {
  return info.precision.empty() ? "f32" : info.precision;
}

// An error for a --precision other than the one the binary was built for.
Status check_precision_flag(const DriverConfig& config, const BinaryInfo& info) {
  const std::string asked(dtype_name(config.precision)), built = built_precision(info);
  if (asked == built) return Status();
  return Error{"--precision=" + asked + ": this binary's model was compiled for " + built +
               " training, and a binary trains at the precision it was built for; build one with "
               "precision = \"" + asked + "\" (weft_binary, tools/aot/weft.bzl)"};
}

std::string backend_help(const BinaryInfo& info) {
  if (info.backend.empty()) return "";
  const std::string precision = built_precision(info);
  return "\nThis binary's model was compiled for the " + info.backend +
         " backend (weft_binary's `backend`); --backend=" + info.backend +
         " is accepted, any other is an error." +
         (info.world_from_environment ? "" : " It links no MPI: --data-parallel is not available.") +
         "\nIt trains in " + precision + " (weft_binary's `precision`" +
         (precision == "f16" ? ", with dynamic loss scaling" : "") + "); --precision=" + precision +
         " is accepted, any other is an error.\n";
}

}  // namespace

int run_driver(const std::vector<std::string>& args, const std::string& program,
               const ModelFactory& factory, std::FILE* out, std::FILE* err,
               const BinaryInfo& info) {
  StatusOr<std::vector<std::string>> kept = drop_backend_flag(args, info);
  if (!kept.ok()) {
    std::fprintf(err, "%s\n", kept.error().to_string().c_str());
    return kExitUsage;
  }
  StatusOr<DriverConfig> config = parse_flags(*kept);
  if (!config.ok()) {
    std::fprintf(err, "%s\n", config.error().to_string().c_str());
    return kExitUsage;
  }
  if (config->help) {
    std::fprintf(out, "%s%s", help_text(program).c_str(), backend_help(info).c_str());
    return kExitOk;
  }
  if (!given(*kept, "precision")) config->precision = parse_precision(built_precision(info)).value_or(DType::f32);
  if (Status s = check_precision_flag(*config, info); !s.ok()) {
    std::fprintf(err, "%s\n", s.error().to_string().c_str());
    return kExitUsage;
  }
  return run_training(*config, program, factory, out, err, info);
}

int run_training(const DriverConfig& config, const std::string& program, const ModelFactory& factory,
                 std::FILE* out, std::FILE* err, const BinaryInfo& info) {
  std::optional<Failure> failure;
  const int status = run_guarded(program.c_str(), [&] {
    StopSignals signals;  // before the model starts its threads
    failure = TrainingRun(config, program, factory, out, info, signals).run();
    return kExitOk;
  }, err);
  if (status != kExitOk) return kExitRuntime;
  std::fflush(out);
  if (failure) {
    std::fprintf(err, "%s\n", failure->error.to_string().c_str());
    return failure->status;
  }
  return kExitOk;
}

int run_driver(int argc, char** argv, const ModelFactory& factory, const BinaryInfo& info) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string program = argc > 0 ? argv[0] : "train";
  const size_t slash = program.rfind('/');
  if (slash != std::string::npos) program = program.substr(slash + 1);
  return run_driver(args, program, factory, stdout, stderr, info);
}

}  // namespace weft::driver
