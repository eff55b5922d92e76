// The Executor's profile (executor.h, `set_profiling`): each invocation's time over the
// profiled steps, and the report `weftc profile` and the driver's --profile print — the
// costliest invocations with their share, GFLOP/s and GB/s (cost.h), and each GEMM's or
// convolution's dtype with a per-dtype summary.

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

#include "runtime/cpu/cost.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/executor_bound.h"

namespace weft::cpu {

void Executor::set_profiling(bool on) {
  profiling_ = on;
  const char* clock = std::getenv("WEFT_PROFILE_CLOCK");
  profile_thread_clock_ = clock != nullptr && std::string_view(clock) == "thread";
  profile_ns_.assign(code_.size(), 0.0);
  profiled_steps_ = 0;
}

double Executor::profile_clock_ns() const {
  if (profile_thread_clock_) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return 1e9 * static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<double> Executor::profile_us_per_step() const {
  std::vector<double> us;
  if (profiled_steps_ == 0) return us;
  for (size_t i = 0; i < code_.size(); ++i) us.push_back(profile_ns_[i] / 1e3 / profiled_steps_);
  return us;
}

namespace {

// The dtype a GEMM or a convolution multiplies in (its first operand's), for the profile;
// empty for every other invocation (pooling, a contraction by category, does no flops).
std::string_view contraction_dtype(const Invocation& inv, const InvocationCost& cost) {
  const bool contraction = inv.kind == Invocation::Kind::contraction ||
                           (inv.kind == Invocation::Kind::library &&
                            inv.node.info().category == OpCategory::Contraction && cost.flops > 0);
  return contraction ? dtype_name(inv.operands[0].type.dtype) : std::string_view();
}

// "  bf16 contractions: 2 invocations, 1.5 us per step, 11.2 GFLOP/s" per dtype: the
// achieved rate of the step's GEMMs and convolutions together, by the dtype they run in.
std::string contraction_summary(const Program& program, const std::vector<double>& us_per_step) {
  struct Sum {
    int count = 0;
    double us = 0, flops = 0;
  };
  std::map<std::string_view, Sum> by_dtype;
  for (size_t i = 0; i < program.code.size(); ++i) {
    const InvocationCost cost = invocation_cost(program, program.code[i]);
    const std::string_view dtype = contraction_dtype(program.code[i], cost);
    if (dtype.empty()) continue;
    Sum& sum = by_dtype[dtype];
    ++sum.count;
    sum.us += us_per_step[i];
    sum.flops += cost.flops;
  }
  std::string out;
  for (const auto& [dtype, sum] : by_dtype) {
    char line[160];
    std::snprintf(line, sizeof(line), "  %s contractions: %d invocations, %.1f us per step, %.1f GFLOP/s\n",
                  std::string(dtype).c_str(), sum.count, sum.us, sum.us > 0 ? sum.flops / (sum.us * 1e3) : 0.0);
    out += line;
  }
  return out;
}

}  // namespace

std::string Executor::profile_report(int top) const {
  if (profiled_steps_ == 0) return "no profiled steps\n";
  std::vector<size_t> order(code_.size());
  double total = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    total += profile_ns_[i];
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return profile_ns_[a] > profile_ns_[b]; });
  char line[512];
  std::snprintf(line, sizeof(line),
                "%lld steps, %.1f us %sper step in %zu invocations (%d on the reference "
                "interpreter), then %zu updates copied\n",
                static_cast<long long>(profiled_steps_), total / 1e3 / profiled_steps_,
                profile_thread_clock_ ? "of the calling thread's CPU time " : "",
                code_.size(), fallbacks_, program_.updates.size());
  std::string out = line;
  // The optimizer's share: invocations that write parameters or state in place.
  double in_place_ns = 0;
  int in_place = 0;
  for (size_t i = 0; i < code_.size(); ++i) {
    if (program_.code[i].results[0].space != Space::input) continue;
    in_place_ns += profile_ns_[i];
    ++in_place;
  }
  std::snprintf(line, sizeof(line),
                "  %.1f us per step in %d invocations writing parameters/state in place\n",
                in_place_ns / 1e3 / profiled_steps_, in_place);
  out += line;
  out += contraction_summary(program_, profile_us_per_step());
  out += "        time  share  invocation                                     GFLOP/s   GB/s  gemm  result\n";
  for (size_t k = 0; k < order.size() && static_cast<int>(k) < top; ++k) {
    const size_t i = order[k];
    const Invocation& inv = program_.code[i];
    const double ns = profile_ns_[i] / profiled_steps_;
    const InvocationCost cost = invocation_cost(program_, inv);
    char gflops[16] = "      -";
    if (cost.flops > 0 && ns > 0) std::snprintf(gflops, sizeof(gflops), "%7.1f", cost.flops / ns);
    std::snprintf(line, sizeof(line), "  %8.1f us %5.1f%%  #%-4zu %-40s %s %6.1f  %-4s  %s  %%%s\n",
                  ns / 1e3, 100.0 * profile_ns_[i] / total, i, code_[i]->describe().c_str(),
                  gflops, ns > 0 ? cost.bytes / ns : 0.0,
                  std::string(contraction_dtype(inv, cost)).c_str(),
                  inv.results[0].type.to_string().c_str(), inv.label.c_str());
    out += line;
  }
  return out;
}

}  // namespace weft::cpu
