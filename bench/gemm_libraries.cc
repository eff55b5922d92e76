// oneDNN against OpenBLAS on the GEMMs a training step of the suite runs ([Compiled CPU]:
// "GEMM and convolution go to a tuned library: choose by measurement").
//
//   bazel run //bench:gemm_libraries -- [--preset=cpu] [--trials=5] [--ms=10]
//       [--threads=1,2] [--models=a,b] [--shapes-only]
//
// Shapes: every distinct [m, n, k] of the ten models' training steps at the preset (built
// in-process with bench/models.h and Trainer, read with bench/step_stats.h; count = how
// often it occurs per step, summed over the models), plus 128×784×256 (m×k×n, the MLP's
// first layer) and the squares 256, 512, 1024 (count 0: reported, not weighted).
// Each shape runs row-major C[m,n] = op(A)·op(B) in the three layouts a step uses:
//   NN  A [m,k],  B [k,n]   (forward)
//   NT  A [m,k],  B [n,k]   (dX = dY·Wᵀ)
//   TN  A [k,m],  B [k,n]   (dW = Xᵀ·dY)
// with oneDNN's dnnl_sgemm and OpenBLAS's cblas_sgemm, at each thread count (oneDNN:
// omp_set_num_threads, its CPU runtime being OpenMP in Debian's build; OpenBLAS:
// openblas_set_num_threads). OpenBLAS runs without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
// (the program restarts itself without them: runtime/cpu/openblas_peer.h) and the header
// names the kernel it chose. Each figure is the best of `trials` timings, each timing
// repeating the call for about `ms` milliseconds. One library and thread count is run over
// every shape before the next, so idle threads of the other library's pool have gone to
// sleep (a 200 ms pause between groups).
//
// Summary: for each library, thread count and layout, the FLOP-weighted throughput of the
// suite's mix, Σ count·2mnk / Σ count·2mnk/throughput; "mix" takes the mean time over the
// three layouts for each shape. Then the same at each thread count per model.
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>

#include "bench/models.h"
#include "bench/step_stats.h"
#include "runtime/cpu/openblas_peer.h"

extern "C" void omp_set_num_threads(int);
extern "C" int omp_get_max_threads(void);

namespace weft::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t m, n, k;
  bool operator<(const Shape& o) const {
    return std::tie(m, n, k) < std::tie(o.m, o.n, o.k);
  }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

enum Lib { kDnnl = 0, kBlas = 1 };
const char* kLibName[] = {"oneDNN", "OpenBLAS"};
const char* kLayoutName[] = {"NN", "NT", "TN"};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// GFLOP/s of one library, layout and shape at the current thread setting.
double measure(Lib lib, int layout, const Shape& s, int trials, double ms) {
  const int64_t m = s.m, n = s.n, k = s.k;
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n), 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.01f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) * 0.01f;
  const bool ta = layout == 2, tb = layout == 1;
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  auto call = [&] {
    if (lib == kDnnl) {
      dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a.data(), lda,
                                    b.data(), ldb, 0.0f, c.data(), n);
      if (st != dnnl_success) {
        std::fprintf(stderr, "dnnl_sgemm failed: %d\n", int(st));
        std::abort();
      }
    } else {
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                  int(m), int(n), int(k), 1.0f, a.data(), int(lda), b.data(), int(ldb), 0.0f,
                  c.data(), int(n));
    }
  };
  call();  // pool start-up, JIT, first touch
  Clock::time_point t = Clock::now();
  call();
  double once = seconds_since(t);
  int reps = int(std::clamp(ms * 1e-3 / std::max(once, 1e-9), 1.0, 1e6));
  double best = 1e30;
  for (int i = 0; i < trials; ++i) {
    t = Clock::now();
    for (int r = 0; r < reps; ++r) call();
    best = std::min(best, seconds_since(t) / reps);
  }
  return s.flops() / best * 1e-9;
}

