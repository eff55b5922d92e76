// Trains the 784-256-256-10 MLP of mlp_train_step.wir on Fashion-MNIST with SGD, one
// reference-interpreter execution of the whole training step per batch, and reports
// the loss, the time per step and the test accuracy after each epoch.
//
//   bazel run //examples/fashion_mnist:train_mlp -- --epochs=1
//
// The reference interpreter is weft's semantic oracle, not its fast path; this program
// shows that it is fast enough to train real models (and is the baseline later
// backends are measured against, see bench/RESULTS.md).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/text.h"
#include "passes/pipeline.h"
#include "training/data/dataset.h"
#include "training/data/fashion_mnist.h"
#include "training/driver/flags.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

struct Options {
  int64_t epochs = 1;
  int64_t max_steps = 0;  ///< Per epoch; 0: the whole epoch.
  double lr = 0.1;
  uint64_t seed = 0;
  std::string data = kFashionMnistDirectory;
};

constexpr int kBatch = 128;
constexpr int kPixels = 784;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T value_or_die(StatusOr<T> v) {
  if (!v.ok()) die(v.error().to_string());
  return std::move(v).value();
}

Graph load(const std::string& path) {
  std::ifstream in(path);
  if (!in) die("cannot read " + path + " (run this program with bazel run)");
  std::stringstream text;
  text << in.rdbuf();
  Graph g = value_or_die(parse_graph(text.str(), path));
  value_or_die(default_pipeline().run_until(g, "infer-types"));
  return g;
}

/// Rows `rows[0..count)` of a split's columns (u8 images, labels) as f32[count, 784]
/// images in [0, 1] and i64[count] labels, gathered as the driver's batches are.
std::vector<Tensor> gather(const std::vector<Column>& split, const int64_t* rows, int64_t count) {
  std::vector<Tensor> out{Tensor(Type{DType::f32, {count, kPixels}}), Tensor(Type{DType::i64, {count}})};
  gather_batch(split, rows, count, /*rank=*/0, /*world=*/1, out);
  return out;
}

/// PyTorch's nn.Linear initialization: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
std::vector<Tensor> init_params(uint64_t seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> params;
  const int sizes[] = {kPixels, 256, 256, 10};
  for (int layer = 0; layer < 3; ++layer) {
    int in = sizes[layer], out = sizes[layer + 1];
    std::uniform_real_distribution<float> u(-1.0f / std::sqrt(float(in)), 1.0f / std::sqrt(float(in)));
    Tensor w(Type{DType::f32, {in, out}}), b(Type{DType::f32, {out}});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = u(rng);
    for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = u(rng);
    params.push_back(std::move(w));
    params.push_back(std::move(b));
  }
  return params;
}

double evaluate(const Graph& eval, const FashionMnist& data, const std::vector<Tensor>& params) {
  std::vector<int64_t> all(static_cast<size_t>(data.test_size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  std::vector<Tensor> inputs = gather(data.test_columns(), all.data(), data.test_size());
  inputs.insert(inputs.end(), params.begin(), params.end());
  auto result = value_or_die(reference::run(eval, std::move(inputs)));
  return result.outputs[0].get_double(0);
}

/// The flags it shares with the training binaries, read by their parser (the same values,
/// checks and messages); --steps is the older name of --max-steps.
Options parse_options(int argc, char** argv) {
  driver::FlagSet set;
  set.shared = {"data", "epochs", "max-steps", "seed", "lr", "help"};
  set.defaults = {{"lr", "0.1"}};
  int64_t steps = -1;  // not given
  set.own.push_back(driver::whole_number_flag("steps", "the same as --max-steps", &steps, 0));
  set.own.back().default_text = "0";
  StatusOr<driver::DriverConfig> d = driver::parse_flags(std::vector<std::string>(argv + 1, argv + argc), set);
  if (!d.ok()) {
    std::fprintf(stderr, "%s\n", d.error().to_string().c_str());
    std::exit(2);  // a bad command line, as the training binaries' kExitUsage
  }
  if (d->help) {
    std::printf("%s", driver::help_text("train_mlp",
                                        "Trains a 784-256-256-10 MLP on Fashion-MNIST with SGD, one reference-"
                                        "interpreter run of the training step per batch.\n",
                                        set)
                          .c_str());
    std::exit(0);
  }
  return Options{.epochs = d->epochs,
                 .max_steps = steps >= 0 ? steps : d->max_steps,
                 .lr = *d->lr,
                 .seed = d->seed,
                 .data = d->data_dir};
}

int main_impl(int argc, char** argv) {
  Options options = parse_options(argc, argv);
  Graph step = load("examples/fashion_mnist/mlp_train_step.wir");
  Graph eval = load("examples/fashion_mnist/mlp_eval.wir");
  FashionMnistOptions data_options;  // u8 columns gathered as [0, 1] pixels; shuffled here below
  data_options.directory = options.data;
  FashionMnist data = value_or_die(FashionMnist::load(data_options));
  std::vector<Tensor> params = init_params(options.seed);
  std::mt19937 shuffle_rng(options.seed + 1);
  std::vector<int64_t> order(data.train_size());
  std::iota(order.begin(), order.end(), 0);
  std::printf("training a 784-256-256-10 MLP on Fashion-MNIST: batch %d, SGD lr %g, "
              "reference interpreter\n", kBatch, options.lr);

  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    int64_t steps = data.train_size() / kBatch;  // the last partial batch is dropped
    if (options.max_steps > 0) steps = std::min<int64_t>(steps, options.max_steps);
    std::vector<double> step_ms;
    double loss_sum = 0;
    auto epoch_start = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < steps; ++s) {
      std::vector<Tensor> inputs = gather(data.train_columns(), order.data() + s * kBatch, kBatch);
      inputs.reserve(9);
      for (Tensor& p : params) inputs.push_back(std::move(p));
      inputs.push_back(Tensor::scalar(DType::f32, options.lr));

      auto t0 = std::chrono::steady_clock::now();
      auto result = value_or_die(reference::run(step, std::move(inputs)));
      step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

      loss_sum += result.outputs[0].get_double(0);
      for (size_t i = 0; i < params.size(); ++i) params[i] = std::move(result.updated[i].second);
    }
    double epoch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    std::sort(step_ms.begin(), step_ms.end());
    double accuracy = evaluate(eval, data, params);
    std::printf("epoch %lld: %lld steps, mean loss %.4f, median step %.1f ms, epoch %.1f s, "
                "test accuracy %.4f\n",
                static_cast<long long>(epoch), static_cast<long long>(steps), loss_sum / steps, step_ms[step_ms.size() / 2],
                epoch_s, accuracy);
  }
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::main_impl(argc, argv); }
