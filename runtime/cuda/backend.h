#pragma once
// What the cuda backend (backend.cc, registered as "cuda" in runtime/backend.h) makes of
// the options every backend is bound with: one conversion, which Backend::bind (the AOT
// models, the driver) and codegen's cuda target (the JIT Trainer, weftc) both call, so a
// communicator, a bucket size or an accumulation window reaches the executor the same
// way on both paths.
//
//   StatusOr<cuda::ExecutorOptions> o = cuda::executor_options(bind_options, program);

#include "ir/status.h"
#include "runtime/backend.h"
#include "runtime/cuda/executor.h"
#include "runtime/program.h"

namespace weft::cuda {

/// The executor options `options` ask for, for `program`: NCCL's communicator and its
/// device (the calling thread's device without one), the bucket sizes, the memory limit,
/// TF32, gradient accumulation's window with the index of `options.step_input` in
/// `program`, and the input prefetch (off with `options.input_prefetch` false or
/// $WEFT_INPUT_PREFETCH=0). The capture and host-fallback choices keep ExecutorOptions'
/// defaults.
/// Error: a communicator of more than one rank that is not NCCL's.
StatusOr<ExecutorOptions> executor_options(const BindOptions& options, const Program& program);

}  // namespace weft::cuda
