// The benchmark suite: ten models on weft and on PyTorch, one table (bench/PROTOCOL.md).
//
//   bazel run //bench:suite -- --preset=cpu|paper [--device=cpu|cuda] [--weft=jit|aot]
//       [--models=a,b] [--epochs=N] [--warmup=N] [--rounds=N] [--json=PATH] [--pytorch-only]
//       [--allow-paper] [--keep-tmp] [--python=PATH] [--precision=f32|bf16]
//       [--fuse-attention=off|on|both] [--help]
//
// --device=cuda runs the same steps on one NVIDIA GPU: weft's side is
// bench/weft_aot_cuda_worker (the AOT CUDA libraries of bench/aot, paper preset, each step
// one CUDA graph), which also gives the names (no compiler on the GPU machine); PyTorch's
// side is run.py --device=cuda in four configurations (eager, fused Adam, torch.compile for
// the transformer and mlp, the whole step as one CUDA graph; TF32 off), and each side
// reports its device memory (weft: the executor's device allocations; PyTorch:
// torch.cuda.max_memory_allocated). With --precision=bf16 weft runs each model's bf16
// library (NAME_cuda_bf16) and PyTorch each configuration under torch.autocast("cuda",
// dtype=torch.bfloat16). Everything else below is the same. Without an NVIDIA
// device, or without a PyTorch that has CUDA (`run.py --device=cuda --check-device`), it
// stops before the first model with the reason.
//
// --weft chooses weft's side of the timed runs: `jit` (the default) is bench/weft_worker,
// the frontend's Trainer compiling through MLIR/LLVM in the process; `aot` is
// bench/weft_aot_worker, the libraries of bench/aot compiled by `bazel build` (cpu
// preset only; it declines the paper preset), a process with weft's runtime alone. Both
// run the same Programs; the AOT worker reports no step graph, so no roofline, planned
// bytes or matmul FLOPs in that mode. The names (step 1 below) come from weft_worker either
// way on the CPU, from the CUDA worker on the GPU.
// --fuse-attention=on runs weft's side with TrainOptions::fuse_attention (the AOT workers:
// the fused-attention libraries, transformer_fa and transformer_cuda_fa) on the models
// with attention (suite_attention_models: the transformer); =both runs those models'
// weft side both ways, each round's order weft, weft fused attention, then PyTorch's
// configurations (reversed in odd rounds), giving two rows against the same PyTorch runs
// ("transformer" and "transformer (fused attention)"), the A/B that fuse_attention's
// default waits for (#31). The models without attention run once.
// --pytorch-only skips weft's timed runs; --allow-paper is passed to the weft worker,
// which otherwise declines timed runs at the paper preset (meant for GPU backends);
// --keep-tmp keeps the intermediate files and logs, which are kept anyway on failure.
//
// Per model, every step in its own process, intermediate files in a temporary folder:
//  1. `weft_worker --names-out=NAMES.json` (`weft_aot_cuda_worker` on the GPU): weft's
//     parameter names and shapes;
//  2. `run.py --names=NAMES.json --init-out=INIT.safetensors`: PyTorch's initial weights
//     under weft's names, and the input and target data;
//  3. timed runs, `--rounds` rounds (default 2): weft, then PyTorch in its configurations
//     (pytorch_configs: on the CPU 1 and 2 threads, each with the default environment and
//     "tuned": OMP_WAIT_POLICY=PASSIVE plus the glibc malloc thresholds of
//     ../shared/ENVIRONMENT.md; on the GPU the four above);
//     odd rounds run the same list in reverse order. Each configuration's figure is the
//     median over rounds of its process's median epoch, and weft is compared with the
//     fastest PyTorch configuration.
// Every run.py process starts without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (peer_unset,
// runtime/cpu/openblas_peer.h): these machines set them, and they make OpenBLAS, which
// torch.mm calls, run AVX2 kernels. Each run reports the kernel OpenBLAS chose
// ("openblas_corename"); the JSON records it per configuration. weft's workers and the
// suite itself keep the environment as it is.
// The first round checks that the two sides agree: same parameter count, and first-step
// losses within 1e-4·(1 + |PyTorch's|) (1e-2 with --precision=bf16). A model that fails is reported and the others
// still run; the suite then exits 1.
// After every model ran, the suite measures the roofline (bench/roofline.h) in its own
// process, so that its oneDNN threads never compete with a timed run.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/process.h"
#include "bench/roofline.h"
#include "bench/suite_options.h"
#include "bench/suite_report.h"

