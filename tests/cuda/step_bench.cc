// Times the training-step cases of cases.h on the GPU ([CUDA]): for each, replayed as one
// CUDA graph and launch by launch, the median wall time of one step (the step count
// written, then run(): every invocation, the updates, the final synchronize) over
// --steps steps after --warmup, and what still runs on the host. The PyTorch peer for
// mlp784_adam_step is bench/pytorch/cuda_mlp.py, run in the same session on the same
// GPU (bench/RESULTS.md, "CUDA"). Prints the reason and exits 0 without a GPU.
//
//   step_bench [--steps=50] [--warmup=5] [--case=NAME] [--program] [--profile=TOP]
//              [--conv=deterministic|exact|fastest] [--init=DIR] [--check=CASE]
//
// --init=DIR: a case with DIR/NAME.safetensors (an INIT file, bench/PROTOCOL.md: the
// weights under weft's names, `input.K`, `target`; bench/pytorch/run.py --init-out writes
// it) starts from its values instead of seeded ones, as bench/pytorch/cuda_suite.py
// --init=DIR does on PyTorch's side, so the first-step losses compare.
// --program prints each case's Program listing instead (no GPU needed); --profile=TOP
// prints, launch by launch, the TOP costliest invocations of one more step (CUDA events)
// and the TOP costliest kinds of invocation (the same description: one GEMM shape, one
// kernel, one cuDNN call) with their counts, and each GEMM's achieved TFLOP/s (tensor-core
// ones: bf16gemm, hgemm, tf32); --conv picks ExecutorOptions::convolutions; --tf32 sets
// ExecutorOptions::tf32 (f32 GEMMs and convolutions on TF32 tensor cores).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/timed_run.h"
#include "runtime/binding.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/plan.h"
#include "runtime/reference/interpreter.h"
#include "tests/cuda/case_inputs.h"
#include "tests/cuda/cases.h"