void set_threads(Lib lib, int threads) {
  if (lib == kDnnl) {
    omp_set_num_threads(threads);
  } else {
    openblas_set_num_threads(threads);
  }
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The suite's GEMM shapes: per model and over all, counts per step; then the extra
// square shapes.
struct SuiteShapes {
  std::map<Shape, double> suite_count;
  std::map<std::string, std::map<Shape, double>> model_count;
  std::vector<Shape> shapes;  ///< The suite's, then the extra ones it lacks.
  double suite_flops = 0;     ///< Per step of all the models.

  double count(const Shape& s) const {
    auto it = suite_count.find(s);
    return it == suite_count.end() ? 0.0 : it->second;
  }
};

// GFLOP/s: [lib][thread index][layout][shape index].
using Gflops = std::vector<std::vector<std::vector<std::vector<double>>>>;

// `--name=value` (or `--name`: "1") flags into `flags`; false on another argument.
bool parse_flags(int argc, char** argv, std::map<std::string, std::string>& flags) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      std::fprintf(stderr, "gemm_libraries: unexpected argument %s\n", argv[i]);
      return false;
    }
    size_t eq = a.find('=');
    flags[a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
        eq == std::string::npos ? "1" : a.substr(eq + 1);
  }
  return true;
}

// The two libraries' versions and threading, and the run's settings.
void print_libraries(int trials, double ms) {
  const dnnl_version_t* v = dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP          ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_THREADPOOL ? "threadpool"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ        ? "sequential"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB        ? "TBB"
                                                                    : "other";
  std::printf("oneDNN %d.%d.%d (%s), CPU runtime %s (0x%x); OpenMP max threads %d\n", v->major,
              v->minor, v->patch, v->hash, runtime, v->cpu_runtime, omp_get_max_threads());
  std::printf("OpenBLAS: %s, core %s (without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE)\n",
              openblas_get_config(), openblas_get_corename());
  std::printf("hardware threads %u; trials %d x ~%.0f ms\n", std::thread::hardware_concurrency(),
              trials, ms);
}

// The GEMM shapes of each model's training step (printed per model and in sum); false
// on an error (printed).
bool suite_shapes(const std::vector<std::string>& models, Preset preset, SuiteShapes& out) {
  for (const std::string& name : models) {
    StatusOr<BenchModel> m = make_bench_model(name, preset);
    if (!m.ok()) {
      std::fprintf(stderr, "gemm_libraries: %s\n", m.error().to_string().c_str());
      return false;
    }
    StatusOr<Trainer> trainer =
        Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr));
    if (!trainer.ok()) {
      std::fprintf(stderr, "gemm_libraries: %s: %s\n", name.c_str(),
                   trainer.error().to_string().c_str());
      return false;
    }
    StepStats st = step_stats(*trainer);
    double f = 0;
    for (const auto& g : st.gemm_shapes) {
      Shape s{g[0], g[1], g[2]};
      out.suite_count[s] += double(g[3]);
      out.model_count[name][s] += double(g[3]);
      f += s.flops() * double(g[3]);
    }
    std::printf("model %-17s %3zu distinct GEMM shapes, %.3f GFLOP/step\n", name.c_str(),
                st.gemm_shapes.size(), f * 1e-9);
  }
  std::set<Shape> extra = {{128, 256, 784}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}};
  for (const auto& [s, c] : out.suite_count) out.shapes.push_back(s);
  for (const Shape& s : extra) {
    if (!out.suite_count.count(s)) out.shapes.push_back(s);
  }
  for (const auto& [s, c] : out.suite_count) out.suite_flops += s.flops() * c;
  std::printf("%zu distinct suite shapes (+%zu extra), %.3f GFLOP per step of all ten\n",
              out.suite_count.size(), out.shapes.size() - out.suite_count.size(), out.suite_flops * 1e-9);
  return true;
}

// Every library x thread count x layout x shape, measured.
Gflops measure_all(const std::vector<Shape>& shapes, const std::vector<int>& thread_counts, int trials,
                   double ms) {
  const int T = int(thread_counts.size());
  Gflops gf(2, std::vector<std::vector<std::vector<double>>>(
                   T, std::vector<std::vector<double>>(3, std::vector<double>(shapes.size()))));
  for (int lib = 0; lib < 2; ++lib) {
    for (int ti = 0; ti < T; ++ti) {
      set_threads(Lib(lib), thread_counts[ti]);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      for (size_t i = 0; i < shapes.size(); ++i) {
        for (int l = 0; l < 3; ++l) gf[lib][ti][l][i] = measure(Lib(lib), l, shapes[i], trials, ms);
      }
      std::fprintf(stderr, "measured %s at %d thread(s)\n", kLibName[lib], thread_counts[ti]);
    }
  }
  return gf;
}

