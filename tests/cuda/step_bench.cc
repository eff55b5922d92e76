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

int run(int argc, char** argv) {
  int steps = 50, warmup = 5, top = 0;
  std::string only, init_dir, check_case;
  bool listing = false, tf32 = false;
  cuda::ConvPolicy conv = cuda::ConvPolicy::deterministic;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--steps=", 0) == 0) steps = std::atoi(a.c_str() + 8);
    else if (a.rfind("--warmup=", 0) == 0) warmup = std::atoi(a.c_str() + 9);
    else if (a.rfind("--case=", 0) == 0) only = a.substr(7);
    else if (a == "--program") listing = true;
    else if (a.rfind("--profile=", 0) == 0) top = std::atoi(a.c_str() + 10);
    else if (a.rfind("--init=", 0) == 0) init_dir = a.substr(7);
    else if (a.rfind("--check=", 0) == 0) check_case = a.substr(8);
    else if (a == "--conv=fastest") conv = cuda::ConvPolicy::fastest;
    else if (a == "--conv=deterministic") conv = cuda::ConvPolicy::deterministic;
    else if (a == "--conv=exact") conv = cuda::ConvPolicy::exact;
    else if (a == "--tf32") tf32 = true;
    else {
      std::fprintf(stderr, "usage: step_bench [--steps=N] [--warmup=N] [--case=NAME] [--program] "
                           "[--profile=TOP] [--conv=deterministic|exact|fastest] [--tf32] [--init=DIR] "
                           "[--check=CASE]\n");
      return 2;
    }
  }
  if (steps < 1) steps = 1;
  if (!only.empty() && std::none_of(all_cases().begin(), all_cases().end(),
                                    [&](const Case& c) { return c.name == only; })) {
    std::fprintf(stderr, "step_bench: --case=%s names no case (step_bench --program lists the training cases)\n",
                 only.c_str());
    return 2;
  }
  if (!check_case.empty()) {
    if (!cuda::available()) {
      std::printf("step_bench: no GPU (%s)\n", cuda::unavailable_reason().c_str());
      return 0;
    }
    return check(check_case);
  }
  if (listing) {
    for (const Case& c : all_cases()) {
      if (!(only.empty() ? c.steps >= 2 : c.name == only)) continue;
      const Program p = c.program();
      std::printf("%s\n", p.to_string().c_str());
      // The arena bytes each convolution may take as workspace (runtime/binding.h).
      const std::vector<ArenaRun> free = arena_free_runs(p);
      for (size_t i = 0; i < p.code.size(); ++i) {
        const Invocation& inv = p.code[i];
        std::vector<Type> types;
        for (const BufferRef& r : inv.operands) types.push_back(r.type);
        if (inv.kind != Invocation::Kind::library ||
            cuda::library_kind(inv.node, types, inv.results[0].type) !=
                cuda::LibraryKind::convolution) {
          continue;
        }
        std::printf("  %zu  %s: %.1f MiB of the arena free at +%lld\n", i,
                    std::string(op_name(inv.node.op)).c_str(),
                    static_cast<double>(free[i].bytes) / (1 << 20),
                    static_cast<long long>(free[i].offset));
      }
    }
    return 0;
  }
  // Every INIT file is loaded (and so checked against its case) first, GPU or not; each
  // case's runs start from these values, or from seeded ones without a file.
  std::map<std::string, std::vector<Tensor>> initial;
  for (const Case& c : all_cases()) {
    // `MODEL@unrolled` starts from MODEL's INIT file (the same graph, lowered otherwise).
    const std::string init =
        init_dir.empty() ? "" : init_dir + "/" + c.name.substr(0, c.name.find('@')) + ".safetensors";
    if (c.steps < 2 || (!only.empty() && c.name != only) || init.empty() ||
        !std::ifstream(init).good()) {
      continue;
    }
    const Graph g = parse_case(c);
    std::vector<Tensor> inputs = make_inputs(g, 7);
    if (Status s = load_init_file(g, c.name, init, inputs); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), s.to_string().c_str());
      return 1;
    }
    std::printf("step_bench: %s matches %s\n", init.c_str(), c.name.c_str());
    initial[c.name] = std::move(inputs);
  }
  if (!cuda::available()) {
    std::printf("step_bench: no GPU (%s)\n", cuda::unavailable_reason().c_str());
    return 0;
  }
  // A case that fails is reported and the others still run (the exit status says so).
  bool failed = false;
  for (const Case& c : all_cases()) {
    if (c.steps < 2 || (!only.empty() && c.name != only)) continue;
    for (bool graph : {true, false}) {
      const auto one = [&]() -> bool {
        const Graph g = parse_case(c);
        const auto from_init = initial.find(c.name);
        std::vector<Tensor> inputs =
            from_init != initial.end() ? from_init->second : make_inputs(g, 7);
        if (graph && from_init != initial.end()) {
          std::printf("weft cuda  %-18s starts from %s/%s.safetensors\n", c.name.c_str(),
                      init_dir.c_str(), c.name.c_str());
        }
        set_step(g, inputs, 0);
        const Program program = c.program();
        const bool host = !cuda::check_device_only(program).ok();
        StatusOr<std::unique_ptr<cuda::Executor>> ex = cuda::Executor::create(
            program, c.ptx, c.symbols,
            {.cuda_graph = graph, .allow_host_fallback = host, .convolutions = conv, .tf32 = tf32});
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
        const int step_input = (*ex)->find_input("weft.step");
        std::vector<double> ms;
        double first_loss = 0, last_loss = 0;
        for (int s = 0; s < warmup + steps; ++s) {
          // A training loop's step: the step count (Adam's bias correction), then the step.
          const auto t0 = std::chrono::steady_clock::now();
          if (step_input >= 0) {
            set_step(g, inputs, s);
            if (Status st = (*ex)->set_input(step_input, inputs[step_input]); !st.ok()) {
              std::fprintf(stderr, "%s: %s\n", c.name.c_str(), st.to_string().c_str());
              return false;
            }
          }
          if (Status st = (*ex)->run(); !st.ok()) {
            std::fprintf(stderr, "%s: %s\n", c.name.c_str(), st.to_string().c_str());
            return false;
          }
          const auto t1 = std::chrono::steady_clock::now();
          if (s >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          const double loss = (*ex)->output(0).get_double(0);
          if (s == 0) first_loss = loss;
          last_loss = loss;
        }
        std::sort(ms.begin(), ms.end());
        std::printf("weft cuda  %-18s %-14s median %.3f ms/step  (min %.3f, %d steps; loss %.6f -> "
                    "%.6f; %zu invocations, %zu generated kernels, %d on the host; device %.1f "
                    "MiB, host estimate %.1f MiB)\n",
                    c.name.c_str(), (*ex)->uses_cuda_graph() ? "one CUDA graph" : "launches",
                    ms[ms.size() / 2], ms.front(), steps, first_loss, last_loss,
                    (*ex)->program().code.size(), c.symbols.size(), (*ex)->fallbacks(),
                    static_cast<double>((*ex)->device_bytes()) / (1 << 20),
                    static_cast<double>(cuda::device_memory((*ex)->program()).known()) / (1 << 20));
        if (top > 0 && !graph) {
          // The costliest invocations of one more step, launch by launch.
          StatusOr<std::vector<double>> prof = (*ex)->profile_step();
          if (!prof.ok()) {
            std::fprintf(stderr, "%s: %s\n", c.name.c_str(), prof.error().to_string().c_str());
            return false;
          }
          std::vector<size_t> order(prof->size());
          for (size_t i = 0; i < order.size(); ++i) order[i] = i;
          std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (*prof)[a] > (*prof)[b]; });
          double total = 0;
          for (double t : *prof) total += t;
          std::printf("    profile: %.3f ms in %zu invocations; the costliest:\n", total, prof->size());
          std::vector<std::string> lines;
          const std::string d = (*ex)->describe();
          for (size_t at = 0, end; (end = d.find('\n', at)) != std::string::npos; at = end + 1) {
            lines.push_back(d.substr(at, end - at));
          }
          for (int k = 0; k < top && k < static_cast<int>(order.size()); ++k) {
            const size_t i = order[k];
            const Invocation& inv = (*ex)->program().code[i];
            // GEMMs (tensor-core ones included): their achieved TFLOP/s.
            char rate[32] = "";
            if (const std::optional<double> flops = cuda::gemm_flops(inv); flops && (*prof)[i] > 0) {
              std::snprintf(rate, sizeof rate, "  %.1f TFLOP/s", *flops / ((*prof)[i] * 1e-3) / 1e12);
            }
            std::printf("    %8.3f ms  %-60.60s %s%s\n", (*prof)[i], i < lines.size() ? lines[i].c_str() : "",
                        inv.results[0].type.to_string().c_str(), rate);
          }
          // By kind: the invocations whose descriptions (less the index) are the same.
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
        }
        if (!graph) return true;
        // Which invocations still run on the host, by op.
        const std::string d = (*ex)->describe();
        size_t at = 0;
        while ((at = d.find("reference ", at)) != std::string::npos) {
          const size_t end = d.find('\n', at);
          std::printf("    host: %s\n", d.substr(at, end - at).c_str());
          at = end;
        }
        return true;
      };
      if (!one()) {
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
