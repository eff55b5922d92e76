// The driver's command line: every flag parses into the config, every error message is
// pinned, --help lists every flag, and the schedules are the training/schedule.h ones.
#include "training/driver/flags.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace weft::driver {
namespace {

/// The error message of parsing `args`, or "ok".
std::string error_of(const std::vector<std::string>& args) {
  StatusOr<DriverConfig> c = parse_flags(args);
  return c.ok() ? "ok" : c.error().message;
}

DriverConfig parse(const std::vector<std::string>& args) {
  StatusOr<DriverConfig> c = parse_flags(args);
  EXPECT_TRUE(c.ok()) << c.error().to_string();
  return c.ok() ? *c : DriverConfig{};
}

TEST(Flags, Defaults) {
  DriverConfig c = parse({});
  EXPECT_EQ(c.data_dir, "/usr/share/datasets/fashion-mnist");
  EXPECT_TRUE(c.train_files.empty());
  EXPECT_EQ(c.epochs, 1);
  EXPECT_EQ(c.max_steps, 0);
  EXPECT_EQ(c.seed, 0u);
  EXPECT_EQ(c.shuffle_seed, 0u);
  EXPECT_FALSE(c.lr.has_value());
  EXPECT_EQ(c.schedule, "constant");
  EXPECT_EQ(c.eval_every, 0);
  EXPECT_EQ(c.log_every, 100);
  EXPECT_EQ(c.precision, DType::f32);
  EXPECT_FALSE(c.tf32);
  EXPECT_FALSE(c.help);
}

TEST(Flags, EveryFlagParses) {
  unsetenv("BUILD_WORKING_DIRECTORY");
  DriverConfig c = parse({"--epochs=3", "--max-steps", "7", "--seed=18446744073709551615",
                          "--shuffle-seed=9", "--threads=2", "--lr=0.01", "--schedule=warmup-cosine",
                          "--warmup-steps=5", "--warmup-start-factor=0.1", "--min-lr=1e-5",
                          "--checkpoint-in=in.safetensors", "--partial-load", "--checkpoint-out=/tmp/out.safetensors",
                          "--checkpoint-every=50", "--eval-every=20", "--metrics-csv=m.csv",
                          "--epoch-csv=e.csv", "--log-every=10", "--data=/data"});
  EXPECT_EQ(c.epochs, 3);
  EXPECT_EQ(c.max_steps, 7);
  EXPECT_EQ(c.seed, 18446744073709551615ull);  // every uint64 seed, exactly
  EXPECT_EQ(c.shuffle_seed, 9u);
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.lr, 0.01);
  EXPECT_EQ(c.schedule, "warmup-cosine");
  EXPECT_EQ(c.warmup_steps, 5);
  EXPECT_EQ(c.warmup_start_factor, 0.1);
  EXPECT_EQ(c.min_lr, 1e-5);
  EXPECT_EQ(c.checkpoint_in, "in.safetensors");
  EXPECT_TRUE(c.partial_load);
  EXPECT_EQ(c.checkpoint_out, "/tmp/out.safetensors");
  EXPECT_EQ(c.checkpoint_every, 50);
  EXPECT_EQ(c.eval_every, 20);
  EXPECT_EQ(c.metrics_csv, "m.csv");
  EXPECT_EQ(c.epoch_csv, "e.csv");
  EXPECT_EQ(c.log_every, 10);
  EXPECT_EQ(c.data_dir, "/data");