namespace weft::cuda_cases {
namespace {

/// Sets `inputs` (indexed like g's inputs) from INIT file `path` (bench/timed_run.h's
/// load_init): every parameter and model state by name (not the optimizer's slots, the
/// generator state or the step's weft.* inputs), then `input.K` and `target` into
/// `input.K` and `weft.target` (absent: the target is input.0 itself, as conv_autoenc's).
Status load_init_file(const Graph& g, const std::string& model, const std::string& path,
                      std::vector<Tensor>& inputs) {
  bench::InitLayout layout;
  layout.model = model;
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Input& in = g.inputs()[i];
    const std::string& name = g.value(in.value).name;
    at[name] = i;
    const Type& type = g.type(in.value);
    if (in.kind == InputKind::param ||
        (in.kind == InputKind::state && name.rfind("optimizer.", 0) != 0 && name != "rng")) {
      layout.values.push_back({name, type});
    }
  }
  for (int k = 0; at.count("input." + std::to_string(k)); ++k) {
    const std::string name = "input." + std::to_string(k);
    layout.inputs.push_back({name, g.type(g.inputs()[at[name]].value)});
  }
  if (layout.inputs.empty()) return Error{path + ": the step has no input.0"};
  layout.target_is_input = !at.count("weft.target");
  layout.target = {"target", layout.target_is_input
                                 ? layout.inputs[0].type
                                 : g.type(g.inputs()[at["weft.target"]].value)};
  StatusOr<std::vector<Tensor>> batch =
      bench::load_init(path, layout, [&](const std::string& name, const Tensor& value) {
        inputs[at.at(name)] = value;
        return Status::ok_status();
      });
  if (!batch.ok()) return batch.error();
  for (size_t k = 0; k < layout.inputs.size(); ++k) inputs[at[layout.inputs[k].name]] = (*batch)[k];
  if (!layout.target_is_input) inputs[at["weft.target"]] = batch->back();
  return Status::ok_status();
}

// --check=CASE: one step of CASE (and of CASE@unrolled, when there is one) on the GPU
// against the reference interpreter from the same seeded inputs: the loss, and per
// updated input (parameters, optimizer slots) the largest difference relative to the
// interpreter's largest magnitude. A diagnosis of a case that trains differently.
int check(const std::string& name) {
  for (const std::string& which : {name, name + "@unrolled"}) {
    const Case* c = nullptr;
    for (const Case& k : all_cases()) c = k.name == which ? &k : c;
    if (c == nullptr) continue;
    const Graph g = parse_case(*c);
    std::vector<Tensor> inputs = make_inputs(g, 7);
    set_step(g, inputs, 0);
    StatusOr<std::unique_ptr<cuda::Executor>> ex = cuda::Executor::create(c->program(), c->ptx, c->symbols);
    if (!ex.ok()) {
      std::fprintf(stderr, "%s: %s\n", which.c_str(), ex.error().to_string().c_str());
      return 1;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (Status s = (*ex)->set_input(static_cast<int>(i), inputs[i]); !s.ok()) return 1;
    }
    if (Status s = (*ex)->run(); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", which.c_str(), s.to_string().c_str());
      return 1;
    }
    // Three steps, each checked; the reference's next step starts from its own updates.
    for (int step = 0; step < 3; ++step) {
      if (step > 0) {
        set_step(g, inputs, step);
        const int at = (*ex)->find_input("weft.step");
        if (at >= 0 && !(*ex)->set_input(at, inputs[static_cast<size_t>(at)]).ok()) return 1;
        if (Status s = (*ex)->run(); !s.ok()) {
          std::fprintf(stderr, "%s: %s\n", which.c_str(), s.to_string().c_str());
          return 1;
        }
      }
      auto want = reference::run(g, inputs);
      if (!want.ok()) {
        std::fprintf(stderr, "%s: %s\n", which.c_str(), want.error().to_string().c_str());
        return 1;
      }
      std::printf("check %-22s step %d loss gpu %.7f reference %.7f\n", which.c_str(), step,
                  (*ex)->output(0).get_double(0), want->outputs[0].get_double(0));
      for (const auto& [input, value] : want->updated) {
        const int at = (*ex)->find_input(input);
        const Tensor got = (*ex)->input(at);
        double most = 0, diff = 0;
        for (int64_t e = 0; e < value.numel(); ++e) {
          most = std::max(most, std::abs(value.get_double(e)));
          diff = std::max(diff, std::abs(got.get_double(e) - value.get_double(e)));
        }
        const double rel = diff / (most > 0 ? most : 1);
        if (rel > 1e-3 || input.find('.') == 1) {
          std::printf("check %-22s step %d %-40s %s max|diff| %.3g (relative %.3g)\n", which.c_str(), step,
                      input.c_str(), rel > 1e-3 ? "DIFFERS" : "agrees ", diff, rel);
        }
        inputs[static_cast<size_t>(at)] = value;
      }
    }
  }
  return 0;
}

/// The command line (the file's comment).
struct Options {
  int steps = 50, warmup = 5, top = 0;
  std::string only, init_dir, check_case;
  bool listing = false, tf32 = false, help = false;
  cuda::ConvPolicy conv = cuda::ConvPolicy::deterministic;

