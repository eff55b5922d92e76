#include "bench/suite_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench/process.h"

namespace weft::bench {
namespace {

using nlohmann::json;

constexpr const char* kNone = "—";

template <typename T>
T required_field(const std::string& what, const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    throw SuiteError{what + ": its result has no \"" + std::string(key) + "\": " + j.dump()};
  }
  return it->get<T>();
}

std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

/// "1,181,952".
std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

/// Display width of UTF-8 text: code points, not bytes ("—" and "×" are one column).
size_t display_width(const std::string& s) {
  size_t w = 0;
  for (unsigned char ch : s) w += (ch & 0xC0) != 0x80;
  return w;
}

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json summary_json(const RunSummary& s) {
  return json{{"config", s.config},
              {"threads", s.threads},
              {"tuned_env", s.tuned_env},
              {"median_ms", s.ran() ? json(s.median_ms()) : json(nullptr)},
              {"round_median_ms", s.round_median_ms},
              {"round_epoch_ms", s.round_epoch_ms},
              {"first_loss", or_null(s.first_loss)},
              {"param_count", or_null(s.param_count)},
              {"peak_bytes", or_null(s.peak_bytes)},
              {"device_peak_bytes", or_null(s.device_peak_bytes)},
              {"openblas_corename", or_null(s.openblas_corename)}};
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

bool first_losses_agree(double weft, double pytorch, double tolerance) {
  return std::fabs(weft - pytorch) <= tolerance * (1.0 + std::fabs(pytorch));
}

double first_loss_tolerance(const std::string& precision) { return precision == "f32" ? 1e-4 : 1e-2; }

void record_run(const std::string& what, const json& j, RunSummary& s) {
  try {
    s.round_median_ms.push_back(required_field<double>(what, j, "median_ms"));
    s.round_epoch_ms.push_back(optional_field<std::vector<double>>(j, "epoch_ms").value_or(
        std::vector<double>{}));
    if (!s.first_loss) s.first_loss = optional_field<double>(j, "first_loss");
    if (auto n = optional_field<int64_t>(j, "param_count")) {
      if (s.param_count && *s.param_count != *n) {
        throw SuiteError{what + " counts " + std::to_string(*n) + " parameters, the weft " +
                         "worker's --names-out " + std::to_string(*s.param_count)};
      }
      s.param_count = n;
    }
    if (auto peak = optional_field<int64_t>(j, "peak_rss_increase_bytes")) {
      s.peak_bytes = std::max(s.peak_bytes.value_or(*peak), *peak);
    }
    if (auto peak = optional_field<int64_t>(j, "device_peak_bytes")) {
      s.device_peak_bytes = std::max(s.device_peak_bytes.value_or(*peak), *peak);
    }
    if (auto core = optional_field<std::string>(j, "openblas_corename")) {
      if (s.openblas_corename && *s.openblas_corename != *core) {
        throw SuiteError{what + " ran OpenBLAS's " + *core + " kernels, an earlier round " +
                         *s.openblas_corename + "'s"};
      }
      s.openblas_corename = core;
    }
  } catch (const json::exception& e) {
    throw SuiteError{what + ": unexpected result " + j.dump() + ": " + e.what()};
  }
}

const RunSummary* ModelResult::best_pytorch() const {
  const RunSummary* best = nullptr;
  for (const RunSummary& s : pytorch) {
    if (s.ran() && (!best || s.median_ms() < best->median_ms())) best = &s;
  }
  return best;
}

std::string ModelResult::label() const {
  return fuse_attention ? model + " (fused attention)" : model;
}

std::string format_bytes(std::optional<int64_t> bytes) {
  if (!bytes) return kNone;
  return printf_string("%.1f MiB", double(*bytes) / (1024.0 * 1024.0));
}

std::string format_ms(std::optional<double> ms) {
  if (!ms) return kNone;
  if (*ms >= 100) return printf_string("%.0f", *ms);
  if (*ms >= 10) return printf_string("%.1f", *ms);
  return printf_string("%.2f", *ms);
}

namespace {

constexpr const char* kCpuConfigLegend =
    "config: the fastest of PyTorch's four configurations: 1 or 2 threads (torch.set_num_threads), "
    "default environment or \"tuned\" (OMP_WAIT_POLICY=PASSIVE and GLIBC_TUNABLES="
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296); every "
    "configuration without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (the OpenBLAS core it ran "
    "is in the lines below the table).\n";
constexpr const char* kGpuConfigLegend =
    "config: on the GPU (--device=cuda), the fastest of PyTorch's eager, fused (Adam(fused="
    "True)), compile (torch.compile with fused Adam; transformer and mlp only) and cuda_graph "
    "(the whole step as one CUDA graph), TF32 off; weft ran its AOT CUDA libraries, each "
    "step one CUDA graph. Each step ends with the loss copied to the host on both sides.\n";

/// Whether any run of `results` reported device memory (the suite ran on a GPU).
bool any_device_memory(const std::vector<ModelResult>& results) {
  for (const ModelResult& r : results) {
    if (r.weft && r.weft->device_peak_bytes) return true;
    for (const RunSummary& s : r.pytorch) {
      if (s.device_peak_bytes) return true;
    }
  }
  return false;
}

}  // namespace

std::string format_table(const std::vector<ModelResult>& results) {
  const bool device = any_device_memory(results);
  std::vector<std::vector<std::string>> rows = {
      {"model", "PyTorch ms", "config", "weft ms", "weft/PyTorch", "roofline ms", "weft peak",
       "PyTorch peak", "weft planned", "arena / lower bound"}};
  if (device) rows[0].insert(rows[0].end(), {"weft device", "PyTorch device"});
  for (const ModelResult& r : results) {
    const RunSummary* pt = r.best_pytorch();
    std::optional<double> pt_ms, weft_ms;
    if (pt) pt_ms = pt->median_ms();
    if (r.weft && r.weft->ran()) weft_ms = r.weft->median_ms();
    std::string weft_cell = format_ms(weft_ms);
    if (!weft_ms && !r.weft_note.empty()) {
      weft_cell = r.weft_note.rfind("declined", 0) == 0 ? "declined" : "not run";
    }
    if (!r.error.empty()) weft_cell = "FAILED";
    // A failed model's sides may not even train the same network: no ratio.
    std::string ratio = pt_ms && weft_ms && *pt_ms > 0 && r.error.empty() ? printf_string("%.2f×", *weft_ms / *pt_ms)
                                                       : std::string(kNone);
    std::string roof = kNone;
    if (r.roofline) roof = format_ms(r.roofline->epoch_ms) + " (" + r.roofline->bound_by() + ")";
    std::string arena = kNone;
    if (r.arena_bytes) {
      arena = format_bytes(r.arena_bytes) + " / " + format_bytes(r.arena_lower_bound_bytes);
    }
    rows.push_back({r.label(), format_ms(pt_ms), pt ? pt->config : kNone, weft_cell, ratio, roof,
                    format_bytes(r.weft ? r.weft->peak_bytes : std::nullopt),
                    format_bytes(pt ? pt->peak_bytes : std::nullopt),
                    format_bytes(r.weft_planned_bytes), arena});
    if (device) {
      rows.back().push_back(format_bytes(r.weft ? r.weft->device_peak_bytes : std::nullopt));
      rows.back().push_back(format_bytes(pt ? pt->device_peak_bytes : std::nullopt));
    }
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (size_t c = 0; c < row.size(); ++c) {
      // Text columns (model, config) left-aligned, figures right-aligned.
      std::string pad(width[c] - display_width(row[c]), ' ');
      bool left = c == 0 || c == 2;
      out += " " + (left ? row[c] + pad : pad + row[c]) + " |";
    }
    return out + "\n";
  };
  std::string out = line(rows[0]) + "|";
  for (size_t c = 0; c < width.size(); ++c) {
    bool left = c == 0 || c == 2;
    out += left ? ":" + std::string(width[c] + 1, '-') + "|" : std::string(width[c] + 1, '-') + ":|";
  }
  out += "\n";
  for (size_t i = 1; i < rows.size(); ++i) out += line(rows[i]);
  out +=
      "\nPyTorch ms, weft ms: median epoch (50 training steps), the median over rounds of each "
      "process's median epoch.\n"
      + std::string(device ? kGpuConfigLegend : kCpuConfigLegend) +
      "roofline ms: 50 × max(Σ count·2mnk / sgemm FLOP/s measured with oneDNN for that shape "
      "on the machine the suite ran on, "
      "2 × state bytes / triad bandwidth), state = parameters + gradients + optimizer state, each "
      "byte read once and written once per step; \"compute\" or \"memory\" names the larger bound.\n"
      "weft peak, PyTorch peak: the process's peak RSS increase (VmHWM at the end minus VmRSS "
      "before the model is built), the largest over rounds.\n"
      "weft planned: parameters + gradients + optimizer state + the intermediates weft accounts "
      "for. arena / lower bound: the compiled step's planned arena and its lower bound (the "
      "most intermediate bytes live at any point of its schedule).\n";
  if (device) {
    out +=
        "weft device, PyTorch device: device memory, the largest over rounds: the bytes weft's "
        "CUDA executor allocated (arena, inputs, cuBLAS/cuDNN workspace, constants); "
        "torch.cuda.max_memory_allocated() over the run, less what was allocated before the "
        "model was built.\n";
  }
  return out;
}

std::string format_checks(const std::vector<ModelResult>& results) {
  std::string out;
  for (const ModelResult& r : results) {
    const RunSummary* pt = r.best_pytorch();
    std::string line = r.label() + ":";
    std::optional<int64_t> wp = r.weft ? r.weft->param_count : std::nullopt;
    std::optional<int64_t> pp = pt ? pt->param_count : std::nullopt;
    auto count = [](std::optional<int64_t> n) { return n ? with_commas(*n) : std::string(kNone); };
    line += " params weft " + count(wp) + (wp && pp ? (*wp == *pp ? " = " : " ≠ ") : " ") +
            "PyTorch " + count(pp);
    auto loss = [](const std::optional<double>& l) {
      return l ? printf_string("%.8g", *l) : std::string(kNone);
    };
    std::string wl = r.weft ? loss(r.weft->first_loss) : kNone;
    std::string pl = pt ? loss(pt->first_loss) : kNone;
    line += "; first loss weft " + wl + " PyTorch " + pl;
    if (pt && pt->openblas_corename) line += "; PyTorch's OpenBLAS core " + *pt->openblas_corename;
    if (r.roofline) {
      line += printf_string("; roofline %.3g GFLOP/step", r.roofline->flops_per_step / 1e9) +
              printf_string(" %.3g ms compute", r.roofline->compute_ms_per_step) +
              printf_string(" / %.3g ms memory per step", r.roofline->memory_ms_per_step);
    }
    if (!r.weft_note.empty()) line += "; weft: " + r.weft_note;
    if (!r.error.empty()) line += "\n  error: " + r.error;
    out += line + "\n";
  }
  return out;
}

std::string results_json(const std::vector<ModelResult>& results, const std::string& preset,
                         const std::string& weft_path, int epochs, int warmup, int rounds,
                         const std::string& device, const std::string& precision) {
  json list = json::array();
  for (const ModelResult& r : results) {
    const RunSummary* pt = r.best_pytorch();
    bool weft_ran = r.weft && r.weft->ran();
    json o;
    o["model"] = r.model;
    o["preset"] = preset;
    o["device"] = device;
    o["precision"] = precision;
    o["weft_path"] = weft_path;
    o["fuse_attention"] = r.fuse_attention;
    o["epochs"] = epochs;
    o["warmup"] = warmup;
    o["rounds"] = rounds;
    o["pytorch_ms"] = pt ? json(pt->median_ms()) : json(nullptr);
    o["pytorch_config"] = pt ? json(pt->config) : json(nullptr);
    o["pytorch_openblas_corename"] = pt ? or_null(pt->openblas_corename) : json(nullptr);
    o["weft_ms"] = weft_ran ? json(r.weft->median_ms()) : json(nullptr);
    o["ratio_weft_over_pytorch"] =
        pt && weft_ran && pt->median_ms() > 0 ? json(r.weft->median_ms() / pt->median_ms())
                                              : json(nullptr);
    o["weft_peak_bytes"] = r.weft ? or_null(r.weft->peak_bytes) : json(nullptr);
    o["pytorch_peak_bytes"] = pt ? or_null(pt->peak_bytes) : json(nullptr);
    o["weft_device_peak_bytes"] = r.weft ? or_null(r.weft->device_peak_bytes) : json(nullptr);
    o["pytorch_device_peak_bytes"] = pt ? or_null(pt->device_peak_bytes) : json(nullptr);
    o["weft_planned_bytes"] = or_null(r.weft_planned_bytes);
    o["arena_bytes"] = or_null(r.arena_bytes);
    o["arena_lower_bound_bytes"] = or_null(r.arena_lower_bound_bytes);
    o["roofline_ms"] = r.roofline ? json(r.roofline->epoch_ms) : json(nullptr);
    if (r.roofline) {
      const Roofline& rl = *r.roofline;
      o["roofline"] = {{"flops_per_step", rl.flops_per_step},
                       {"memory_bytes_per_step", rl.memory_bytes_per_step},
                       {"compute_ms_per_step", rl.compute_ms_per_step},
                       {"memory_ms_per_step", rl.memory_ms_per_step},
                       {"bandwidth_bytes_per_s", rl.bandwidth_bytes_per_s},
                       {"bound_by", rl.bound_by()},
                       {"steps_per_epoch", kStepsPerEpoch},
                       {"state_traffic_factor", kStateTrafficFactor}};
    } else {
      o["roofline"] = nullptr;
    }
    json shapes = json::array();
    for (const GemmShape& s : r.gemm_shapes) shapes.push_back({s.m, s.n, s.k, s.count});
    o["gemm_shapes"] = shapes;
    // GFLOP/s measured for each entry of gemm_shapes, in the same order.
    json gflops = json::array();
    if (r.roofline) {
      for (double f : r.roofline->sgemm_flops_per_s) gflops.push_back(f / 1e9);
    }
    o["sgemm_gflops"] = gflops;
    o["state_bytes"] = or_null(r.state_bytes);
    o["matmul_flops"] = or_null(r.weft_matmul_flops);
    o["param_count_weft"] = r.weft ? or_null(r.weft->param_count) : json(nullptr);
    o["param_count_pytorch"] = pt ? or_null(pt->param_count) : json(nullptr);
    o["first_loss_weft"] = r.weft ? or_null(r.weft->first_loss) : json(nullptr);
    o["first_loss_pytorch"] = pt ? or_null(pt->first_loss) : json(nullptr);
    o["weft"] = r.weft ? summary_json(*r.weft) : json(nullptr);
    json configs = json::array();
    for (const RunSummary& s : r.pytorch) configs.push_back(summary_json(s));
    o["pytorch_configs"] = configs;
    o["weft_note"] = r.weft_note.empty() ? json(nullptr) : json(r.weft_note);
    o["error"] = r.error.empty() ? json(nullptr) : json(r.error);
    list.push_back(o);
  }
  return list.dump(2) + "\n";
}

}  // namespace weft::bench
