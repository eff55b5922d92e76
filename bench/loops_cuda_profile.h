#pragma once
// The direct method of bench/loops_overhead.h on one GPU: a step's per-invocation profile
// and each loop body's, bound alone, launch by launch with CUDA events
// (cuda::Executor::profile_step). bench/loops.cc --device=cuda (the JIT) and
// bench/loops_cuda.cc (the AOT CUDA libraries) share it.
//
// Launch by launch, a loop's line also holds the gaps between its body's launches where
// the GPU waits for the host to enqueue the next: what a CUDA graph (the step as run())
// removes. The figure is therefore the loop's cost outside a graph; the step's time as a
// graph is printed beside it. A body alone is timed by the same events, one recorded
// before each of its invocations and one after the last: the span from the first to the
// last (each record, a fraction of a microsecond on the GPU, counts in the body's time and
// not in the loop's line, so the figure leans low by about that per invocation).

#include <string>
#include <vector>

#include "bench/loops_overhead.h"
#include "runtime/cuda/executor.h"

namespace weft::bench {

/// Microseconds per invocation of one step of `ex` (program().code order): the mean of
/// `steps` profiled steps (each a step of training: its updates are applied).
StatusOr<std::vector<double>> cuda_profile_us(cuda::Executor& ex, int steps);

/// A BodyTimeFn (loops_overhead.h) binding each body alone on the GPU with the step's PTX
/// module `ptx` and its kernels' `symbols` (a body names the root's kernels): the sum of
/// its cuda_profile_us over `runs` runs, after one run to warm up.
BodyTimeFn cuda_body_timer(std::string ptx, std::vector<std::string> symbols, int runs);

}  // namespace weft::bench
