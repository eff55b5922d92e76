// Looped against unrolled ([Control flow]) and the loop overhead per iteration (#31): the
// suite's loop models (gru_seq, lstm_seq, feedback_fixed, iterative_refine) compiled three
// times from the same model: each loop a loop invocation over its body Program (the
// default), the same with every loop's gradient recomputing its body's intermediates
// instead of stacking them (TrainOptions::recompute_loops), and unrolled in the Program
// (TrainOptions::unroll_loops); for each, the JIT compile time, the Program's size
// (invocations, the bodies' included, and kernels), its arena bytes (the bodies'
// included), the median step time, the largest difference of the first steps' losses
// from the unrolled form's, the loop trips per step (every loop invocation's length, the
// backward's loops included) and the overhead per trip.
//
//   bazel run //bench:loops -- [--device=cpu|cuda] [--preset=cpu|paper] [--steps=20]
//                              [--models=a,b] [--profile]
//
// The overhead per trip (bench/loops_overhead.h), two ways:
//  - difference: (the form's median step − the unrolled form's) / the form's trips per step;
//  - direct, one line per loop invocation: the step's profile line for the loop (cpu:
//    cpu::Executor's profile; cuda: CUDA events launch by launch) minus `length` runs of
//    its body, the body Program bound alone on the same device and timed with the same
//    clock (cpu: around whole runs; cuda: the events of bench/loops_cuda_profile.h),
//    divided by `length`.
// On the cpu the clock is wall time, or with WEFT_PROFILE_CLOCK=thread the calling
// thread's CPU time — for the step times too. With WEFT_NUM_THREADS=1 every kernel runs on
// that thread, and the figures hardly move when other processes load the machine:
//
//   WEFT_NUM_THREADS=1 WEFT_PROFILE_CLOCK=thread bazel run //bench:loops -- --models=feedback_fixed
//
// --device=cuda runs the three forms on the GPU through the CUDA target
// (TrainOptions::unroll_loops reaches the CUDA lowering as it reaches the CPU's). It
// needs this binary's build (MLIR) on a machine with an NVIDIA GPU; without one it stops
// with the reason. The GPU machines lent to weft's sessions have no MLIR:
// tests/cuda/loop_overhead_check.sh runs //bench:loops_cuda there, the same direct method
// on the AOT CUDA libraries.
//
// --profile also prints each form's per-invocation profile (cpu; a loop is one line).
//
// Figures go to bench/RESULTS.md by hand, with the machine, the date and the load.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>
#include <random>
#include <sstream>

#include "bench/loops_cuda_profile.h"
#include "bench/loops_overhead.h"
#include "bench/models.h"
#include "bench/timed_run.h"
#include "codegen/cuda_program.h"
#include "codegen/kernel_compiler.h"
#include "runtime/cpu/executor.h"
#include "runtime/cuda/executor.h"

namespace weft::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The clock of the step times and of a body alone, in microseconds: cpu::Executor's
// profile clock (WEFT_PROFILE_CLOCK=thread: the calling thread's CPU time; else wall time).
struct StepClock {
  bool thread = false;
  static StepClock from_environment(const std::string& device) {
    const char* clock = std::getenv("WEFT_PROFILE_CLOCK");
    return {.thread = device == "cpu" && clock != nullptr && std::string_view(clock) == "thread"};
  }
  double now_us() const {
    if (!thread) return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return 1e6 * static_cast<double>(ts.tv_sec) + 1e-3 * static_cast<double>(ts.tv_nsec);
  }
  const char* name() const { return thread ? "the calling thread's CPU time" : "wall time"; }
};

struct Figures {
  double compile_ms = 0, step_ms = 0;
  int64_t invocations = 0, kernels = 0, arena = 0, trips = 0;
  std::vector<double> losses;
  std::vector<LoopCost> loops;  ///< The direct method, per loop invocation.
  /// The executor's describe() line of each of `loops` (cpu: its copies per iteration).
  std::vector<std::string> described;
};

// A model's three forms: its loops as loop invocations, the same with every loop's
// gradient recomputing the body's intermediates (TrainOptions::recompute_loops), and
// unrolled in the Program.
enum class Form { looped, recompute, unrolled };
const char* form_name(Form f) { return f == Form::looped ? "looped" : f == Form::recompute ? "recompute" : "unrolled"; }

// The step's generated kernels as the JIT compiled them (KernelCompiler's cache: the
// Trainer compiled the same bodies in this process), for a body bound alone.
StatusOr<std::vector<GeneratedFn>> cpu_kernels(const Program& p) {
  std::vector<GeneratedFn> fns;
  for (const GeneratedKernel& k : p.kernels) {
    WEFT_ASSIGN_OR_RETURN(const codegen::CompiledKernel* compiled, codegen::KernelCompiler::global().compile(k.body, k.kind));
    fns.push_back(compiled->fn);
  }
  return fns;
}

