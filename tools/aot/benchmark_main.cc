// NAME_benchmark of an AOT model target (tools/aot/weft.bzl): the training step compiled
// ahead of time against the same step compiled by the JIT Trainer, same model source,
// options and batches, in rounds that alternate between the two; prints the median step
// time of each. A program that prints figures: nothing is asserted.
//
//   bazel run //bench/aot:mlp_benchmark -- [--rounds=9] [--steps=20] [--threads=0]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "training/aot/compiled_model.h"
#include "tools/aot/batches.h"
#include "tools/aot/model.h"
#include "tools/aot/options.h"

namespace weft::aot {
namespace {

int fail(const std::string& m) {
  std::fprintf(stderr, "benchmark: %s\n", m.c_str());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run(int argc, char** argv) {
  int rounds = 9, steps = 20, threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--rounds=", 0) == 0) rounds = std::atoi(a.c_str() + 9);
    else if (a.rfind("--steps=", 0) == 0) steps = std::atoi(a.c_str() + 8);
    else if (a.rfind("--threads=", 0) == 0) threads = std::atoi(a.c_str() + 10);
    else return fail("unknown flag " + a + "; flags: --rounds=N --steps=N --threads=N");
  }
  if (rounds < 1 || steps < 1) return fail("--rounds and --steps must be positive");
  // A model compiled for a device this machine lacks: nothing to time.
  const ModelTable& table = linked_model_table();
  StatusOr<const Backend*> backend = find_backend(table.backend);
  if (!backend.ok()) return fail(backend.error().to_string());
  if ((*backend)->unavailable_reason && !(*backend)->unavailable_reason().empty()) {
    std::printf("%s: skipped: compiled for %s, which this machine cannot run: %s\n",
                table.name.c_str(), table.backend.c_str(), (*backend)->unavailable_reason().c_str());
    return 0;
  }
  auto t0 = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<driver::Trainable>> t = driver::make_compiled_model({.seed = 0, .bind = {.num_threads = threads}});
  if (!t.ok()) return fail(t.error().to_string());
  auto t1 = std::chrono::steady_clock::now();
  std::unique_ptr<CompiledModel> aot(dynamic_cast<CompiledModel*>(t->release()));
  std::istringstream flags(aot->table().options);
  std::vector<std::string> args;
  for (std::string s; flags >> s;) args.push_back(s);
  StatusOr<CompileOptions> options = parse_compile_options(args);
  if (!options.ok()) return fail(options.error().to_string());
  StatusOr<ModelSource> source = weft_model(options->batch, options->dtype);
  if (!source.ok()) return fail(source.error().to_string());
  StatusOr<Trainer> jit = Trainer::compile(source->net, source->inputs, *options->loss_spec(),
                                           *options->optimizer_spec(),
                                           {.seed = 0,
                                            .backend = table.backend,
                                            .bind = {.num_threads = threads},
                                            .fuse_attention = options->fuse_attention,
                                            .precision = options->precision});
  if (!jit.ok()) return fail(jit.error().to_string());
  auto t2 = std::chrono::steady_clock::now();

  const int64_t classes = aot->eval_outputs()[0].type.shape.dims.back();
  std::vector<std::vector<Tensor>> batches;
  std::vector<driver::TensorSpec> specs = aot->step_inputs();
  if (aot->inference_only()) {  // the eval inputs and a dummy target, dropped above
    specs = aot->eval_inputs();
    specs.push_back({"target", Type{DType::i64, {1}}});
  }
  for (int i = 0; i < 4; ++i) batches.push_back(random_batch(specs, source->token_range, classes, i));
  std::vector<double> aot_ms, jit_ms;
  auto time_steps = [&](auto&& step) {
    auto s = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      StatusOr<double> loss = step(batches[i % batches.size()]);
      if (!loss.ok()) std::abort();
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count() / steps;
  };
  // Inference-only libraries have no step: time the eval forward on the batch's inputs.
  const bool forward = aot->inference_only();
  auto aot_step = [&](const std::vector<Tensor>& b) -> StatusOr<double> {
    if (!forward) return aot->step(b);
    WEFT_RETURN_IF_ERROR(aot->evaluate({b.begin(), b.end() - 1}).status());
    return 0.0;
  };
  auto jit_step = [&](const std::vector<Tensor>& b) -> StatusOr<double> {
    if (!forward) return jit->step(b);
    WEFT_RETURN_IF_ERROR(jit->evaluate({b.begin(), b.end() - 1}).status());
    return 0.0;
  };
  time_steps(aot_step);  // warm-up
  time_steps(jit_step);
  for (int r = 0; r < rounds; ++r) {
    aot_ms.push_back(time_steps(aot_step));
    jit_ms.push_back(time_steps(jit_step));
  }
  const double a = median(aot_ms), j = median(jit_ms);
  std::printf("%s (%s)\n", aot->table().name.c_str(), aot->table().options.c_str());
  std::printf("  setup: AOT create %.1f ms, JIT Trainer::compile %.1f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  std::printf("  %s (median of %d rounds of %d): AOT %.3f ms (%.1f/s), JIT %.3f ms (%.1f/s), "
              "AOT/JIT time %.3f\n",
              forward ? "eval forward" : "training step", rounds, steps, a, 1e3 / a, j, 1e3 / j, a / j);
  return 0;
}

}  // namespace
}  // namespace weft::aot

int main(int argc, char** argv) { return weft::aot::run(argc, argv); }
