#include "training/driver/flags.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "training/flag_values.h"
#include "training/learning_rate.h"

namespace weft::driver {
namespace {

constexpr const char* kSchedules = "constant, step, multistep, exponential, cosine, warmup-cosine, onecycle, cyclic";

/// One flag: how it is written, what it means, and how its value is stored. The driver's
/// table and a program's own flags (flags.h's FlagSet) are the same kind of entry.
using Flag = ProgramFlag;

Error bad(const std::string& name, const std::string& value, const std::string& problem) {
  return Error{"--" + name + "=" + value + ": " + problem};
}

/// A whole number in [low, high] (training/flag_values.h).
StatusOr<int64_t> parse_int(const std::string& name, const std::string& value, int64_t low,
                            int64_t high = std::numeric_limits<int64_t>::max()) {
  const FlagNumber<int64_t> n = parse_whole_number(value);
  if (n.malformed) return bad(name, value, "not a whole number");
  if (n.out_of_range) return bad(name, value, "does not fit 64 bits");
  if (n.value < low || n.value > high) {
    std::string range = high == std::numeric_limits<int64_t>::max()
                            ? "must be >= " + std::to_string(low)
                            : "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
    return bad(name, value, range);
  }
  return n.value;
}

StatusOr<uint64_t> parse_u64(const std::string& name, const std::string& value) {
  const FlagNumber<uint64_t> n = parse_unsigned_number(value);
  if (n.malformed) return bad(name, value, "not an unsigned whole number");
  if (n.out_of_range) return bad(name, value, "does not fit 64 bits");
  return n.value;
}

/// A finite number >= low (or > low when `strict`), and <= high.
StatusOr<double> parse_double(const std::string& name, const std::string& value, double low,
                              bool strict = false,
                              double high = std::numeric_limits<double>::infinity()) {
  const FlagNumber<double> n = parse_real_number(value);
  if (n.malformed) return bad(name, value, "not a number");
  if (n.out_of_range) return bad(name, value, "must be finite");
  const double v = n.value;
  std::ostringstream low_text, high_text;
  low_text << low;
  high_text << high;
  if (std::isfinite(high) && (v < low || v > high)) {
    return bad(name, value, "must be in [" + low_text.str() + ", " + high_text.str() + "]");
  }
  if (strict ? !(v > low) : !(v >= low)) {
    return bad(name, value, std::string(strict ? "must be > " : "must be >= ") + low_text.str());
  }
  return v;
}

StatusOr<std::vector<std::string>> parse_files(const std::string& name, const std::string& value) {
  std::vector<std::string> files;
  std::stringstream in(value);
  std::string file;
  while (std::getline(in, file, ',')) {
    if (file.empty()) return bad(name, value, "an empty file name in the list");
    files.push_back(resolve_path(file));
  }
  if (files.empty() || value.back() == ',') return bad(name, value, "an empty file name in the list");
  return files;
}

std::vector<Flag> make_flags() {
  std::vector<Flag> f;
  auto integer = [&](std::string name, std::string def, std::string help, int64_t DriverConfig::*field,
                     int64_t low, int64_t high = std::numeric_limits<int64_t>::max()) {
    f.push_back({name, "N", std::move(def), std::move(help),
                 [name, field, low, high](DriverConfig& c, const std::string& v) -> Status {
                   WEFT_ASSIGN_OR_RETURN(c.*field, parse_int(name, v, low, high));
                   return Status();
                 }});
  };
  auto number = [&](std::string name, std::string def, std::string help, double DriverConfig::*field,
                    double low, bool strict, double high = std::numeric_limits<double>::infinity()) {
    f.push_back({name, "X", std::move(def), std::move(help),
                 [name, field, low, strict, high](DriverConfig& c, const std::string& v) -> Status {
                   WEFT_ASSIGN_OR_RETURN(c.*field, parse_double(name, v, low, strict, high));
                   return Status();
                 }});
  };
  auto path = [&](std::string name, std::string help, std::string DriverConfig::*field) {
    f.push_back({name, "PATH", "none", std::move(help),
                 [name, field](DriverConfig& c, const std::string& v) -> Status {
                   if (v.empty()) return Error{"--" + name + " needs a path: --" + name + "=PATH"};
                   c.*field = resolve_path(v);
                   return Status();
                 }});
  };
  auto boolean = [&](std::string name, std::string help, bool DriverConfig::*field) {
    f.push_back({name, "", "off", std::move(help), [field](DriverConfig& c, const std::string&) -> Status {
                   c.*field = true;
                   return Status();
                 }});
  };
  auto seed = [&](std::string name, std::string help, uint64_t DriverConfig::*field) {
    f.push_back({name, "S", "0", std::move(help),
                 [name, field](DriverConfig& c, const std::string& v) -> Status {
                   WEFT_ASSIGN_OR_RETURN(c.*field, parse_u64(name, v));
                   return Status();
                 }});
  };

  // Data.
  f.push_back({"data", "DIR", DriverConfig{}.data_dir,
               "Fashion-MNIST (or MNIST) IDX files: {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz",
               [](DriverConfig& c, const std::string& v) -> Status {
                 if (v.empty()) return Error{"--data needs a directory: --data=DIR"};
                 c.data_dir = resolve_path(v);
                 return Status();
               }});
  f.push_back({"train", "X.npy,Y.npy", "none",
               "arrays of the training split instead of --data, one per step input (the inputs, then "
               "the target); dimension 0 is the sample. Each is FILE.npy, FILE.safetensors:TENSOR, "
               "FILE.csv:COLUMN[+COLUMN...] (numeric columns under a header row) or an IDX file",
               [](DriverConfig& c, const std::string& v) -> Status {
                 WEFT_ASSIGN_OR_RETURN(c.train_files, parse_files("train", v));
                 return Status();
               }});
  f.push_back({"test", "X.npy,Y.npy", "none", "arrays of the test split (with --train), as --train's",
               [](DriverConfig& c, const std::string& v) -> Status {
                 WEFT_ASSIGN_OR_RETURN(c.test_files, parse_files("test", v));
                 return Status();
               }});
  // The run.
  integer("epochs", "1", "epochs to train (a resumed run counts the checkpoint's)", &DriverConfig::epochs, 0);
  integer("max-steps", "0", "at most N steps per epoch (0: every full batch)", &DriverConfig::max_steps, 0);
  seed("seed", "parameter initialization (and dropout) seed", &DriverConfig::seed);
  seed("shuffle-seed", "seed of the per-epoch batch shuffle", &DriverConfig::shuffle_seed);
  integer("threads", "0", "worker threads (0: $WEFT_NUM_THREADS or every core)", &DriverConfig::threads, 0,
          4096);
  f.push_back({"max-memory", "BYTES", "the memory available",
               "refuse to start when the model's step needs more memory than this (its planned arena "
               "and its inputs; suffixes K, M, G), as weftc's --max-memory",
               [](DriverConfig& c, const std::string& v) -> Status {
                 const std::optional<int64_t> bytes = parse_byte_size(v);
                 if (!bytes) return bad("max-memory", v, "not a positive number of bytes (suffixes K, M, G)");
                 c.max_memory = *bytes;
                 return Status();
               }});
  f.push_back({"precision", "DTYPE", "f32",
               "f32, or mixed precision: bf16 or f16 matmuls and convolutions, with f32 weights, "
               "gradients, reductions, norms and loss (f16 with dynamic loss scaling)",
               [](DriverConfig& c, const std::string& v) -> Status {
                 const std::optional<DType> precision = parse_precision(v);
                 if (!precision) return bad("precision", v, "one of f32, bf16, f16");
                 c.precision = *precision;
                 return Status();
               }});
  boolean("tf32",
          "cuda: f32 matmuls and convolutions on TF32 tensor cores (values stay f32 in memory; "
          "their operands rounded to a 10-bit mantissa, accumulated in f32: PyTorch's "
          "torch.backends.cuda.matmul.allow_tf32); the cpu ignores it. Not yet run on a GPU",
          &DriverConfig::tf32);
  // The learning rate.
  f.push_back({"lr", "X", "the compiled optimizer's", "base learning rate (>= 0)",
               [](DriverConfig& c, const std::string& v) -> Status {
                 const FlagNumber<double> lr = parse_real_number(v);
                 if (lr.malformed) return bad("lr", v, "not a number");
                 WEFT_RETURN_IF_ERROR(check_learning_rate(lr.value, "--lr=" + v));
                 c.lr = lr.value + 0.0;  // -0 is the rate 0 (as the check takes it), and is printed so
                 return Status();
               }});
  f.push_back({"schedule", "NAME", "constant", std::string("learning-rate schedule, stepped every step: ") + kSchedules,
               [](DriverConfig& c, const std::string& v) -> Status {
                 const std::string known = std::string(", ") + kSchedules + ",";
                 if (v.empty() || v.find(',') != std::string::npos ||
                     known.find(", " + v + ",") == std::string::npos) {
                   return bad("schedule", v, std::string("unknown schedule; one of ") + kSchedules);
                 }
                 c.schedule = v;
                 return Status();
               }});
  integer("lr-step-size", "none", "step: multiply the lr by --lr-gamma every N steps",
          &DriverConfig::lr_step_size, 1);
  number("lr-gamma", "0.1", "step, multistep, exponential: the lr's decay factor", &DriverConfig::lr_gamma,
         0, /*strict=*/true);
  f.push_back({"milestones", "N,N,...", "none", "multistep: the steps at which the lr is multiplied by --lr-gamma",
               [](DriverConfig& c, const std::string& v) -> Status {
                 std::vector<int64_t> out;
                 std::stringstream in(v);
                 std::string item;
                 while (std::getline(in, item, ',')) {
                   StatusOr<int64_t> m = parse_int("milestones", item, 0);
                   if (!m.ok()) return bad("milestones", v, "'" + item + "' is not a whole number >= 0");
                   out.push_back(*m);
                 }
                 if (out.empty() || v.back() == ',') return bad("milestones", v, "'' is not a whole number >= 0");
                 c.milestones = std::move(out);
                 return Status();
               }});
  integer("warmup-steps", "0",
          "steps of linear warmup: warmup-cosine's own, or in front of any other schedule "
          "(which then starts after them)",
          &DriverConfig::warmup_steps, 0);
  number("warmup-start-factor", "0 for warmup-cosine, 1/3 otherwise",
         "the warmup starts at lr * X",
         &DriverConfig::warmup_start_factor, 0, false, 1);
  number("min-lr", "0", "cosine, warmup-cosine: the lr the cosine ends at", &DriverConfig::min_lr, 0, false);
  number("pct-start", "0.3", "onecycle: fraction of the run spent raising the lr", &DriverConfig::pct_start, 0,
         false, 1);
  number("div-factor", "25", "onecycle: the first lr is --lr / X", &DriverConfig::div_factor, 0, true);
  number("final-div-factor", "10000", "onecycle: the last lr is the first / X",
         &DriverConfig::final_div_factor, 0, true);
  number("max-lr", "none", "cyclic: the lr at the top of each cycle (the bottom is --lr)", &DriverConfig::max_lr, 0,
         true);
  integer("step-size-up", "2000", "cyclic: steps from --lr up to --max-lr", &DriverConfig::step_size_up, 1);
  integer("step-size-down", "--step-size-up", "cyclic: steps from --max-lr back down (0: a sawtooth)",
          &DriverConfig::step_size_down, 0);
  f.push_back({"cyclic-mode", "MODE", "triangular",
               "cyclic: triangular, triangular2 (the amplitude halves every cycle) or exp_range (it "
               "shrinks by --cyclic-gamma every step)",
               [](DriverConfig& c, const std::string& v) -> Status {
                 if (v != "triangular" && v != "triangular2" && v != "exp_range") {
                   return bad("cyclic-mode", v, "one of triangular, triangular2, exp_range");
                 }
                 c.cyclic_mode = v;
                 return Status();
               }});
  number("cyclic-gamma", "1", "cyclic with --cyclic-mode=exp_range: the amplitude's factor per step",
         &DriverConfig::cyclic_gamma, 0, true, 1);
  number("base-momentum", "0.85 for onecycle, 0.8 for cyclic",
         "onecycle, cyclic: the momentum (beta1 for Adam) at the lr's peak, cycled inversely "
         "to the lr (PyTorch's cycle_momentum) when the model's step takes it as an input",
         &DriverConfig::base_momentum, 0, false, 1);
  number("max-momentum", "0.95 for onecycle, 0.9 for cyclic",
         "onecycle, cyclic: the momentum (beta1) where the lr is lowest",
         &DriverConfig::max_momentum, 0, false, 1);
  boolean("no-cycle-momentum", "onecycle, cyclic: leave the model's momentum as compiled (cycle_momentum=False)",
          &DriverConfig::no_cycle_momentum);
  // Checkpoints, evaluation, reporting.
  path("checkpoint-in", "resume from this checkpoint (safetensors); the step count continues",
       &DriverConfig::checkpoint_in);
  boolean("partial-load",
          "with --checkpoint-in: load the tensors that match the model and print what was missing "
          "(left at its initial value) and unexpected (ignored); without it a checkpoint must hold "
          "exactly the model's tensors. Either way the checkpoint must be of this model's "
          "architecture (its structure; a JIT model's batch size may differ)",
          &DriverConfig::partial_load);
  path("checkpoint-out", "write a checkpoint here (safetensors, atomically) at the end",
       &DriverConfig::checkpoint_out);
  path("export-onnx",
       "at the end, after --checkpoint-out, write the trained eval-mode model with its weights "
       "as ONNX (opset 17, atomically)",
       &DriverConfig::export_onnx);
  integer("checkpoint-every", "0", "also write --checkpoint-out every N steps (0: only at the end)",
          &DriverConfig::checkpoint_every, 0);
  integer("eval-every", "0", "evaluate on the test split every N steps (always after each epoch)",
          &DriverConfig::eval_every, 0);
  path("metrics-csv", "write epoch, step, loss, lr, examples/s, elapsed s, memory, test accuracy and loss per step",
       &DriverConfig::metrics_csv);
  path("epoch-csv",
       "write one row per epoch: the epoch's mean loss and lr, its test accuracy and loss "
       "(rewritten at each epoch's end)",
       &DriverConfig::epoch_csv);
  path("report", "at the end, write an HTML report here: loss, test metrics, time per epoch, memory",
       &DriverConfig::report);
  integer("serve", "off",
          "serve the live dashboard (loss, metrics, lr, throughput, CPU, memory) on "
          "127.0.0.1:PORT while training (0: a free port; the URL is printed)",
          &DriverConfig::serve, 0, 65535);
  integer("log-every", "100", "print a progress line every N steps when stdout is not a terminal",
          &DriverConfig::log_every, 1);
  boolean("check-numerics",
          "stop at the first op producing a NaN or an infinity, naming it and its source line (slow)",
          &DriverConfig::check_numerics);
  boolean("profile", "time every kernel of the step; print the table after each epoch", &DriverConfig::profile);
  boolean("data-parallel",
          "under mpirun -np N, srun or the torchrun variables (RANK, WORLD_SIZE, MASTER_ADDR, "
          "MASTER_PORT): each rank trains on its share of every global batch (the model's batch "
          "times N); rank 0 alone prints and writes",
          &DriverConfig::data_parallel);
  integer("collective-timeout", "300",
          "--data-parallel: a rank waiting longer than N seconds for its peers in one collective exits "
          "non-zero, naming the peer and the collective (on cuda: a whole step with NCCL reductions, "
          "then ncclCommAbort)",
          &DriverConfig::collective_timeout, 1, 86400);
  auto bucket = [&](std::string name, std::string def, std::string help, int64_t DriverConfig::*field) {
    f.push_back({name, "F", std::move(def), std::move(help),
                 [name, field](DriverConfig& c, const std::string& v) -> Status {
                   const FlagNumber<int64_t> bytes = parse_bucket_mebibytes(v);
                   if (bytes.malformed) return bad(name, v, "not a number of MiB");
                   if (!bytes.ok()) {
                     std::ostringstream most;
                     most << kMaxBucketMebibytes;
                     return bad(name, v, "must be in [0, " + most.str() + "] MiB");
                   }
                   c.*field = bytes.value;
                   return Status();
                 }});
  };
  bucket("bucket-mb", "25",
         "--data-parallel: the gradients' all-reduce calls take buckets of up to F MiB (PyTorch DDP's "
         "bucket_cap_mb; fractions allowed); 0: one reduction per gradient",
         &DriverConfig::bucket_bytes);
  bucket("first-bucket-mb", "1",
         "--data-parallel: the first bucket closes at F MiB (or at --bucket-mb when smaller), so its "
         "reduction starts early in the backward pass",
         &DriverConfig::first_bucket_bytes);
  f.push_back({"help", "", "", "print this list and exit",
               [](DriverConfig& c, const std::string&) -> Status {
                 c.help = true;
                 return Status();
               }});
  return f;
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> table = make_flags();
  return table;
}

/// Whole-command-line checks, once every flag is read.
Status check(const DriverConfig& c, const std::vector<std::string>& given) {
  auto was_given = [&](const std::string& name) {
    for (const std::string& g : given) if (g == name) return true;
    return false;
  };
  if (!c.train_files.empty() && was_given("data")) {
    return Error{"--data and --train are two data sources; give one"};
  }
  if (!c.test_files.empty() && c.train_files.empty()) return Error{"--test needs --train"};
  if (c.eval_every > 0 && !c.train_files.empty() && c.test_files.empty()) {
    return Error{"--eval-every needs a test split: --test=X.npy,Y.npy"};
  }
  if (c.partial_load && c.checkpoint_in.empty()) return Error{"--partial-load needs --checkpoint-in"};
  if (c.checkpoint_every > 0 && c.checkpoint_out.empty()) {
    return Error{"--checkpoint-every needs --checkpoint-out"};
  }
  if (c.schedule == "step" && c.lr_step_size == 0) return Error{"--schedule=step needs --lr-step-size=N"};
  if (c.schedule == "multistep" && c.milestones.empty()) {
    return Error{"--schedule=multistep needs --milestones=N,N,..."};
  }
  if (c.schedule == "cyclic" && !was_given("max-lr")) return Error{"--schedule=cyclic needs --max-lr=X"};
  // A schedule's own flags given with another schedule are probably a mistake.
  const std::vector<std::pair<std::string, std::string>> owners = {
      {"lr-step-size", "step"},       {"milestones", "multistep"},
      {"pct-start", "onecycle"},      {"div-factor", "onecycle"},
      {"final-div-factor", "onecycle"}, {"max-lr", "cyclic"},
      {"step-size-up", "cyclic"},     {"step-size-down", "cyclic"},
      {"cyclic-mode", "cyclic"},      {"cyclic-gamma", "cyclic"}};
  for (const auto& [flag, schedule] : owners) {
    if (was_given(flag) && c.schedule != schedule) {
      return Error{"--" + flag + " applies to --schedule=" + schedule + ", not --schedule=" + c.schedule};
    }
  }
  for (const std::string flag : {"base-momentum", "max-momentum", "no-cycle-momentum"}) {
    if (was_given(flag) && c.schedule != "onecycle" && c.schedule != "cyclic") {
      return Error{"--" + flag + " applies to --schedule=onecycle or cyclic, not --schedule=" + c.schedule};
    }
    if (was_given(flag) && flag != "no-cycle-momentum" && c.no_cycle_momentum) {
      return Error{"--" + flag + " sets a bound of the momentum cycle, which --no-cycle-momentum turns off"};
    }
  }
  if (was_given("lr-gamma") && c.schedule != "step" && c.schedule != "multistep" &&
      c.schedule != "exponential") {
    return Error{"--lr-gamma applies to --schedule=step, multistep or exponential, not --schedule=" +
                 c.schedule};
  }
  if (was_given("warmup-start-factor") && c.warmup_steps == 0) {
    return Error{"--warmup-start-factor needs --warmup-steps=N (the steps of warmup it starts)"};
  }
  if (was_given("collective-timeout") && !c.data_parallel) {
    return Error{"--collective-timeout applies to --data-parallel (how long a rank waits for its peers), "
                 "which is not given"};
  }
  for (const std::string flag : {"bucket-mb", "first-bucket-mb"}) {
    if (was_given(flag) && !c.data_parallel) {
      return Error{"--" + flag + " applies to --data-parallel (the size of the gradients' all-reduce "
                   "buckets), which is not given"};
    }
  }
  if (was_given("min-lr") && c.schedule != "cosine" && c.schedule != "warmup-cosine") {
    return Error{"--min-lr applies to --schedule=cosine or warmup-cosine, not --schedule=" + c.schedule};
  }
  return Status();
}

/// The learning rate never changes.
class ConstantLR final : public LrSchedule {
 public:
  explicit ConstantLR(double lr) : lr_(lr) {}
  double lr_at(int64_t) const override { return lr_; }
  std::string describe() const override {
    std::ostringstream s;
    s << "ConstantLR(lr=" << lr_ << ")";
    return s.str();
  }