// The direct method on the cpu: `steps` profiled steps of the Trainer's executor, and each
// body bound alone on as many threads, timed over as many runs as the loop makes of it in
// those steps (whole runs, on the profile's clock).
StatusOr<std::vector<LoopCost>> cpu_loop_costs(Trainer& t, const std::vector<Tensor>& batch, int steps,
                                               const StepClock& clock) {
  auto* ex = dynamic_cast<cpu::Executor*>(t.compiled_step());
  if (ex == nullptr) return Error{"loops: the cpu step is not a cpu::Executor"};
  ex->set_profiling(true);
  for (int s = 0; s < steps; ++s) WEFT_RETURN_IF_ERROR(t.step(batch).status());
  const std::vector<double> root_us = ex->profile_us_per_step();
  ex->set_profiling(false);
  WEFT_ASSIGN_OR_RETURN(std::vector<GeneratedFn> fns, cpu_kernels(ex->program()));
  const int threads = ex->pool().num_threads();
  int64_t runs = 1;  // per step: as many as the longest loop makes
  for (const LoopSite& site : loop_sites(ex->program())) runs = std::max(runs, site.length);
  runs *= steps;
  return loop_costs(ex->program(), root_us, [&](const Program& body) -> StatusOr<double> {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Executor> alone,
                          cpu::Executor::create(body, fns, {.num_threads = threads}));
    WEFT_RETURN_IF_ERROR(alone->run());  // a first run: caches and pool warm
    const double start = clock.now_us();
    for (int64_t r = 0; r < runs; ++r) WEFT_RETURN_IF_ERROR(alone->run());
    return (clock.now_us() - start) / static_cast<double>(runs);
  });
}

// The direct method on the GPU: the Trainer's cuda executor profiled launch by launch,
// each body bound alone with the step's PTX (compiled again: the same lowering, checked).
StatusOr<std::vector<LoopCost>> cuda_loop_costs(Trainer& t, int steps) {
  auto* ex = dynamic_cast<cuda::Executor*>(t.compiled_step());
  if (ex == nullptr) return Error{"loops: the cuda step is not a cuda::Executor"};
  WEFT_ASSIGN_OR_RETURN(codegen::CudaProgram cp, codegen::compile_cuda_program(t.step_graph()));
  if (cp.program.to_string() != ex->program().to_string()) {
    return Error{"loops: compile_cuda_program gave another Program than the Trainer's step; no body PTX to bind"};
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<double> root_us, cuda_profile_us(*ex, steps));
  return loop_costs(ex->program(), root_us, cuda_body_timer(std::move(cp.ptx), std::move(cp.symbols), steps));
}

StatusOr<Figures> measure(const BenchModel& m, Form form, const std::string& device, int steps, bool profile,
                          const StepClock& clock) {
  TrainOptions options{.seed = 1};
  options.backend = device;
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
  f.trips = trips_per_step(p);
  std::mt19937_64 rng(7);
  std::vector<Tensor> batch;
  for (const InputSpec& in : m.inputs) batch.push_back(random_tensor(in.type, m.token_range, rng));
  batch.push_back(m.target_is_input ? batch[0] : random_tensor(m.target, m.token_range, rng));
  std::vector<double> times;
  for (int s = 0; s < steps + 3; ++s) {
    const double at = clock.now_us();
    WEFT_ASSIGN_OR_RETURN(double loss, t.step(batch));
    if (s >= 3) times.push_back((clock.now_us() - at) / 1e3);
    if (s < 3) f.losses.push_back(loss);
  }
  std::sort(times.begin(), times.end());
  f.step_ms = times[times.size() / 2];
  if (f.trips > 0) {
    if (device == "cuda") {
      WEFT_ASSIGN_OR_RETURN(f.loops, cuda_loop_costs(t, steps));
    } else {
      WEFT_ASSIGN_OR_RETURN(f.loops, cpu_loop_costs(t, batch, steps, clock));
    }
    std::vector<std::string> lines;
    std::stringstream described(t.compiled_step()->describe());
    for (std::string line; std::getline(described, line);) lines.push_back(line);
    for (const LoopCost& c : f.loops) f.described.push_back(c.site.invocation < lines.size() ? lines[c.site.invocation] : "");
  }
  if (profile && device == "cpu") {
    WEFT_RETURN_IF_ERROR(t.set_profiling(true));
    for (int s = 0; s < steps; ++s) WEFT_RETURN_IF_ERROR(t.step(batch).status());
    WEFT_ASSIGN_OR_RETURN(std::string report, t.profile_report(/*top=*/12));
    std::printf("%s, %s:\n%s", m.name.c_str(), form_name(form), report.c_str());
  }
  return f;
}

