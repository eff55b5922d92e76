// The examples' flags (a FlagSet of the driver's parser and their own) and the factory
// that JIT-compiles their network for the training driver's loop.
#include "examples/fashion_mnist/train_loop.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <source_location>
#include <vector>

#include "frontend/jit_trainable.h"
#include "runtime/collective/world.h"
#include "training/driver/driver.h"

namespace weft::examples {
namespace {

/// The test split is evaluated in batches of this many images.
constexpr int64_t kEvalBatch = 1000;

/// The shape of `rows` images in `layout`.
Shape image_shape(ImageLayout layout, int64_t rows) {
  return layout == ImageLayout::flat ? Shape{rows, FashionMnist::kPixels} : Shape{rows, 1, 28, 28};
}

/// `x` as the shortest text that reads back as `x` ("0.001").
std::string shortest(double x) {
  char text[32];
  const std::to_chars_result r = std::to_chars(text, text + sizeof(text), x);
  return std::string(text, r.ptr);
}

/// A flag without a value that sets `*into` to `value`.
driver::ProgramFlag switch_flag(const std::string& name, const std::string& help, bool* into, bool value) {
  return {name, "", "off", help, [into, value](driver::DriverConfig&, const std::string&) -> Status {
            *into = value;
            return Status();
          }};
}

/// The driver's ModelFactory for `net`: Adam and cross-entropy on this rank's batch/N rows
/// of each batch (the driver's global batch is then --batch), evaluated kEvalBatch images
/// at a time.
StatusOr<std::unique_ptr<driver::Trainable>> make_model(
    const FlowPtr& net, const RunConfig& c, const driver::ModelOptions& made,
    std::source_location where = std::source_location::current()) {
  const std::shared_ptr<collective::Communicator>& comm = made.bind.communicator;
  const int rank = comm ? comm->rank() : 0;
  const int world = comm ? comm->world_size() : 1;
  if (c.batch % world != 0) {
    return collective::shard_batch(Tensor(Type{DType::f32, {c.batch}}), rank, world).error();
  }
  TrainOptions options;
  options.seed = made.seed;
  options.backend = c.backend;
  options.cuda_graph = c.cuda_graph;
  options.bind = made.bind;
  options.check_numerics = c.driver.check_numerics;  // refused at compile time where unsupported
  options.precision = c.driver.precision;
  const Shape input = image_shape(c.layout, c.batch / world);
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<JitTrainable> model,
                        JitTrainable::compile(net, {{"x", Type{DType::f32, input}}}, LossSpec::cross_entropy(),
                                              OptimizerSpec::adam(c.lr), options, kEvalBatch, where));
  return std::unique_ptr<driver::Trainable>(std::move(model));
}

/// --resume and --checkpoint-in (the same flag) naming two checkpoints: one was silently
/// ignored.
Error resume_conflict(const driver::DriverConfig& d, const RunConfig& c) {
  return Error{"--resume=" + c.resume + " and --checkpoint-in=" + d.checkpoint_in +
               " name different checkpoints (--resume is --checkpoint-in); give one"};
}

/// The examples' command line: the flags shared with the training binaries, with `c`'s
/// values as their defaults, then the examples' own, which store into `c`.
driver::FlagSet example_flags(RunConfig& c, bool allow_bn) {
  driver::FlagSet set;
  set.shared = {"data",   "epochs",      "max-steps",      "seed",           "lr",
                "checkpoint-in", "partial-load", "checkpoint-out", "metrics-csv", "report",
                "serve",  "log-every",   "check-numerics", "profile",        "precision",
                "tf32",
                "collective-timeout", "bucket-mb", "first-bucket-mb", "help"};
  set.defaults = {{"data", c.driver.data_dir},
                  {"epochs", std::to_string(c.epochs)},
                  {"max-steps", std::to_string(c.driver.max_steps)},
                  {"seed", std::to_string(c.driver.seed)},
                  {"lr", shortest(c.lr)},
                  {"checkpoint-out", c.name + ".safetensors"},
                  {"log-every", std::to_string(c.driver.log_every)}};
  set.own.push_back(driver::whole_number_flag("batch", "examples per training step", &c.batch, 1,
                                              std::numeric_limits<int>::max()));
  set.own.push_back({"backend", "NAME", c.backend, "where the step runs: cpu, cuda or reference",
                     [&c](driver::DriverConfig&, const std::string& v) -> Status {
                       if (v.empty()) return Error{"--backend needs a name: --backend=NAME"};
                       c.backend = v;
                       return Status();
                     }});
  set.own.push_back(switch_flag("no-cuda-graph",
                                "--backend=cuda: launch kernel by kernel, not one CUDA graph per step",
                                &c.cuda_graph, false));
  set.own.push_back({"resume", "PATH", "none", "the same as --checkpoint-in",
                     [&c](driver::DriverConfig&, const std::string& v) -> Status {
                       if (v.empty()) return Error{"--resume needs a path: --resume=PATH"};
                       c.resume = resolve_path(v);  // parse_flags sets d.checkpoint_in from it
                       return Status();
                     }});
  // Sets the driver's --data-parallel, whose help differs: there each rank takes a whole
  // model batch, here the ranks share one --batch (make_model compiles batch/N rows).
  set.own.push_back({"data-parallel", "", "off",
                     "under mpirun -np N, srun or the torchrun variables (RANK, WORLD_SIZE, "
                     "MASTER_ADDR, MASTER_PORT): each rank trains on batch/N rows of every batch, "
                     "gradients averaged over the ranks; rank 0 alone prints and saves",
                     [](driver::DriverConfig& d, const std::string&) -> Status {
                       d.data_parallel = true;
                       return Status();
                     }});
  if (allow_bn) set.own.push_back(switch_flag("bn", "batch normalization after each convolution", &c.bn, true));
  return set;
}

}  // namespace