  c = parse({"--train=x.npy,y.npy", "--test=tx.npy,ty.npy", "--schedule=multistep",
             "--milestones=10,30,30", "--lr-gamma=0.5"});
  EXPECT_EQ(c.train_files, (std::vector<std::string>{"x.npy", "y.npy"}));
  EXPECT_EQ(c.test_files, (std::vector<std::string>{"tx.npy", "ty.npy"}));
  EXPECT_EQ(c.milestones, (std::vector<int64_t>{10, 30, 30}));
  const DriverConfig sources =
      parse({"--train=/d/t.csv:a+b,/d/t.csv:label", "--test=/d/s.safetensors:x,/d/s.safetensors:y"});
  EXPECT_EQ(sources.train_files, (std::vector<std::string>{"/d/t.csv:a+b", "/d/t.csv:label"}));
  EXPECT_EQ(sources.test_files, (std::vector<std::string>{"/d/s.safetensors:x", "/d/s.safetensors:y"}));
  EXPECT_EQ(c.lr_gamma, 0.5);
  c = parse({"--schedule=step", "--lr-step-size=4"});
  EXPECT_EQ(c.lr_step_size, 4);
  c = parse({"--schedule=onecycle", "--pct-start=0.25", "--div-factor=10", "--final-div-factor=100"});
  EXPECT_EQ(c.pct_start, 0.25);
  EXPECT_EQ(c.div_factor, 10);
  EXPECT_EQ(c.final_div_factor, 100);
  c = parse({"--schedule=cyclic", "--max-lr=0.1", "--step-size-up=5", "--step-size-down=3",
             "--cyclic-mode=exp_range", "--cyclic-gamma=0.9"});
  EXPECT_EQ(c.max_lr, 0.1);
  EXPECT_EQ(c.step_size_up, 5);
  EXPECT_EQ(c.step_size_down, 3);
  EXPECT_EQ(c.cyclic_mode, "exp_range");
  EXPECT_EQ(c.cyclic_gamma, 0.9);
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_EQ(parse({"--precision=bf16"}).precision, DType::bf16);
  EXPECT_EQ(parse({"--precision", "f16"}).precision, DType::f16);
  EXPECT_EQ(parse({"--precision=f32"}).precision, DType::f32);
  EXPECT_TRUE(parse({"--tf32"}).tf32);
  // The last of a repeated flag wins.
  EXPECT_EQ(parse({"--epochs=2", "--epochs=5"}).epochs, 5);
}

TEST(Flags, RelativePathsFollowBazelRun) {
  setenv("BUILD_WORKING_DIRECTORY", "/home/me", 1);
  DriverConfig c = parse({"--checkpoint-out=ck.safetensors", "--train=a.npy,/abs/b.npy"});
  unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(c.checkpoint_out, "/home/me/ck.safetensors");
  EXPECT_EQ(c.train_files, (std::vector<std::string>{"/home/me/a.npy", "/abs/b.npy"}));
}

TEST(Flags, SyntaxErrors) {
  EXPECT_EQ(error_of({"data"}), "unexpected argument 'data'; flags are --name=value (--help lists them)");
  EXPECT_EQ(error_of({"--"}), "unexpected argument '--'; flags are --name=value (--help lists them)");
  EXPECT_EQ(error_of({"--bogus=1"}), "unknown flag '--bogus' (--help lists the flags)");
  EXPECT_EQ(error_of({"--batch=32"}), "unknown flag '--batch' (--help lists the flags)");
  EXPECT_EQ(error_of({"--epochs"}), "--epochs needs a value: --epochs=N");
  EXPECT_EQ(error_of({"--lr", "--epochs=1"}), "--lr needs a value: --lr=X");
  EXPECT_EQ(error_of({"--help=yes"}), "--help takes no value");
  EXPECT_EQ(error_of({"--tf32=1"}), "--tf32 takes no value");
}