  /// Whether case `c` is timed: a training case (two steps or more), the one --case names if any.
  bool times(const Case& c) const { return c.steps >= 2 && (only.empty() || c.name == only); }
};

constexpr const char* kUsage =
    "usage: step_bench [--steps=N] [--warmup=N] [--case=NAME] [--program] [--profile=TOP] "
    "[--conv=deterministic|exact|fastest] [--tf32] [--init=DIR] [--check=CASE]\n";

constexpr const char* kHelp =
    "Times the training-step cases of tests/cuda/cases.h on the GPU: for each, the median\n"
    "wall time of one step replayed as one CUDA graph and launch by launch, and what still\n"
    "runs on the host. Without a GPU it prints the reason and exits 0.\n"
    "  --steps=N        timed steps (default 50)\n"
    "  --warmup=N       warm-up steps (default 5)\n"
    "  --case=NAME      only this case (--program lists the training cases)\n"
    "  --program        print each case's Program listing instead (no GPU needed)\n"
    "  --profile=TOP    the TOP costliest invocations and kinds of one more step, with each\n"
    "                   GEMM's achieved TFLOP/s\n"
    "  --conv=P         ExecutorOptions::convolutions: deterministic, exact or fastest\n"
    "  --tf32           f32 GEMMs and convolutions on TF32 tensor cores\n"
    "  --init=DIR       start a case from DIR/NAME.safetensors (bench/PROTOCOL.md's INIT)\n"
    "  --check=CASE     run CASE's step on the GPU against the reference interpreter\n";

/// `options` from the command line; false (the usage printed) on a flag it does not know.
bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--steps=", 0) == 0) o.steps = std::atoi(a.c_str() + 8);
    else if (a.rfind("--warmup=", 0) == 0) o.warmup = std::atoi(a.c_str() + 9);
    else if (a.rfind("--case=", 0) == 0) o.only = a.substr(7);
    else if (a == "--program") o.listing = true;
    else if (a.rfind("--profile=", 0) == 0) o.top = std::atoi(a.c_str() + 10);
    else if (a.rfind("--init=", 0) == 0) o.init_dir = a.substr(7);
    else if (a.rfind("--check=", 0) == 0) o.check_case = a.substr(8);
    else if (a == "--conv=fastest") o.conv = cuda::ConvPolicy::fastest;
    else if (a == "--conv=deterministic") o.conv = cuda::ConvPolicy::deterministic;
    else if (a == "--conv=exact") o.conv = cuda::ConvPolicy::exact;
    else if (a == "--tf32") o.tf32 = true;
    else if (a == "--help" || a == "-h") o.help = true;
    else {
      std::fprintf(stderr, "%s", kUsage);
      return false;
    }
  }
  if (o.steps < 1) o.steps = 1;
  return true;
}

/// --program: each training case's Program (or the --case one's), and the arena bytes
/// each convolution may take as workspace (runtime/binding.h).
void print_programs(const Options& o) {
  for (const Case& c : all_cases()) {
    if (!(o.only.empty() ? c.steps >= 2 : c.name == o.only)) continue;
    const Program p = c.program();
    std::printf("%s\n", p.to_string().c_str());
    const std::vector<ArenaRun> free = arena_free_runs(p);
    for (size_t i = 0; i < p.code.size(); ++i) {
      const Invocation& inv = p.code[i];
      std::vector<Type> types;
      for (const BufferRef& r : inv.operands) types.push_back(r.type);
      if (inv.kind != Invocation::Kind::library ||
          cuda::library_kind(inv.node, types, inv.results[0].type) != cuda::LibraryKind::convolution) {
        continue;
      }
      std::printf("  %zu  %s: %.1f MiB of the arena free at +%lld\n", i, std::string(op_name(inv.node.op)).c_str(),
                  static_cast<double>(free[i].bytes) / (1 << 20), static_cast<long long>(free[i].offset));
    }
  }
}

/// --init=DIR: the inputs of each timed case that has an INIT file there, loaded (and so
/// checked against its case) GPU or not. False (reported) when a file does not fit.
bool load_inits(const Options& o, std::map<std::string, std::vector<Tensor>>& initial) {
  for (const Case& c : all_cases()) {
    // `MODEL@unrolled` starts from MODEL's INIT file (the same graph, lowered otherwise).
    const std::string init =
        o.init_dir.empty() ? "" : o.init_dir + "/" + c.name.substr(0, c.name.find('@')) + ".safetensors";
    if (!o.times(c) || init.empty() || !std::ifstream(init).good()) continue;
    const Graph g = parse_case(c);
    std::vector<Tensor> inputs = make_inputs(g, 7);
    if (Status s = load_init_file(g, c.name, init, inputs); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), s.to_string().c_str());
      return false;
    }
    std::printf("step_bench: %s matches %s\n", init.c_str(), c.name.c_str());
    initial[c.name] = std::move(inputs);
  }
  return true;
}