namespace weft::bench {
namespace {

using nlohmann::json;

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "suite: %s\nusage: %s\n", message.c_str(), kSuiteUsage);
  std::exit(2);
}

/// A data dependency of //bench:suite, found in its runfiles tree.
std::string runfile(const char* argv0, const std::string& rel) {
  std::vector<std::string> roots;
  if (const char* d = std::getenv("RUNFILES_DIR")) roots.push_back(std::string(d) + "/weft/");
  roots.push_back(std::string(argv0) + ".runfiles/weft/");
  roots.push_back("");  // `bazel run` starts in the runfiles' workspace folder
  for (const std::string& root : roots) {
    if (is_file(root + rel)) return root + rel;
  }
  std::fprintf(stderr, "suite: cannot find %s in the runfiles; run the suite with "
                       "`bazel run //bench:suite -- ...`\n", rel.c_str());
  std::exit(2);
}

/// The last non-blank line of `text`.
std::string last_line(const std::string& text) {
  std::string last;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) {
    if (l.find_first_not_of(" \t\r") != std::string::npos) last = l;
  }
  return last;
}

/// The JSON object a timed run prints as its last stdout line.
json last_json_line(const std::string& what, const ProcessResult& r) {
  const std::string line = last_line(r.out);
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    throw SuiteError{what + ": the last line of its output is not a JSON object: '" + line +
                     "'\n" + tail(r.err + r.out)};
  }
  return j;
}

class Suite {
 public:
  /// `worker` gives the names; `timed_worker` (the same, or the AOT worker) runs weft's
  /// timed runs.
  Suite(SuiteOptions options, std::string worker, std::string timed_worker, std::string run_py,
        std::string dir)
      : o_(std::move(options)), worker_(std::move(worker)),
        timed_worker_(std::move(timed_worker)), run_py_(std::move(run_py)), dir_(std::move(dir)) {}

  /// One result per weft run of `model` (weft_fuse_attention_runs: two with
  /// --fuse-attention=both on a model with attention), sharing PyTorch's runs.
  std::vector<ModelResult> run_model(const std::string& model) {
    std::vector<ModelResult> rs;
    for (bool fused : weft_fuse_attention_runs(o_, model)) {
      ModelResult& r = rs.emplace_back();
      r.model = model;
      r.fuse_attention = fused;
      r.weft = RunSummary{};
      r.weft->config = std::string(o_.device == "cuda" ? "weft aot cuda" : o_.weft == "aot" ? "weft aot" : "weft") +
                       (fused ? " fused attention" : "");
    }
    std::string error;
    try {
      prepare(model, rs);
      time_model(model, rs);
    } catch (const SuiteError& e) {
      error = e.message;
    } catch (const std::exception& e) {  // a malformed result the checks above missed
      error = std::string("unexpected: ") + e.what();
    }
    if (!error.empty()) {
      std::printf("[%s] FAILED: %s\n", model.c_str(), error.c_str());
      for (ModelResult& r : rs) r.error = error;
    }
    return rs;
  }

 private:
  std::string file(const std::string& model, const std::string& suffix) const {
    return dir_ + "/" + model + "." + suffix;
  }

  std::vector<std::string> worker_args(const std::string& model) const {
    return {worker_, "--model=" + model, "--preset=" + o_.preset};
  }
  /// The worker of weft's timed runs, for messages.
  std::string timed_worker_name() const {
    std::string w = timed_worker(o_);
    return w.substr(w.rfind('/') + 1);
  }
  std::vector<std::string> run_py_args(const std::string& model) const {
    return {o_.python, run_py_, "--model=" + model, "--preset=" + o_.preset};
  }

  /// Steps 1 and 2: weft's names, then PyTorch's initial weights and data under them.
  void prepare(const std::string& model, std::vector<ModelResult>& rs) {
    std::vector<std::string> names = worker_args(model);
    names.push_back("--names-out=" + file(model, "names.json"));
    run_or_fail(names_worker(o_) + " --names-out for " + model, names, {}, {},
                file(model, "names.stderr"));
    // weft's parameter count, known even where its timed runs are declined or skipped.
    json names_json = json::parse(read_file(file(model, "names.json")), nullptr,
                                  /*allow_exceptions=*/false);
    if (names_json.is_object()) {
      for (ModelResult& r : rs) r.weft->param_count = optional_field<int64_t>(names_json, "param_count");
    }
    std::vector<std::string> init = run_py_args(model);
    init.push_back("--names=" + file(model, "names.json"));
    init.push_back("--init-out=" + file(model, "init.safetensors"));
    run_or_fail("run.py --init-out for " + model, init, {}, peer_unset(),
                file(model, "init.stderr"));
  }