TEST(Flags, NumberErrors) {
  EXPECT_EQ(error_of({"--epochs=x"}), "--epochs=x: not a whole number");
  EXPECT_EQ(error_of({"--epochs=1.5"}), "--epochs=1.5: not a whole number");
  EXPECT_EQ(error_of({"--epochs="}), "--epochs=: not a whole number");
  EXPECT_EQ(error_of({"--epochs=-1"}), "--epochs=-1: must be >= 0");
  EXPECT_EQ(error_of({"--max-steps=99999999999999999999"}), "--max-steps=99999999999999999999: does not fit 64 bits");
  EXPECT_EQ(error_of({"--threads=5000"}), "--threads=5000: must be in [0, 4096]");
  EXPECT_EQ(error_of({"--log-every=0"}), "--log-every=0: must be >= 1");
  EXPECT_EQ(error_of({"--seed=-1"}), "--seed=-1: not an unsigned whole number");
  EXPECT_EQ(error_of({"--shuffle-seed=18446744073709551616"}),
            "--shuffle-seed=18446744073709551616: does not fit 64 bits");
  EXPECT_EQ(error_of({"--lr=abc"}), "--lr=abc: not a number");
  EXPECT_EQ(error_of({"--lr=1e"}), "--lr=1e: not a number");
  EXPECT_EQ(error_of({"--lr= 1"}), "--lr= 1: not a number");
  // The rate itself through training/learning_rate.h's check, as every rate set after
  // the optimizer is built; 0 is a rate.
  EXPECT_EQ(error_of({"--lr=-0.1"}), "--lr=-0.1: the learning rate must be >= 0 (a negative one makes the "
                                     "optimizer climb the loss; 0 leaves the weights as they are)");
  EXPECT_EQ(error_of({"--lr=inf"}),
            "--lr=inf: the learning rate must be finite (a step with it makes every weight NaN)");
  EXPECT_EQ(error_of({"--lr=nan"}),
            "--lr=nan: the learning rate must be finite (a step with it makes every weight NaN)");
  EXPECT_EQ(error_of({"--lr=1e999"}),
            "--lr=1e999: the learning rate must be finite (a step with it makes every weight NaN)");
  EXPECT_EQ(parse({"--lr=0"}).lr, 0.0);
  EXPECT_EQ(error_of({"--schedule=exponential", "--lr-gamma=0"}), "--lr-gamma=0: must be > 0");
  EXPECT_EQ(error_of({"--warmup-start-factor=2"}), "--warmup-start-factor=2: must be in [0, 1]");
  EXPECT_EQ(error_of({"--pct-start=-0.5"}), "--pct-start=-0.5: must be in [0, 1]");
  EXPECT_EQ(error_of({"--schedule=linear"}),
            "--schedule=linear: unknown schedule; one of constant, step, multistep, exponential, "
            "cosine, warmup-cosine, onecycle, cyclic");
  EXPECT_EQ(error_of({"--schedule=step,cosine"}),
            "--schedule=step,cosine: unknown schedule; one of constant, step, multistep, exponential, "
            "cosine, warmup-cosine, onecycle, cyclic");
  EXPECT_EQ(error_of({"--milestones=3,x"}), "--milestones=3,x: 'x' is not a whole number >= 0");
  EXPECT_EQ(error_of({"--milestones=3,"}), "--milestones=3,: '' is not a whole number >= 0");
  EXPECT_EQ(error_of({"--milestones=-3"}), "--milestones=-3: '-3' is not a whole number >= 0");
}

TEST(Flags, PathErrors) {
  EXPECT_EQ(error_of({"--train=a.npy,,b.npy"}), "--train=a.npy,,b.npy: an empty file name in the list");
  EXPECT_EQ(error_of({"--test=a.npy,"}), "--test=a.npy,: an empty file name in the list");
  EXPECT_EQ(error_of({"--data="}), "--data needs a directory: --data=DIR");
  EXPECT_EQ(error_of({"--checkpoint-out="}), "--checkpoint-out needs a path: --checkpoint-out=PATH");
  EXPECT_EQ(error_of({"--checkpoint-in="}), "--checkpoint-in needs a path: --checkpoint-in=PATH");
  EXPECT_EQ(error_of({"--metrics-csv="}), "--metrics-csv needs a path: --metrics-csv=PATH");
  EXPECT_EQ(error_of({"--epoch-csv="}), "--epoch-csv needs a path: --epoch-csv=PATH");
}