/// What --warmup + --steps steps of one case measured.
struct Timing {
  std::vector<double> ms;  ///< The timed steps' wall times, sorted.
  double first_loss = 0, last_loss = 0;
};

/// Runs the steps as a training loop does: the step count (Adam's bias correction), then
/// the step. Nothing (reported) when a step fails.
std::optional<Timing> time_steps(cuda::Executor& ex, const Graph& g, std::vector<Tensor>& inputs, const Options& o,
                                 const std::string& name) {
  const int step_input = ex.find_input("weft.step");
  Timing t;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    if (step_input >= 0) {
      set_step(g, inputs, s);
      if (Status st = ex.set_input(step_input, inputs[step_input]); !st.ok()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), st.to_string().c_str());
        return std::nullopt;
      }
    }
    if (Status st = ex.run(); !st.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), st.to_string().c_str());
      return std::nullopt;
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (s >= o.warmup) t.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    const double loss = ex.output(0).get_double(0);
    if (s == 0) t.first_loss = loss;
    t.last_loss = loss;
  }
  std::sort(t.ms.begin(), t.ms.end());
  return t;
}

/// --profile=TOP: the TOP costliest invocations of one more step, launch by launch (GEMMs
/// with their achieved TFLOP/s), then the TOP costliest kinds of invocation (the same
/// description less the index) with their counts. False (reported) when profiling fails.
bool print_profile(cuda::Executor& ex, const std::string& name, int top) {
  StatusOr<std::vector<double>> prof = ex.profile_step();
  if (!prof.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), prof.error().to_string().c_str());
    return false;
  }
  std::vector<size_t> order(prof->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (*prof)[a] > (*prof)[b]; });
  double total = 0;
  for (double t : *prof) total += t;
  std::printf("    profile: %.3f ms in %zu invocations; the costliest:\n", total, prof->size());
  std::vector<std::string> lines;
  const std::string d = ex.describe();
  for (size_t at = 0, end; (end = d.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(d.substr(at, end - at));
  }
  for (int k = 0; k < top && k < static_cast<int>(order.size()); ++k) {
    const size_t i = order[k];
    const Invocation& inv = ex.program().code[i];
    char rate[32] = "";
    if (const std::optional<double> flops = cuda::gemm_flops(inv); flops && (*prof)[i] > 0) {
      std::snprintf(rate, sizeof rate, "  %.1f TFLOP/s", *flops / ((*prof)[i] * 1e-3) / 1e12);
    }
    std::printf("    %8.3f ms  %-60.60s %s%s\n", (*prof)[i], i < lines.size() ? lines[i].c_str() : "",
                inv.results[0].type.to_string().c_str(), rate);
  }
  std::map<std::string, std::pair<double, int>> kinds;
  for (size_t i = 0; i < prof->size() && i < lines.size(); ++i) {
    const size_t text = lines[i].find_first_not_of("0123456789 ");
    auto& [ms_total, count] = kinds[lines[i].substr(text == std::string::npos ? 0 : text)];
    ms_total += (*prof)[i];
    ++count;
  }
  std::vector<std::pair<double, std::string>> by_time;
  for (const auto& [text, tc] : kinds) by_time.emplace_back(tc.first, text);
  std::sort(by_time.rbegin(), by_time.rend());
  std::printf("    by kind (%zu kinds):\n", by_time.size());
  for (int k = 0; k < top && k < static_cast<int>(by_time.size()); ++k) {
    const auto& [ms_total, text] = by_time[k];
    std::printf("    %8.3f ms %5d x  %s\n", ms_total, kinds[text].second, text.c_str());
  }
  return true;
}

/// Which invocations of `ex` still run on the host, by op.
void print_host_invocations(const cuda::Executor& ex) {
  const std::string d = ex.describe();
  size_t at = 0;
  while ((at = d.find("reference ", at)) != std::string::npos) {
    const size_t end = d.find('\n', at);
    std::printf("    host: %s\n", d.substr(at, end - at).c_str());
    at = end;
  }
}