  /// Step 3: the timed rounds, weft's runs and the PyTorch configurations interleaved;
  /// PyTorch's summaries are kept in rs[0] and copied to the other results of the model.
  void time_model(const std::string& model, std::vector<ModelResult>& rs) {
    const std::string init = file(model, "init.safetensors");
    for (ModelResult& r : rs) {
      if (o_.pytorch_only) r.weft_note = "not run (--pytorch-only)";
    }
    std::vector<RunSummary>& pytorch = rs[0].pytorch;
    const std::vector<PytorchConfig> configs = pytorch_configs(o_, model);
    for (const PytorchConfig& c : configs) {
      RunSummary s;
      s.config = c.label;
      s.threads = c.threads;
      s.tuned_env = c.tuned;
      pytorch.push_back(s);
    }
    // -1 - v stands for weft's run rs[v], i ≥ 0 for configs[i].
    std::vector<int> order;
    for (int v = 0; v < int(rs.size()); ++v) order.push_back(-1 - v);
    for (int i = 0; i < int(configs.size()); ++i) order.push_back(i);
    for (int round = 0; round < o_.rounds; ++round) {
      std::string line = "[" + model + "] round " + std::to_string(round + 1) + "/" +
                         std::to_string(o_.rounds) + ", median epoch ms:";
      std::string sep = " ";
      for (int who : order) {
        std::string tag = "r" + std::to_string(round + 1);
        if (who < 0) {
          ModelResult& r = rs[size_t(-1 - who)];
          if (o_.pytorch_only || !r.weft_note.empty()) continue;
          std::vector<std::string> args =
              weft_timed_args(o_, timed_worker_, model, init, r.fuse_attention);
          const std::string run = r.fuse_attention ? "weft_fused_attention." : "weft.";
          ProcessResult p = run_process(args, {}, {}, file(model, run + tag + ".stderr"));
          if (p.exit_code != 0 && o_.preset == "paper" && o_.device == "cpu" && round == 0) {
            // The paper preset is meant for GPU machines; the worker may decline it here.
            r.weft_note = "declined the paper preset: " + last_line(p.err + p.out);
            std::printf("[%s] weft: %s\n", model.c_str(), r.weft_note.c_str());
            continue;
          }
          if (p.exit_code != 0) {
            throw SuiteError{timed_worker_name() + " timed run for " + model + " failed (exit " +
                             std::to_string(p.exit_code) + "): " + command_line(args, {}) +
                             "\n" + tail(p.err + p.out)};
          }
          json j = last_json_line(timed_worker_name() + " for " + model, p);
          record_run(timed_worker_name() + " for " + model, j, *r.weft);
          if (o_.weft == "aot" && j.value("compiler_mapped", true)) {
            throw SuiteError{timed_worker_name() + " for " + model + " had MLIR or LLVM mapped "
                             "(its \"compiler_mapped\" is not false): " + j.dump()};
          }
          if (round == 0) take_weft_extras(timed_worker_name(), model, j, r);
          line += sep + (r.fuse_attention ? "weft fused attention " : "weft ") +
                  format_ms(r.weft->round_median_ms.back());
          sep = ", ";
        } else {
          const PytorchConfig& c = configs[size_t(who)];
          std::vector<std::string> args = pytorch_timed_args(o_, run_py_, model, init, c);
          std::string what = "run.py (" + c.label + ") for " + model;
          // run.py sets the thread counts of OpenMP and OpenBLAS from --threads unless the
          // environment already does: the user's settings must not leak into the configs.
          // OpenBLAS's machine-wide handicap goes too (peer_unset).
          ProcessResult p = run_or_fail(what, args, c.env,
                                        peer_unset({"OMP_WAIT_POLICY", "GLIBC_TUNABLES",
                                                    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                    "MKL_NUM_THREADS"}),
                                        file(model, "pytorch" + std::to_string(who) + "." + tag +
                                                        ".stderr"));
          record_run(what, last_json_line(what, p), pytorch[size_t(who)]);
          line += sep + c.label + " " + format_ms(pytorch[size_t(who)].round_median_ms.back());
          sep = ", ";
        }
      }
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      for (size_t v = 1; v < rs.size(); ++v) rs[v].pytorch = pytorch;
      if (round == 0) {
        for (const ModelResult& r : rs) check_agreement(r);
      }
      std::reverse(order.begin(), order.end());
    }
  }