TEST(Flags, InconsistentFlags) {
  EXPECT_EQ(error_of({"--data=/d", "--train=x.npy,y.npy"}), "--data and --train are two data sources; give one");
  EXPECT_EQ(error_of({"--test=x.npy,y.npy"}), "--test needs --train");
  EXPECT_EQ(error_of({"--checkpoint-every=10"}), "--checkpoint-every needs --checkpoint-out");
  EXPECT_EQ(error_of({"--partial-load"}), "--partial-load needs --checkpoint-in");
  EXPECT_EQ(error_of({"--collective-timeout=5"}),
            "--collective-timeout applies to --data-parallel (how long a rank waits for its peers), which is not given");
  EXPECT_EQ(error_of({"--collective-timeout=5", "--data-parallel"}), "ok");
  EXPECT_EQ(error_of({"--train=x.npy,y.npy", "--eval-every=10"}),
            "--eval-every needs a test split: --test=X.npy,Y.npy");
  EXPECT_EQ(error_of({"--schedule=step"}), "--schedule=step needs --lr-step-size=N");
  EXPECT_EQ(error_of({"--schedule=multistep"}), "--schedule=multistep needs --milestones=N,N,...");
  EXPECT_EQ(error_of({"--schedule=cyclic"}), "--schedule=cyclic needs --max-lr=X");
  EXPECT_EQ(error_of({"--max-lr=0.1"}), "--max-lr applies to --schedule=cyclic, not --schedule=constant");
  EXPECT_EQ(error_of({"--schedule=cyclic", "--max-lr=0.1", "--cyclic-mode=sine"}),
            "--cyclic-mode=sine: one of triangular, triangular2, exp_range");
  EXPECT_EQ(error_of({"--precision=f64"}), "--precision=f64: one of f32, bf16, f16");
  EXPECT_EQ(error_of({"--precision=fp16"}), "--precision=fp16: one of f32, bf16, f16");
  EXPECT_EQ(error_of({"--warmup-start-factor=0.5"}),
            "--warmup-start-factor needs --warmup-steps=N (the steps of warmup it starts)");
  EXPECT_EQ(error_of({"--schedule=cosine", "--lr-step-size=3"}),
            "--lr-step-size applies to --schedule=step, not --schedule=cosine");
  EXPECT_EQ(error_of({"--pct-start=0.2"}), "--pct-start applies to --schedule=onecycle, not --schedule=constant");
  EXPECT_EQ(error_of({"--schedule=cosine", "--lr-gamma=0.5"}),
            "--lr-gamma applies to --schedule=step, multistep or exponential, not --schedule=cosine");
  EXPECT_EQ(error_of({"--schedule=step", "--lr-step-size=3", "--min-lr=0.1"}),
            "--min-lr applies to --schedule=cosine or warmup-cosine, not --schedule=step");
  // --help wins over anything else on the line that is well-formed.
  EXPECT_EQ(error_of({"--help", "--checkpoint-every=10"}), "ok");
}

