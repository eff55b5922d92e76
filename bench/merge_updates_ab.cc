// The optimizer update as one kernel (passes/merge_updates.h) against one kernel per
// parameter, in one process: two Trainers of one bench model (Adam), compiled with and
// without $WEFT_MERGE_UPDATES, take turns for 12 rounds of 10 steps; prints the median
// and minimum step time and time of the in-place update invocations (from the
// executor's profile) of each.
//
//   bazel run //bench:merge_updates_ab -- transformer
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "bench/models.h"
#include "frontend/training.h"

using namespace weft;         // NOLINT: a small benchmark program
using namespace weft::bench;  // NOLINT

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

double uniform(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-1, 1)(rng); }

}  // namespace

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "mlp";
  auto m = make_bench_model(name, Preset::cpu);
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.error().to_string().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<Trainer>> t;
  for (const char* merge : {"1", "0"}) {
    setenv("WEFT_MERGE_UPDATES", merge, 1);
    auto tr = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr), {});
    if (!tr.ok()) {
      std::fprintf(stderr, "%s\n", tr.error().to_string().c_str());
      return 1;
    }
    t.push_back(std::make_unique<Trainer>(std::move(*tr)));
  }
  std::mt19937_64 rng(0);
  std::vector<Tensor> batch;
  for (const InputSpec& in : m->inputs) {
    Tensor x(in.type);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.set_double(i, m->token_range ? static_cast<double>(rng() % m->token_range) : uniform(rng));
    }
    batch.push_back(x);
  }
  Tensor y(m->target);
  const int64_t classes = m->token_range ? m->token_range : 10;
  for (int64_t i = 0; i < y.numel(); ++i) {
    y.set_double(i, m->target.dtype == DType::i64 ? static_cast<double>(rng() % classes) : 0.1);
  }
  batch.push_back(m->target_is_input ? batch[0] : y);
  for (auto& tr : t) {
    for (int s = 0; s < 5; ++s) {
      StatusOr<double> loss = tr->step(batch);
      if (!loss.ok()) {
        std::fprintf(stderr, "%s\n", loss.error().to_string().c_str());
        return 1;
      }
    }
  }
  std::vector<double> step_ms[2], upd_us[2];
  for (int r = 0; r < 12; ++r) {
    for (int k = 0; k < 2; ++k) {
      if (Status on = t[k]->set_profiling(true); !on.ok()) {
        std::fprintf(stderr, "%s\n", on.error().to_string().c_str());
        return 1;
      }
      auto start = std::chrono::steady_clock::now();
      for (int s = 0; s < 10; ++s) (void)t[k]->step(batch);
      const auto elapsed = std::chrono::steady_clock::now() - start;
      step_ms[k].push_back(std::chrono::duration<double, std::milli>(elapsed).count() / 10);
      // The report's second line: "  X us per step in N invocations writing ... in place".
      const std::string report = *t[k]->profile_report(/*top=*/0);  // set_profiling succeeded
      upd_us[k].push_back(std::stod(report.substr(report.find('\n') + 1)));
      (void)t[k]->set_profiling(false);
    }
  }
  for (int k = 0; k < 2; ++k) {
    std::printf("%s merge=%d: step median %.2f ms (min %.2f), update median %.0f us (min %.0f)\n",
                name.c_str(), 1 - k, median(step_ms[k]),
                *std::min_element(step_ms[k].begin(), step_ms[k].end()), median(upd_us[k]),
                *std::min_element(upd_us[k].begin(), upd_us[k].end()));
  }
}