  /// The weft worker's static figures: memory plan and the step's matmuls.
  static void take_weft_extras(const std::string& worker, const std::string& model,
                               const json& j, ModelResult& r) {
    try {
      r.weft_planned_bytes = optional_field<int64_t>(j, "planned_bytes");
      r.arena_bytes = optional_field<int64_t>(j, "arena_bytes");
      r.arena_lower_bound_bytes = optional_field<int64_t>(j, "arena_lower_bound_bytes");
      r.weft_matmul_flops = optional_field<double>(j, "matmul_flops");
      r.state_bytes = optional_field<int64_t>(j, "state_bytes");
      if (auto it = j.find("gemm_shapes"); it != j.end() && it->is_array()) {
        for (const json& s : *it) {
          std::vector<int64_t> v = s.get<std::vector<int64_t>>();
          if (v.size() != 4) throw SuiteError{"gemm_shapes entry " + s.dump() + " is not [m, n, k, count]"};
          r.gemm_shapes.push_back({v[0], v[1], v[2], v[3]});
        }
      }
    } catch (const json::exception& e) {
      throw SuiteError{worker + " for " + model + ": unexpected result " + j.dump() + ": " +
                       e.what()};
    }
  }

  /// Parameter counts equal, first-step losses within tolerance (bench/PROTOCOL.md 4).
  void check_agreement(const ModelResult& r) const {
    for (const RunSummary& pt : r.pytorch) {
      if (!pt.ran()) continue;
      if (!r.weft->param_count || !pt.param_count) {
        throw SuiteError{"no param_count to compare for " + r.label() + " (weft or PyTorch " +
                         pt.config + " reported none)"};
      }
      if (*r.weft->param_count != *pt.param_count) {
        throw SuiteError{"parameter counts differ for " + r.label() + ": weft " +
                         std::to_string(*r.weft->param_count) + ", PyTorch (" + pt.config + ") " +
                         std::to_string(*pt.param_count)};
      }
      if (!r.weft->ran()) continue;
      if (!r.weft->first_loss || !pt.first_loss) {
        throw SuiteError{"no first_loss to compare for " + r.label() + " (weft or PyTorch " +
                         pt.config + " reported none)"};
      }
      const double tolerance = first_loss_tolerance(o_.precision);
      if (!first_losses_agree(*r.weft->first_loss, *pt.first_loss, tolerance)) {
        char buf[256];
        std::snprintf(buf, sizeof(buf),
                      "first-step losses differ for %s: weft %.9g, PyTorch (%s) %.9g "
                      "(tolerance %g·(1 + |PyTorch|))",
                      r.label().c_str(), *r.weft->first_loss, pt.config.c_str(), *pt.first_loss,
                      tolerance);
        throw SuiteError{buf};
      }
    }
  }

  SuiteOptions o_;
  std::string worker_, timed_worker_, run_py_, dir_;
};

std::string make_temp_dir() {
  std::string tmpl = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                     "/weft-suite-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::fprintf(stderr, "suite: cannot create %s: %s\n", tmpl.c_str(), std::strerror(errno));
    std::exit(2);
  }
  return tmpl;
}