TEST(Flags, HelpListsEveryFlagWithItsDefault) {
  const std::string help = help_text("train");
  EXPECT_EQ(help.rfind("usage: train [--flag=value ...]\n", 0), 0u) << help;
  const std::vector<std::string> names = flag_names();
  EXPECT_EQ(names.size(), 48u);
  for (const std::string& name : names) {
    EXPECT_NE(help.find("\n  --" + name), std::string::npos) << name << "\n" << help;
  }
  EXPECT_NE(help.find("--epochs=N"), std::string::npos);
  EXPECT_NE(help.find("(default: 1)"), std::string::npos);
  EXPECT_NE(help.find("(default: /usr/share/datasets/fashion-mnist)"), std::string::npos);
  EXPECT_NE(help.find("(default: constant)"), std::string::npos);
  EXPECT_NE(help.find("FILE.safetensors:TENSOR, FILE.csv:COLUMN[+COLUMN...]"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: the compiled optimizer's)"), std::string::npos);
  EXPECT_NE(help.find("the cpu ignores it. Not yet run on a GPU (default: off)"), std::string::npos) << help;
}

// --bucket-mb and --first-bucket-mb: MiB as PyTorch DDP's bucket_cap_mb, fractions
// allowed, 0 one reduction per gradient; negative, non-numeric and absurd sizes refused.
TEST(Flags, BucketSizes) {
  DriverConfig defaults = parse({});
  EXPECT_EQ(defaults.bucket_bytes, int64_t{25} << 20);
  EXPECT_EQ(defaults.first_bucket_bytes, int64_t{1} << 20);
  DriverConfig c = parse({"--data-parallel", "--bucket-mb=4", "--first-bucket-mb=0.125"});
  EXPECT_EQ(c.bucket_bytes, int64_t{4} << 20);
  EXPECT_EQ(c.first_bucket_bytes, int64_t{1} << 17);
  EXPECT_EQ(parse({"--data-parallel", "--bucket-mb=0"}).bucket_bytes, 0);
  EXPECT_EQ(error_of({"--data-parallel", "--bucket-mb=-1"}), "--bucket-mb=-1: must be in [0, 65536] MiB");
  EXPECT_EQ(error_of({"--data-parallel", "--bucket-mb=25M"}), "--bucket-mb=25M: not a number of MiB");
  EXPECT_EQ(error_of({"--data-parallel", "--bucket-mb=lots"}), "--bucket-mb=lots: not a number of MiB");
  EXPECT_EQ(error_of({"--data-parallel", "--bucket-mb=1e9"}), "--bucket-mb=1e9: must be in [0, 65536] MiB");
  EXPECT_EQ(error_of({"--data-parallel", "--first-bucket-mb=nan"}),
            "--first-bucket-mb=nan: must be in [0, 65536] MiB");
  EXPECT_EQ(error_of({"--data-parallel", "--first-bucket-mb=-0.5"}),
            "--first-bucket-mb=-0.5: must be in [0, 65536] MiB");
  EXPECT_EQ(error_of({"--bucket-mb=4"}),
            "--bucket-mb applies to --data-parallel (the size of the gradients' all-reduce buckets), which is "
            "not given");
  EXPECT_EQ(error_of({"--first-bucket-mb=4"}),
            "--first-bucket-mb applies to --data-parallel (the size of the gradients' all-reduce buckets), "
            "which is not given");
}

// --serve takes a TCP port: the JIT examples once took any int and the listening socket
// wrapped it (70000 listened on 4464, 65536 on a free port).
TEST(Flags, ServeTakesATcpPort) {
  EXPECT_EQ(error_of({"--serve=70000"}), "--serve=70000: must be in [0, 65535]");
  EXPECT_EQ(error_of({"--serve=65536"}), "--serve=65536: must be in [0, 65535]");
  EXPECT_EQ(error_of({"--serve=-1"}), "--serve=-1: must be in [0, 65535]");
  EXPECT_EQ(parse({"--serve=0"}).serve, 0);
  EXPECT_EQ(parse({"--serve=65535"}).serve, 65535);
  EXPECT_EQ(parse({}).serve, -1);
}

// A program's command line made from the driver's table (the JIT examples'): the shared
// flags keep the driver's values, checks and messages, the program's defaults and own
// flags join them, and every other driver flag is unknown to it.
TEST(FlagSet, SharesTheDriversFlagsAndMessages) {
  int64_t batch = 128;
  const FlagSet set{.shared = {"epochs", "lr", "serve", "checkpoint-in", "partial-load", "help"},
                    .own = {whole_number_flag("batch", "examples per step", &batch, 1, 1000)},
                    .defaults = {{"epochs", "10"}, {"lr", "0.001"}}};
  auto error_in_set = [&](const std::vector<std::string>& args) {
    StatusOr<DriverConfig> c = parse_flags(args, set);
    return c.ok() ? "ok" : c.error().message;
  };
  StatusOr<DriverConfig> c = parse_flags({}, set);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->epochs, 10);
  EXPECT_EQ(c->lr, 0.001);
  EXPECT_EQ(batch, 128);
  c = parse_flags({"--epochs=2", "--batch", "64", "--serve=8080"}, set);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->epochs, 2);
  EXPECT_EQ(c->serve, 8080);
  EXPECT_EQ(batch, 64);

  EXPECT_EQ(error_in_set({"--serve=70000"}), error_of({"--serve=70000"}));
  EXPECT_EQ(error_in_set({"--serve=70000"}), "--serve=70000: must be in [0, 65535]");
  EXPECT_EQ(error_in_set({"--epochs=1.5"}), "--epochs=1.5: not a whole number");
  EXPECT_EQ(error_in_set({"--lr=-1"}), error_of({"--lr=-1"}));
  EXPECT_EQ(error_in_set({"--lr=-1"}), "--lr=-1: the learning rate must be >= 0 (a negative one makes the "
                                       "optimizer climb the loss; 0 leaves the weights as they are)");
  EXPECT_EQ(error_in_set({"--batch=0"}), "--batch=0: must be in [1, 1000]");
  EXPECT_EQ(error_in_set({"--batch=1e3"}), "--batch=1e3: not a whole number");
  EXPECT_EQ(error_in_set({"--batch"}), "--batch needs a value: --batch=N");
  EXPECT_EQ(error_in_set({"--partial-load"}), "--partial-load needs --checkpoint-in");
  EXPECT_EQ(error_in_set({"--schedule=cosine"}), "unknown flag '--schedule' (--help lists the flags)");
  EXPECT_EQ(error_in_set({"--bogus"}), "unknown flag '--bogus' (--help lists the flags)");

  const std::string help = help_text("mlp", "Trains the MLP.\n", set);
  EXPECT_EQ(help.rfind("usage: mlp [--flag=value ...]\nTrains the MLP.\n\n", 0), 0u) << help;
  EXPECT_NE(help.find("\n  --epochs=N"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: 10)"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: 0.001)"), std::string::npos) << help;
  EXPECT_NE(help.find("\n  --batch=N"), std::string::npos) << help;
  EXPECT_NE(help.find("examples per step (default: 128)"), std::string::npos) << help;  // as it was made
  EXPECT_EQ(help.find("--schedule"), std::string::npos) << help;
}