/// Case `c` timed as one CUDA graph (`graph`) or launch by launch, from its INIT values
/// (`init`, may be null) or seeded ones, and printed; launch by launch, its profile
/// under --profile. False (reported) when it fails.
bool bench_case(const Case& c, bool graph, const Options& o, const std::vector<Tensor>* init) {
  const Graph g = parse_case(c);
  std::vector<Tensor> inputs = init != nullptr ? *init : make_inputs(g, 7);
  if (graph && init != nullptr) {
    std::printf("weft cuda  %-18s starts from %s/%s.safetensors\n", c.name.c_str(), o.init_dir.c_str(),
                c.name.c_str());
  }
  set_step(g, inputs, 0);
  const Program program = c.program();
  const bool host = !cuda::check_device_only(program).ok();
  StatusOr<std::unique_ptr<cuda::Executor>> ex = cuda::Executor::create(
      program, c.ptx, c.symbols,
      {.cuda_graph = graph, .allow_host_fallback = host, .convolutions = o.conv, .tf32 = o.tf32});
  if (!ex.ok()) {
    std::fprintf(stderr, "%s: %s\n", c.name.c_str(), ex.error().to_string().c_str());
    return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (Status s = (*ex)->set_input(static_cast<int>(i), inputs[i]); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), s.to_string().c_str());
      return false;
    }
  }
  const std::optional<Timing> t = time_steps(**ex, g, inputs, o, c.name);
  if (!t) return false;
  std::printf("weft cuda  %-18s %-14s median %.3f ms/step  (min %.3f, %d steps; loss %.6f -> "
              "%.6f; %zu invocations, %zu generated kernels, %d on the host; device %.1f "
              "MiB, host estimate %.1f MiB)\n",
              c.name.c_str(), (*ex)->uses_cuda_graph() ? "one CUDA graph" : "launches", t->ms[t->ms.size() / 2],
              t->ms.front(), o.steps, t->first_loss, t->last_loss, (*ex)->program().code.size(), c.symbols.size(),
              (*ex)->fallbacks(), static_cast<double>((*ex)->device_bytes()) / (1 << 20),
              static_cast<double>(cuda::device_memory((*ex)->program()).known()) / (1 << 20));
  if (!graph) return o.top <= 0 || print_profile(**ex, c.name, o.top);
  print_host_invocations(**ex);
  return true;
}

int run(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  if (o.help) {
    std::printf("%s%s", kUsage, kHelp);
    return 0;
  }
  if (!o.only.empty() && std::none_of(all_cases().begin(), all_cases().end(),
                                      [&](const Case& c) { return c.name == o.only; })) {
    std::fprintf(stderr, "step_bench: --case=%s names no case (step_bench --program lists the training cases)\n",
                 o.only.c_str());
    return 2;
  }
  if (!o.check_case.empty()) {
    if (!cuda::available()) {
      std::printf("step_bench: no GPU (%s)\n", cuda::unavailable_reason().c_str());
      return 0;
    }
    return check(o.check_case);
  }
  if (o.listing) {
    print_programs(o);
    return 0;
  }
  // Each case's runs start from its INIT values, or from seeded ones without a file.
  std::map<std::string, std::vector<Tensor>> initial;
  if (!load_inits(o, initial)) return 1;
  if (!cuda::available()) {
    std::printf("step_bench: no GPU (%s)\n", cuda::unavailable_reason().c_str());
    return 0;
  }
  // A case that fails is reported and the others still run (the exit status says so).
  bool failed = false;
  for (const Case& c : all_cases()) {
    if (!o.times(c)) continue;
    const auto from_init = initial.find(c.name);
    const std::vector<Tensor>* init = from_init != initial.end() ? &from_init->second : nullptr;
    for (bool graph : {true, false}) {
      if (!bench_case(c, graph, o, init)) {
        failed = true;
        break;
      }
    }
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace weft::cuda_cases

int main(int argc, char** argv) { return weft::cuda_cases::run(argc, argv); }