// The largest difference of the first three losses from `base`'s, relative to base's.
double loss_difference(const Figures& f, const Figures& base) {
  double diff = 0;
  for (size_t s = 0; s < f.losses.size() && s < base.losses.size(); ++s) {
    diff = std::max(diff, std::abs(f.losses[s] - base.losses[s]) / std::max(1e-30, std::abs(base.losses[s])));
  }
  return diff;
}

// One model's table rows, its loops' lines (the direct method) and its ratios.
void print_model(const std::string& name, const std::map<Form, Figures>& figures) {
  const Figures& base = figures.at(Form::unrolled);
  for (const auto& [form, f] : figures) {
    char overhead[32] = "-";
    if (f.trips > 0) {
      std::snprintf(overhead, sizeof(overhead), "%.3f",
                    difference_overhead_per_trip(f.step_ms * 1e3, base.step_ms * 1e3, f.trips));
    }
    std::printf("%-17s %-9s %11.0f %9.3f %11lld %8lld %13lld %12.1e %6lld %12s\n", name.c_str(), form_name(form),
                f.compile_ms, f.step_ms, static_cast<long long>(f.invocations), static_cast<long long>(f.kernels),
                static_cast<long long>(f.arena), loss_difference(f, base), static_cast<long long>(f.trips), overhead);
  }
  for (const auto& [form, f] : figures) {
    for (size_t i = 0; i < f.loops.size(); ++i) {
      std::printf("%s    %s\n", format_loop_cost(name, form_name(form), f.loops[i]).c_str(), f.described[i].c_str());
    }
  }
  const Figures& looped = figures.at(Form::looped);
  const Figures& recompute = figures.at(Form::recompute);
  std::printf("%-17s recompute/looped: step time %.3f, arena %.3f\n", name.c_str(), recompute.step_ms / looped.step_ms,
              static_cast<double>(recompute.arena) / static_cast<double>(looped.arena));
  std::printf("%-17s looped/unrolled step time %.3f\n", name.c_str(), looped.step_ms / base.step_ms);
}

int run(int argc, char** argv) {
  Preset preset = Preset::cpu;
  std::string device = "cpu";
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
    } else if (a.rfind("--device=", 0) == 0) {
      device = a.substr(9);
      if (device != "cpu" && device != "cuda") {
        std::fprintf(stderr, "loops: --device=%s: one of cpu, cuda\n", device.c_str());
        return 2;
      }
    } else if (a.rfind("--steps=", 0) == 0) {
      steps = std::max(1, std::atoi(a.c_str() + 8));
    } else if (a == "--profile") {
      profile = true;
    } else if (a.rfind("--models=", 0) == 0) {
      models.clear();
      std::stringstream list(a.substr(9));
      for (std::string m; std::getline(list, m, ',');) models.push_back(m);
    } else {
      std::fprintf(stderr,
                   "usage: loops [--device=cpu|cuda] [--preset=cpu|paper] [--steps=N] [--models=a,b,...] [--profile]\n");
      return 2;
    }
  }
  if (device == "cuda" && !cuda::available()) {
    std::fprintf(stderr,
                 "loops: --device=cuda needs an NVIDIA GPU, and this machine has none (%s); "
                 "tests/cuda/loop_overhead_check.sh measures the same on a GPU machine\n",
                 cuda::unavailable_reason().c_str());
    return 2;
  }
  const std::vector<Form> forms = {Form::looped, Form::recompute, Form::unrolled};
  const StepClock clock = StepClock::from_environment(device);
  std::printf("preset %s, %d timed steps (median, %s), %s backend\n%s", to_string(preset), steps, clock.name(),
              device.c_str(), overhead_method_note().c_str());
  std::printf("%-17s %-9s %11s %9s %11s %8s %13s %12s %6s %12s\n", "model", "form", "compile ms", "step ms",
              "invocations", "kernels", "arena bytes", "loss diff", "trips", "us/trip diff");
  for (const std::string& name : models) {
    auto m = make_bench_model(name, preset);
    if (!m.ok()) {
      std::fprintf(stderr, "loops: %s\n", m.error().message.c_str());
      return 2;
    }
    std::map<Form, Figures> figures;
    for (Form form : forms) {
      StatusOr<Figures> f = measure(*m, form, device, steps, profile, clock);
      if (!f.ok()) {
        std::fprintf(stderr, "loops: %s (%s): %s\n", name.c_str(), form_name(form), f.error().to_string().c_str());
        return 1;
      }
      figures[form] = std::move(*f);
    }
    print_model(name, figures);
  }
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::run(argc, argv); }