// The table: one row per shape; columns layout x threads x library.
void print_table(const SuiteShapes& suite, const Gflops& gf, const std::vector<int>& thread_counts) {
  const int T = int(thread_counts.size());
  std::printf("\nGFLOP/s (D = oneDNN, B = OpenBLAS); share = the shape's part of the suite's FLOPs\n");
  std::printf("%5s %5s %5s %6s %6s", "m", "n", "k", "count", "share");
  for (int l = 0; l < 3; ++l)
    for (int ti = 0; ti < T; ++ti)
      std::printf("  %2s%dD  %2s%dB", kLayoutName[l], thread_counts[ti], kLayoutName[l],
                  thread_counts[ti]);
  std::printf("\n");
  for (size_t i = 0; i < suite.shapes.size(); ++i) {
    const Shape& s = suite.shapes[i];
    double c = suite.count(s);
    std::printf("%5lld %5lld %5lld %6g %5.1f%%", (long long)s.m, (long long)s.n, (long long)s.k, c,
                100.0 * c * s.flops() / suite.suite_flops);
    for (int l = 0; l < 3; ++l)
      for (int ti = 0; ti < T; ++ti)
        std::printf(" %6.1f %6.1f", gf[kDnnl][ti][l][i], gf[kBlas][ti][l][i]);
    std::printf("\n");
  }
}

// FLOP-weighted throughput of `lib` at thread index `ti` over a set of counts, in one
// layout, or (layout 3) the mean time of the three.
double weighted(const std::vector<Shape>& shapes, const Gflops& gf,
                const std::map<Shape, double>& counts, int lib, int ti, int layout) {
  double flops = 0, seconds = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto it = counts.find(shapes[i]);
    if (it == counts.end()) continue;
    double f = shapes[i].flops() * it->second;
    double t = 0;
    if (layout < 3) {
      t = f / (gf[lib][ti][layout][i] * 1e9);
    } else {
      for (int l = 0; l < 3; ++l) t += f / (gf[lib][ti][l][i] * 1e9) / 3;
    }
    flops += f;
    seconds += t;
  }
  return seconds > 0 ? flops / seconds * 1e-9 : 0.0;
}

// The suite's mix per library and thread count, and what the faster library for each
// shape and layout would give (a per-case dispatch).
void print_mix(const SuiteShapes& suite, const Gflops& gf, const std::vector<int>& thread_counts) {
  const int T = int(thread_counts.size());
  const std::vector<Shape>& shapes = suite.shapes;
  std::printf("\nFLOP-weighted GFLOP/s over the suite's mix (mix = mean time of NN, NT, TN)\n");
  std::printf("%-9s %7s %7s %7s %7s %7s\n", "library", "threads", "NN", "NT", "TN", "mix");
  for (int lib = 0; lib < 2; ++lib)
    for (int ti = 0; ti < T; ++ti)
      std::printf("%-9s %7d %7.1f %7.1f %7.1f %7.1f\n", kLibName[lib], thread_counts[ti],
                  weighted(shapes, gf, suite.suite_count, lib, ti, 0),
                  weighted(shapes, gf, suite.suite_count, lib, ti, 1),
                  weighted(shapes, gf, suite.suite_count, lib, ti, 2),
                  weighted(shapes, gf, suite.suite_count, lib, ti, 3));
  for (int ti = 0; ti < T; ++ti) {
    double f_all[4] = {0, 0, 0, 0}, t_all[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto it = suite.suite_count.find(shapes[i]);
      if (it == suite.suite_count.end()) continue;
      double f = shapes[i].flops() * it->second;
      for (int l = 0; l < 3; ++l) {
        double t = f / (std::max(gf[kDnnl][ti][l][i], gf[kBlas][ti][l][i]) * 1e9);
        f_all[l] += f;
        t_all[l] += t;
        f_all[3] += f / 3;
        t_all[3] += t / 3;
      }
    }
    std::printf("%-9s %7d %7.1f %7.1f %7.1f %7.1f\n", "faster", thread_counts[ti],
                f_all[0] / t_all[0] * 1e-9, f_all[1] / t_all[1] * 1e-9,
                f_all[2] / t_all[2] * 1e-9, f_all[3] / t_all[3] * 1e-9);
  }
}

