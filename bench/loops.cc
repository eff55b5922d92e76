// Looped against unrolled ([Control flow]): the suite's loop models (gru_seq, lstm_seq,
// feedback_fixed, iterative_refine) compiled for the cpu backend three times from the
// same model: each loop a loop invocation over its body Program (the default), the same
// with every loop's gradient recomputing its body's intermediates instead of stacking
// them (TrainOptions::recompute_loops), and unrolled in the Program
// (TrainOptions::unroll_loops); for each, the JIT compile time, the Program's size
// (invocations, the bodies' included, and kernels), its arena bytes (the bodies'
// included), the median step time, and the largest difference of the first steps'
// losses from the unrolled form's.
//
//   bazel run //bench:loops -- [--preset=cpu|paper] [--steps=20] [--models=a,b] [--profile]
//
// --profile also prints each form's per-invocation profile (a loop is one line).
//
// Figures go to bench/RESULTS.md by hand, with the machine and the date.
#include <algorithm>
#include <map>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "bench/models.h"
#include "bench/timed_run.h"

namespace weft::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}


struct Figures {
  double compile_ms = 0, step_ms = 0;
  int64_t invocations = 0, kernels = 0, arena = 0;
  std::vector<double> losses;
};

// A model's three forms: its loops as loop invocations, the same with every loop's
// gradient recomputing the body's intermediates (TrainOptions::recompute_loops), and
// unrolled in the Program.
enum class Form { looped, recompute, unrolled };
const char* form_name(Form f) { return f == Form::looped ? "looped" : f == Form::recompute ? "recompute" : "unrolled"; }

StatusOr<Figures> measure(const BenchModel& m, Form form, int steps, bool profile) {
  TrainOptions options{.seed = 1};
  options.unroll_loops = form == Form::unrolled;
  options.recompute_loops = form == Form::recompute;
  const auto start = Clock::now();
  WEFT_ASSIGN_OR_RETURN(Trainer t, Trainer::compile(m.net, m.inputs, m.loss, OptimizerSpec::adam(m.lr), options));
  Figures f;
  f.compile_ms = ms_since(start);
  const Program& p = t.compiled_step()->program();
  f.invocations = static_cast<int64_t>(p.code.size());
  f.arena = p.arena_bytes;
  for (const Program& b : p.bodies) {
    f.invocations += static_cast<int64_t>(b.code.size());
    f.arena += b.arena_bytes;
  }
  f.kernels = static_cast<int64_t>(p.kernels.size());
  std::mt19937_64 rng(7);
  std::vector<Tensor> batch;
  for (const InputSpec& in : m.inputs) batch.push_back(random_tensor(in.type, m.token_range, rng));
  batch.push_back(m.target_is_input ? batch[0] : random_tensor(m.target, m.token_range, rng));
  std::vector<double> times;
  for (int s = 0; s < steps + 3; ++s) {
    const auto at = Clock::now();
    WEFT_ASSIGN_OR_RETURN(double loss, t.step(batch));
    if (s >= 3) times.push_back(ms_since(at));
    if (s < 3) f.losses.push_back(loss);
  }
  std::sort(times.begin(), times.end());
  f.step_ms = times[times.size() / 2];
  if (profile) {
    WEFT_RETURN_IF_ERROR(t.set_profiling(true));
    for (int s = 0; s < steps; ++s) WEFT_RETURN_IF_ERROR(t.step(batch).status());
    WEFT_ASSIGN_OR_RETURN(std::string report, t.profile_report(/*top=*/12));
    std::printf("%s, %s:\n%s", m.name.c_str(), form_name(form), report.c_str());
  }
  return f;
}

int run(int argc, char** argv) {
  Preset preset = Preset::cpu;
  int steps = 20;
  bool profile = false;
  std::vector<std::string> models = {"gru_seq", "lstm_seq", "feedback_fixed", "iterative_refine"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--preset=", 0) == 0) {
      auto p = parse_preset(a.substr(9));
      if (!p.ok()) {
        std::fprintf(stderr, "loops: %s\n", p.error().message.c_str());
        return 2;
      }
      preset = *p;
    } else if (a.rfind("--steps=", 0) == 0) {
      steps = std::max(1, std::atoi(a.c_str() + 8));
    } else if (a == "--profile") {
      profile = true;
    } else if (a.rfind("--models=", 0) == 0) {
      models.clear();
      std::stringstream list(a.substr(9));
      for (std::string m; std::getline(list, m, ',');) models.push_back(m);
    } else {
      std::fprintf(stderr, "usage: loops [--preset=cpu|paper] [--steps=N] [--models=a,b,...] [--profile]\n");
      return 2;
    }
  }
  std::printf("preset %s, %d timed steps (median), cpu backend\n", to_string(preset), steps);
  std::printf("%-17s %-9s %11s %9s %11s %8s %13s %12s\n", "model", "form", "compile ms", "step ms",
              "invocations", "kernels", "arena bytes", "loss diff");
  for (const std::string& name : models) {
    auto m = make_bench_model(name, preset);
    if (!m.ok()) {
      std::fprintf(stderr, "loops: %s\n", m.error().message.c_str());
      return 2;
    }
    std::map<Form, Figures> figures;
    for (Form form : {Form::looped, Form::recompute, Form::unrolled}) {
      StatusOr<Figures> f = measure(*m, form, steps, profile);
      if (!f.ok()) {
        std::fprintf(stderr, "loops: %s (%s): %s\n", name.c_str(), form_name(form), f.error().to_string().c_str());
        return 1;
      }
      figures[form] = std::move(*f);
    }
    const Figures& unrolled = figures[Form::unrolled];
    for (const auto& [form, f] : figures) {
      double diff = 0;  // the first three losses, relative to the unrolled form's
      for (size_t s = 0; s < f.losses.size(); ++s) {
        diff = std::max(diff, std::abs(f.losses[s] - unrolled.losses[s]) / std::max(1e-30, std::abs(unrolled.losses[s])));
      }
      std::printf("%-17s %-9s %11.0f %9.3f %11lld %8lld %13lld %12.1e\n", name.c_str(), form_name(form), f.compile_ms,
                  f.step_ms, static_cast<long long>(f.invocations), static_cast<long long>(f.kernels),
                  static_cast<long long>(f.arena), diff);
    }
    const Figures& looped = figures[Form::looped];
    std::printf("%-17s recompute/looped: step time %.3f, arena %.3f\n", name.c_str(),
                figures[Form::recompute].step_ms / looped.step_ms,
                static_cast<double>(figures[Form::recompute].arena) / static_cast<double>(looped.arena));
    std::printf("%-17s looped/unrolled step time %.3f\n", name.c_str(), looped.step_ms / unrolled.step_ms);
  }
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::run(argc, argv); }
