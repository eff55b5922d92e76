#pragma once
// What the cpu backend (backend.cc, registered as "cpu" in runtime/backend.h) makes of the
// options every backend is bound with: one conversion, which Backend::bind (the AOT
// models, the driver) and codegen's cpu target (the JIT Trainer, weftc) both call
// (runtime/cuda/backend.h is the cuda one).

#include "runtime/backend.h"
#include "runtime/cpu/executor.h"

namespace weft::cpu {

/// The executor options `options` ask for: threads, the memory limit, the communicator
/// and the bucket sizes. The rest (check-numerics, overlap, loop slots) keeps
/// ExecutorOptions' defaults; the JIT target sets them from its own options.
ExecutorOptions executor_options(const BindOptions& options);

}  // namespace weft::cpu