// Per model, the mix of each library at each thread count.
void print_models(const std::vector<std::string>& models, const SuiteShapes& suite, const Gflops& gf,
                  const std::vector<int>& thread_counts) {
  const int T = int(thread_counts.size());
  std::printf("\nPer model, mix GFLOP/s (oneDNN / OpenBLAS) at");
  for (int ti = 0; ti < T; ++ti) std::printf(" %d", thread_counts[ti]);
  std::printf(" thread(s)\n");
  for (const std::string& name : models) {
    static const std::map<Shape, double> kNoGemms;
    auto it = suite.model_count.find(name);
    const std::map<Shape, double>& counts = it == suite.model_count.end() ? kNoGemms : it->second;
    std::printf("%-17s", name.c_str());
    for (int ti = 0; ti < T; ++ti)
      std::printf("  %6.1f / %6.1f", weighted(suite.shapes, gf, counts, kDnnl, ti, 3),
                  weighted(suite.shapes, gf, counts, kBlas, ti, 3));
    std::printf("\n");
  }
}

// Shapes where one library wins by more than 20% (most threads).
void print_wins(const SuiteShapes& suite, const Gflops& gf, const std::vector<int>& thread_counts) {
  const int tl = int(thread_counts.size()) - 1;
  int dnnl_wins = 0, blas_wins = 0, n = 0;
  for (size_t i = 0; i < suite.shapes.size(); ++i)
    for (int l = 0; l < 3; ++l) {
      ++n;
      if (gf[kDnnl][tl][l][i] > 1.2 * gf[kBlas][tl][l][i]) ++dnnl_wins;
      if (gf[kBlas][tl][l][i] > 1.2 * gf[kDnnl][tl][l][i]) ++blas_wins;
    }
  std::printf("\nAt %d thread(s), of %d shape x layout cases: oneDNN faster by >20%% in %d, "
              "OpenBLAS faster by >20%% in %d\n",
              thread_counts[tl], n, dnnl_wins, blas_wins);
}

int run(int argc, char** argv) {
  // OpenBLAS has read OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE before main: without them it
  // chooses its kernels for this CPU (runtime/cpu/openblas_peer.h).
  cpu::restart_without_openblas_handicap(argv);
  std::map<std::string, std::string> flags;
  if (!parse_flags(argc, argv, flags)) return 2;
  auto flag = [&](const char* name, const char* def) {
    auto it = flags.find(name);
    return it == flags.end() ? std::string(def) : it->second;
  };
  const int trials = std::stoi(flag("trials", "5"));
  const double ms = std::stod(flag("ms", "10"));
  std::vector<int> thread_counts;
  for (const std::string& t : split(flag("threads", "1,2"))) thread_counts.push_back(std::stoi(t));
  StatusOr<Preset> preset = parse_preset(flag("preset", "cpu"));
  if (!preset.ok()) {
    std::fprintf(stderr, "gemm_libraries: %s\n", preset.error().to_string().c_str());
    return 2;
  }
  std::vector<std::string> models =
      flags.count("models") ? split(flags["models"]) : bench_model_names();

  print_libraries(trials, ms);
  SuiteShapes suite;
  if (!suite_shapes(models, *preset, suite)) return 1;
  if (flags.count("shapes-only")) {
    for (const Shape& s : suite.shapes)
      std::printf("  m=%lld n=%lld k=%lld count=%g\n", (long long)s.m, (long long)s.n,
                  (long long)s.k, suite.count(s));
    return 0;
  }
  const Gflops gf = measure_all(suite.shapes, thread_counts, trials, ms);
  print_table(suite, gf, thread_counts);
  print_mix(suite, gf, thread_counts);
  print_models(models, suite, gf, thread_counts);
  print_wins(suite, gf, thread_counts);
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::run(argc, argv); }
