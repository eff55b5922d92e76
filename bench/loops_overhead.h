#pragma once
// Loop overhead per iteration (#31): what one trip of a loop invocation costs beyond its
// body's invocations — the loop's own bookkeeping (binding or addressing the slot, the
// carries' and ys' copies, the exit test) and, launch by launch on a GPU, the gaps
// between the body's launches. bench/loops.cc (the JIT, cpu or cuda) and
// bench/loops_cuda.cc (the AOT CUDA libraries, for a GPU machine) print it.
//
//   std::vector<double> root_us = ...;           // the step's profile, µs per invocation
//   auto costs = loop_costs(program, root_us, [&](const Program& body) {
//     return time_on_device(body);               // µs of one run of the body, bound alone
//   });
//   for (const LoopCost& c : *costs) printf("%.2f us per trip\n", c.overhead_us_per_trip());
//
// Two methods, both per trip:
//  - direct: the profile's loop line (µs per step: `length` runs of the body plus the
//    loop's own work) minus `length` runs of its body, the body Program bound alone on
//    the same device (standalone_body) and timed with the same clock, divided by
//    `length`. The body alone reads and writes buffers of its own (zeroed: values do not
//    change a kernel's time but through denormals, which zeros are not), the same ones
//    every run, warm in cache; inside the loop each trip reads its slot of the stacked xs
//    and writes its slot of the ys, memory the step touches there for the first time. So
//    the figure holds that memory traffic as well as the loop's bookkeeping: what a trip
//    costs beyond its body's kernels on warm data. Time the body as a whole run, as the
//    loop line is: a clock read around each of its invocations adds their cost to the
//    body and not to the line (on the CPU's thread clock about 0.2 µs per invocation, as
//    much as the overhead itself).
//  - difference: the whole step looped against unrolled (TrainOptions::unroll_loops),
//    (looped step − unrolled step) / trips per step. It includes what unrolling changes
//    besides the loop (the fusions and the memory plan across iterations), and two
//    noisy medians; the direct method isolates the loop invocation.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/program.h"

namespace weft::bench {

/// One loop invocation of a root Program's code.
struct LoopSite {
  size_t invocation = 0;    ///< Index in root.code.
  int body = -1;            ///< Index in root.bodies.
  std::string body_name;    ///< Its Program's name.
  int64_t length = 0;       ///< Iterations per run; at most that with an early exit.
  bool early_exit = false;  ///< A `stop` carry or an `active` mask (ir/scan.h, ScanExit).
  /// Iterations of the loops inside its body per run of the body, all levels.
  int64_t nested_trips = 0;
};

/// The loop invocations of `root.code`, in order.
std::vector<LoopSite> loop_sites(const Program& root);

/// Loop iterations per step: each loop's length, each loop inside a body once per trip
/// of the loop around it (at most, where a loop exits early).
int64_t trips_per_step(const Program& root);

/// `root.bodies[body]` as a Program of its own: its kernels are the root's (a body names
/// them by index, runtime/program.h) and so are the bodies of loops nested in it.
Program standalone_body(const Program& root, int body);

/// One loop invocation's cost, by the direct method.
struct LoopCost {
  LoopSite site;
  double loop_us = 0;  ///< The profile's line for the loop invocation, per step.
  double body_us = 0;  ///< One run of its body's invocations, bound alone.
  /// (loop_us − length · body_us) / length; 0 for a loop of length 0.
  double overhead_us_per_trip() const;
  /// The share of the loop's line that is not its body's invocations.
  double overhead_share() const;
};

/// Microseconds of one run of `body`'s invocations (a standalone_body) on the device, or
/// the device's error.
using BodyTimeFn = std::function<StatusOr<double>(const Program& body)>;

/// One LoopCost per loop invocation of `root`, from `root_us` (the step's profile,
/// program.code order) and each body timed alone by `time_body` (standalone_body).
/// Errors: a profile of the wrong length, or time_body's.
StatusOr<std::vector<LoopCost>> loop_costs(const Program& root, const std::vector<double>& root_us,
                                           const BodyTimeFn& time_body);

/// The difference method: (looped_us − unrolled_us) / trips; 0 when trips is 0.
double difference_overhead_per_trip(double looped_us, double unrolled_us, int64_t trips);

/// The method as the tools print it above their figures.
std::string overhead_method_note();

/// One line of the direct method for `model`'s loop `c` in form `form`:
/// "feedback_fixed    looped    loop #1 5x over @body0: line 60.0 us, body 10.00 us alone, overhead
/// 2.000 us per trip (16.7%)", on one line.
std::string format_loop_cost(const std::string& model, const std::string& form, const LoopCost& c);

}  // namespace weft::bench