 private:
  double lr_;
};

}  // namespace

namespace {

/// Reads `args` with `table`, starting from `config`.
StatusOr<DriverConfig> parse_with(const std::vector<std::string>& args, const std::vector<Flag>& table,
                                  DriverConfig config) {
  std::vector<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      return Error{"unexpected argument '" + arg + "'; flags are --name=value (--help lists them)"};
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Flag* flag = nullptr;
    for (const Flag& f : table) {
      if (f.name == name) flag = &f;
    }
    if (flag == nullptr) return Error{"unknown flag '--" + name + "' (--help lists the flags)"};
    std::string value;
    if (flag->placeholder.empty()) {
      if (eq != std::string::npos) return Error{"--" + name + " takes no value"};
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];
    } else {
      return Error{"--" + name + " needs a value: --" + name + "=" + flag->placeholder};
    }
    WEFT_RETURN_IF_ERROR(flag->set(config, value));
    given.push_back(name);
  }
  if (config.help) return config;
  WEFT_RETURN_IF_ERROR(check(config, given));
  return config;
}

/// The flags of `set` in --help order (the shared ones as the table orders them, then its
/// own, then --help), with the set's defaults in their help.
std::vector<Flag> flags_of(const FlagSet& set) {
  auto shares = [&](const std::string& name) {
    return std::find(set.shared.begin(), set.shared.end(), name) != set.shared.end();
  };
  std::vector<Flag> out;
  for (const Flag& f : flags()) {
    if (!shares(f.name) || f.name == "help") continue;
    out.push_back(f);
    if (auto d = set.defaults.find(f.name); d != set.defaults.end()) out.back().default_text = d->second;
  }
  out.insert(out.end(), set.own.begin(), set.own.end());
  if (shares("help")) out.push_back(flags().back());
  WEFT_CHECK(out.size() == set.shared.size() + set.own.size(), "a FlagSet shares a flag the driver does not have");
  for (const auto& [name, value] : set.defaults) {
    WEFT_CHECK(shares(name), "a FlagSet sets a default for a flag it does not share");
  }
  return out;
}