TEST(Schedules, AreRuntimeSchedules) {
  auto lr = [](const std::vector<std::string>& args, int64_t total, int64_t t) {
    StatusOr<DriverConfig> c = parse_flags(args);
    EXPECT_TRUE(c.ok()) << c.error().to_string();
    StatusOr<std::unique_ptr<LrSchedule>> s = make_schedule(*c, /*base_lr=*/0.1, total);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return (*s)->lr_at(t);
  };
  EXPECT_EQ(lr({}, 100, 0), 0.1);
  EXPECT_EQ(lr({}, 100, 99), 0.1);
  EXPECT_DOUBLE_EQ(lr({"--schedule=step", "--lr-step-size=10", "--lr-gamma=0.5"}, 100, 25), 0.025);
  EXPECT_DOUBLE_EQ(lr({"--schedule=multistep", "--milestones=5,8"}, 100, 9), 0.1 * 0.1 * 0.1);
  EXPECT_DOUBLE_EQ(lr({"--schedule=exponential", "--lr-gamma=0.9"}, 100, 2), 0.1 * 0.81);
  // Cosine over the whole run: half-way is the mean of the two ends, the end is --min-lr.
  EXPECT_DOUBLE_EQ(lr({"--schedule=cosine", "--min-lr=0.02"}, 100, 50), 0.06);
  EXPECT_DOUBLE_EQ(lr({"--schedule=cosine", "--min-lr=0.02"}, 100, 100), 0.02);
  EXPECT_DOUBLE_EQ(lr({"--schedule=warmup-cosine", "--warmup-steps=10"}, 100, 5), 0.05);
  EXPECT_DOUBLE_EQ(lr({"--schedule=warmup-cosine", "--warmup-steps=10"}, 100, 10), 0.1);
  EXPECT_DOUBLE_EQ(lr({"--schedule=warmup-cosine", "--warmup-steps=10"}, 100, 55), 0.05);
  EXPECT_DOUBLE_EQ(lr({"--schedule=onecycle"}, 100, 0), 0.1 / 25);
  EXPECT_NEAR(lr({"--schedule=onecycle"}, 100, 29), 0.1, 1e-12);  // the peak ends phase one
  // Cyclic between --lr and --max-lr: the peak after --step-size-up steps, back at --lr
  // after --step-size-down more; triangular2 halves the second cycle's amplitude.
  EXPECT_DOUBLE_EQ(lr({"--schedule=cyclic", "--max-lr=0.5", "--step-size-up=4"}, 100, 4), 0.5);
  EXPECT_DOUBLE_EQ(lr({"--schedule=cyclic", "--max-lr=0.5", "--step-size-up=4", "--step-size-down=2"}, 100, 6), 0.1);
  EXPECT_DOUBLE_EQ(lr({"--schedule=cyclic", "--max-lr=0.5", "--step-size-up=4", "--cyclic-mode=triangular2"}, 100, 12),
                   0.3);

  // A warmup in front of any schedule: linear from lr/3 (or --warmup-start-factor), then
  // the schedule from its own step 0.
  EXPECT_DOUBLE_EQ(lr({"--warmup-steps=10"}, 100, 0), 0.1 / 3);
  EXPECT_DOUBLE_EQ(lr({"--warmup-steps=10"}, 100, 10), 0.1);
  EXPECT_DOUBLE_EQ(lr({"--schedule=step", "--lr-step-size=10", "--lr-gamma=0.5", "--warmup-steps=4",
                       "--warmup-start-factor=0.5"}, 100, 2), 0.075);
  EXPECT_DOUBLE_EQ(lr({"--schedule=step", "--lr-step-size=10", "--lr-gamma=0.5", "--warmup-steps=4"}, 100, 14),
                   0.05);
  EXPECT_DOUBLE_EQ(lr({"--warmup-steps=5", "--warmup-start-factor=0"}, 100, 1), 0.02);

  StatusOr<DriverConfig> c = parse_flags({"--schedule=warmup-cosine", "--warmup-steps=100"});
  ASSERT_TRUE(c.ok());
  StatusOr<std::unique_ptr<LrSchedule>> s = make_schedule(*c, 0.1, 50);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "--warmup-steps=100 must be less than the run's 50 steps");
}