void parse_flags(int argc, char** argv, RunConfig& c, bool allow_bn) {
  const driver::FlagSet set = example_flags(c, allow_bn);
  const std::string program = c.name.empty() ? "train" : c.name;
  StatusOr<driver::DriverConfig> d = driver::parse_flags(std::vector<std::string>(argv + 1, argv + argc), set);
  if (d.ok() && !c.resume.empty()) {
    if (d->checkpoint_in.empty()) {
      d->checkpoint_in = c.resume;
    } else if (d->checkpoint_in != c.resume) {
      d = resume_conflict(*d, c);
    }
  }
  if (!d.ok()) {
    std::fprintf(stderr, "%s\n", d.error().to_string().c_str());
    std::exit(2);  // a bad command line, as the driver's kExitUsage
  }
  if (d->help) {
    std::printf("%s", driver::help_text(program,
                                        "Trains " + program + " on Fashion-MNIST with Adam (JIT-compiled at "
                                        "startup), reporting the test accuracy after every epoch.\n"
                                        "Exit status: 0 done, 1 a file or the run failed, 2 a bad command line, "
                                        "130/143 stopped by SIGINT/SIGTERM (after the current step and "
                                        "--checkpoint-out).\n",
                                        set)
                          .c_str());
    std::exit(0);
  }
  c.lr = *d->lr;  // set: the defaults give it
  c.driver = std::move(*d);
  c.driver.shuffle_seed = c.driver.seed;  // the examples shuffle with --seed
}

int train(const FlowPtr& net, const RunConfig& c) {
  const driver::ModelFactory factory = [&net, &c](const driver::ModelOptions& options) {
    return make_model(net, c, options);
  };
  return driver::run_training(c.driver, c.name, factory, stdout, stderr,
                              {.backend = c.backend,
                               .precision = {},
                               .launched_by_a_launcher = collective::launched_by_a_launcher,
                               .world_from_environment = collective::world_from_environment,
                               .local_rank = collective::local_rank});
}

}  // namespace weft::examples