std::string list_flags(const std::vector<Flag>& table) {
  std::ostringstream out;
  for (const Flag& f : table) {
    std::string left = "  --" + f.name + (f.placeholder.empty() ? "" : "=" + f.placeholder);
    if (left.size() < 30) left.resize(30, ' ');
    else left += "\n" + std::string(30, ' ');
    out << left << f.help;
    if (!f.default_text.empty()) out << " (default: " << f.default_text << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace

StatusOr<DriverConfig> parse_flags(const std::vector<std::string>& args) {
  return parse_with(args, flags(), DriverConfig{});
}

StatusOr<DriverConfig> parse_flags(const std::vector<std::string>& args, const FlagSet& set) {
  const std::vector<Flag> table = flags_of(set);
  DriverConfig config;
  for (const auto& [name, value] : set.defaults) {
    for (const Flag& f : table) {
      if (f.name != name) continue;
      Status s = f.set(config, value);
      WEFT_CHECK(s.ok(), "a FlagSet's default is not a value its flag takes");
    }
  }
  return parse_with(args, table, std::move(config));
}

ProgramFlag whole_number_flag(const std::string& name, const std::string& help, int64_t* into,
                              int64_t low, int64_t high) {
  return {name, "N", std::to_string(*into), help,
          [name, into, low, high](DriverConfig&, const std::string& v) -> Status {
            WEFT_ASSIGN_OR_RETURN(*into, parse_int(name, v, low, high));
            return Status();
          }};
}

std::vector<std::string> flag_names() {
  std::vector<std::string> names;
  for (const Flag& f : flags()) names.push_back(f.name);
  return names;
}

std::string help_text(const std::string& program) {
  return "usage: " + program + " [--flag=value ...]\n" +
         "Trains the model this binary was built with (weft_binary) and evaluates it on the\n"
         "test split. Exit status: 0 done, 1 a file or the run failed, 2 a bad command line,\n"
         "130/143 stopped by SIGINT/SIGTERM (after the current step and --checkpoint-out).\n\n" +
         list_flags(flags());
}

std::string help_text(const std::string& program, const std::string& about, const FlagSet& set) {
  return "usage: " + program + " [--flag=value ...]\n" + about + "\n" + list_flags(flags_of(set));
}

StatusOr<std::unique_ptr<LrSchedule>> make_schedule(const DriverConfig& c, double base_lr,
                                                    int64_t total_steps) {
  std::unique_ptr<LrSchedule> s;
  const std::string& name = c.schedule;
  const int64_t total = std::max<int64_t>(total_steps, 1);
  if (name == "constant") {
    s = std::make_unique<ConstantLR>(base_lr);
  } else if (name == "step") {
    s = std::make_unique<StepLR>(base_lr, c.lr_step_size, c.lr_gamma);
  } else if (name == "multistep") {
    s = std::make_unique<MultiStepLR>(base_lr, c.milestones, c.lr_gamma);
  } else if (name == "exponential") {
    s = std::make_unique<ExponentialLR>(base_lr, c.lr_gamma);
  } else if (name == "cosine") {
    s = std::make_unique<CosineAnnealingLR>(base_lr, total, c.min_lr);
  } else if (name == "warmup-cosine") {
    if (c.warmup_steps >= total) {
      return Error{"--warmup-steps=" + std::to_string(c.warmup_steps) +
                   " must be less than the run's " + std::to_string(total) + " steps"};
    }
    s = std::make_unique<WarmupCosineLR>(base_lr, c.warmup_steps, total,
                                         std::max(c.warmup_start_factor, 0.0), c.min_lr);
  } else if (name == "onecycle") {
    OneCycleOptions o;
    o.pct_start = c.pct_start;
    o.div_factor = c.div_factor;
    o.final_div_factor = c.final_div_factor;
    o.cycle_momentum = !c.no_cycle_momentum;
    if (c.base_momentum >= 0) o.base_momentum = c.base_momentum;
    if (c.max_momentum >= 0) o.max_momentum = c.max_momentum;
    s = std::make_unique<OneCycleLR>(base_lr, total, o);
  } else if (name == "cyclic") {
    CyclicOptions o;
    o.step_size_up = c.step_size_up;
    if (c.step_size_down >= 0) o.step_size_down = c.step_size_down;
    o.mode = c.cyclic_mode == "triangular2" ? CyclicOptions::Mode::triangular2
             : c.cyclic_mode == "exp_range" ? CyclicOptions::Mode::exp_range
                                            : CyclicOptions::Mode::triangular;
    o.gamma = c.cyclic_gamma;
    o.cycle_momentum = !c.no_cycle_momentum;
    if (c.base_momentum >= 0) o.base_momentum = c.base_momentum;
    if (c.max_momentum >= 0) o.max_momentum = c.max_momentum;
    s = std::make_unique<CyclicLR>(base_lr, c.max_lr, o);
  } else {
    return Error{"--schedule=" + name + ": unknown schedule; one of " + kSchedules};
  }
  if (c.warmup_steps > 0 && name != "warmup-cosine") {
    // A linear warmup in front of the schedule, which starts when it ends (WarmupLR).
    const double start = c.warmup_start_factor < 0 ? 1.0 / 3 : c.warmup_start_factor;
    s = std::make_unique<WarmupLR>(std::shared_ptr<const LrSchedule>(std::move(s)), c.warmup_steps, start);
  }
  Status valid = s->validate();
  if (!valid.ok()) return Error{"--schedule=" + name + ": " + valid.error().message};
  return s;
}

}  // namespace weft::driver