// onecycle and cyclic cycle the momentum (PyTorch's cycle_momentum), between the bounds the
// flags give or the schedule's defaults; --no-cycle-momentum turns it off.
// --lr=-0 is the rate 0, as training/learning_rate.h's check takes it (0 leaves the
// weights as they are, where a negative rate climbs the loss): it was printed
// "ConstantLR(lr=-0)".
TEST(Schedules, ANegativeZeroRateIsZero) {
  const DriverConfig c = parse({"--lr=-0"});
  ASSERT_TRUE(c.lr.has_value());
  EXPECT_FALSE(std::signbit(*c.lr));
  StatusOr<std::unique_ptr<LrSchedule>> s = make_schedule(c, *c.lr, /*total_steps=*/10);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ((*s)->describe(), "ConstantLR(lr=0)");
  EXPECT_EQ((*s)->lr_at(0), 0);
}

TEST(Schedules, CycleTheMomentum) {
  auto momentum = [](const std::vector<std::string>& args, int64_t t) -> std::optional<double> {
    StatusOr<DriverConfig> c = parse_flags(args);
    EXPECT_TRUE(c.ok()) << c.error().to_string();
    StatusOr<std::unique_ptr<LrSchedule>> s = make_schedule(*c, /*base_lr=*/0.1, /*total_steps=*/100);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return (*s)->momentum_at(t);
  };
  EXPECT_EQ(momentum({"--schedule=onecycle"}, 0), 0.95);
  EXPECT_NEAR(*momentum({"--schedule=onecycle"}, 29), 0.85, 1e-12);  // at the lr's peak
  EXPECT_EQ(momentum({"--schedule=onecycle", "--base-momentum=0.5", "--max-momentum=0.99"}, 0), 0.99);
  EXPECT_NEAR(*momentum({"--schedule=onecycle", "--base-momentum=0.5"}, 29), 0.5, 1e-12);
  EXPECT_EQ(momentum({"--schedule=onecycle", "--no-cycle-momentum"}, 0), std::nullopt);
  EXPECT_EQ(momentum({"--schedule=cyclic", "--max-lr=0.5", "--step-size-up=4"}, 0), 0.9);
  EXPECT_DOUBLE_EQ(*momentum({"--schedule=cyclic", "--max-lr=0.5", "--step-size-up=4"}, 4), 0.8);
  EXPECT_EQ(momentum({"--schedule=cosine"}, 0), std::nullopt);
  EXPECT_EQ(momentum({"--schedule=onecycle", "--warmup-steps=5"}, 2), 0.95);  // the cycle's start

  EXPECT_EQ(error_of({"--base-momentum=0.8"}),
            "--base-momentum applies to --schedule=onecycle or cyclic, not --schedule=constant");
  EXPECT_EQ(error_of({"--schedule=cosine", "--no-cycle-momentum"}),
            "--no-cycle-momentum applies to --schedule=onecycle or cyclic, not --schedule=cosine");
  EXPECT_EQ(error_of({"--schedule=onecycle", "--no-cycle-momentum", "--max-momentum=0.9"}),
            "--max-momentum sets a bound of the momentum cycle, which --no-cycle-momentum turns off");
  EXPECT_EQ(error_of({"--schedule=onecycle", "--max-momentum=1.5"}), "--max-momentum=1.5: must be in [0, 1]");
}

}  // namespace
}  // namespace weft::driver
