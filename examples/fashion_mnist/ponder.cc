// Fashion-MNIST with a classifier that refines its estimate until it is confident, per
// sample: the builder's loop_body(...).until_cond(...), halting each image on its own.
//
//   bazel run //examples/fashion_mnist:ponder -- --epochs=10
//
// The model is ponder_model.h's: an image halts once the classifier head gives its top
// class a probability above 0.9, or after 6 iterations. The halting decision gets no
// gradient; the head, shared by the condition and the output, is trained through the
// output, so images it learns to classify with confidence stop earlier. After training,
// the same modules with n as output count the iterations each test image ran: a
// histogram, and their mean against the maximum.
#include <cstdio>
#include <string>
#include <vector>

#include "examples/fashion_mnist/ponder_model.h"
#include "examples/fashion_mnist/train_loop.h"
#include "frontend/modules.h"

int main(int argc, char** argv) {
  using namespace weft;
  using namespace weft::examples;
  RunConfig config;
  config.name = "ponder";
  config.layout = ImageLayout::nchw;
  parse_flags(argc, argv, config);
  auto model = ponder_model();
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.error().to_string().c_str());
    return 1;
  }
  if (const int rc = train(model->net, config); rc != 0) return rc;

  // Iterations per test image, from the checkpoint train() saved.
  auto data = FashionMnist::load({.directory = config.driver.data_dir, .normalize = true, .layout = ImageLayout::nchw});
  auto counting = Trainer::compile(model->counter, {{"x", f32({config.batch, 1, 28, 28})}}, LossSpec::mse(),
                                   OptimizerSpec::sgd(0.0), {.backend = "cpu"});
  if (!data.ok() || !counting.ok()) {
    std::fprintf(stderr, "%s\n", (data.ok() ? counting.error() : data.error()).to_string().c_str());
    return 1;
  }
  auto loaded = counting->load(config.driver.checkpoint_out, {.subgraph = "ponder"});
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.error().to_string().c_str());
    return 1;
  }
  auto counts = counting->evaluate({data->test_set().images});
  if (!counts.ok()) {
    std::fprintf(stderr, "%s\n", counts.error().to_string().c_str());
    return 1;
  }
  std::vector<int64_t> histogram(kPonderMaxIterations + 1, 0);
  double total = 0;
  const std::vector<double> n = (*counts)[0].to_doubles();
  for (double v : n) {
    if (!(v >= 0 && v <= static_cast<double>(kPonderMaxIterations))) {
      std::fprintf(stderr, "error: ponder: an image's iteration count %g is outside 0..%lld\n", v,
                   static_cast<long long>(kPonderMaxIterations));
      return 1;
    }
    ++histogram[static_cast<size_t>(v)];
    total += v;
  }
  std::printf("iterations per test image (max %lld): mean %.2f\n", static_cast<long long>(kPonderMaxIterations),
              total / static_cast<double>(n.size()));
  for (int64_t k = 1; k <= kPonderMaxIterations; ++k) {
    std::printf("  %lld: %6lld images  %s\n", static_cast<long long>(k), static_cast<long long>(histogram[k]),
                std::string(static_cast<size_t>(60.0 * histogram[k] / static_cast<double>(n.size())), '#').c_str());
  }
  return 0;
}