/// The roofline of every model that reported its matmuls, measured here and now.
void measure_rooflines(std::vector<ModelResult>& results) {
  bool any = false;
  for (const ModelResult& r : results) any |= r.state_bytes.has_value() || !r.gemm_shapes.empty();
  if (!any) return;
  std::printf("measuring the roofline: memory bandwidth (triad over 256 MiB) ...");
  std::fflush(stdout);
  double bandwidth = measure_triad_bandwidth();
  std::printf(" %.1f GB/s; sgemm (oneDNN) per shape ...", bandwidth / 1e9);
  std::fflush(stdout);
  SgemmTable sgemm;
  for (ModelResult& r : results) {
    if (!r.state_bytes && r.gemm_shapes.empty()) continue;
    r.roofline = roofline(r.gemm_shapes, [&](const GemmShape& s) { return sgemm.flops(s); },
                          r.state_bytes.value_or(0), bandwidth);
    if (r.weft_matmul_flops && *r.weft_matmul_flops > 0 &&
        std::abs(r.roofline->flops_per_step - *r.weft_matmul_flops) >
            1e-6 * *r.weft_matmul_flops) {
      std::printf("\nwarning: %s: the gemm_shapes add up to %.6g FLOP per step, matmul_flops "
                  "says %.6g", r.model.c_str(), r.roofline->flops_per_step, *r.weft_matmul_flops);
    }
  }
  double lo = 1e30, hi = 0;
  for (const auto& [shape, f] : sgemm.measured()) {
    lo = std::min(lo, f);
    hi = std::max(hi, f);
  }
  if (sgemm.measured().empty()) {
    std::printf(" no shapes\n");
  } else {
    std::printf(" %zu shapes, %.0f–%.0f GFLOP/s\n", sgemm.measured().size(), lo / 1e9, hi / 1e9);
  }
}

/// --device=cuda needs an NVIDIA device here and a PyTorch with CUDA: stops with the
/// reason before any model runs.
void check_cuda_peer(const SuiteOptions& o, const std::string& run_py, const std::string& dir) {
  if (std::optional<std::string> missing = cuda_device_missing()) {
    std::fprintf(stderr, "suite: %s\n", missing->c_str());
    std::exit(2);
  }
  ProcessResult p = run_process({o.python, run_py, "--device=cuda", "--check-device"}, {},
                                peer_unset(), dir + "/check_device.stderr");
  if (p.exit_code != 0) {
    std::fprintf(stderr, "suite: --device=cuda: PyTorch's side cannot run: %s\n",
                 last_line(p.err + p.out).c_str());
    std::exit(2);
  }
}

int suite_main(int argc, char** argv) {
  StatusOr<SuiteOptions> parsed = parse_suite_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) usage_error(parsed.error().message);
  SuiteOptions o = std::move(*parsed);
  if (o.help) {
    std::printf("usage: %s\n\n%s", kSuiteUsage, kSuiteHelp);
    return 0;
  }
  std::string worker = runfile(argv[0], names_worker(o));
  std::string timed = runfile(argv[0], timed_worker(o));
  std::string run_py = runfile(argv[0], "bench/pytorch/run.py");
  if (!is_file(o.python)) {
    usage_error("no Python at " + o.python + " (Debian's python3 with python3-torch; "
                "tools/setup --peer installs it)");
  }
  std::string dir = make_temp_dir();
  if (o.device == "cuda") check_cuda_peer(o, run_py, dir);
  std::printf("weft benchmark suite: device %s, preset %s, precision %s, weft %s, fused attention %s, "
              "%d warm-up + %d measured epochs of 50 steps, %d rounds; intermediate files in %s\n",
              o.device.c_str(), o.preset.c_str(), o.precision.c_str(), o.weft.c_str(),
              o.fuse_attention.c_str(), o.warmup, o.epochs, o.rounds, dir.c_str());
  Suite suite(o, worker, timed, run_py, dir);
  std::vector<ModelResult> results;
  for (const std::string& model : o.models) {
    for (ModelResult& r : suite.run_model(model)) results.push_back(std::move(r));
  }
  measure_rooflines(results);

  std::printf("\n%s\n%s", format_table(results).c_str(), format_checks(results).c_str());
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << results_json(results, o.preset, o.weft, o.epochs, o.warmup, o.rounds, o.device, o.precision);
    if (!out) {
      std::fprintf(stderr, "suite: cannot write %s\n", o.json_path.c_str());
      return 1;
    }
    std::printf("wrote %s\n", o.json_path.c_str());
  }
  int failed = 0;
  for (const ModelResult& r : results) failed += !r.error.empty();
  if (failed == 0 && !o.keep_tmp) {
    std::string cmd = "rm -rf '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "suite: could not remove %s\n", dir.c_str());
  } else {
    std::printf("intermediate files and logs kept in %s\n", dir.c_str());
  }
  if (failed) {
    std::printf("%d of %zu models FAILED:\n", failed, results.size());
    for (const ModelResult& r : results) {
      if (!r.error.empty()) std::printf("  %s: %s\n", r.model.c_str(), r.error.c_str());
    }
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::suite_main(argc, argv); }
