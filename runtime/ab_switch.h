#pragma once
// A/B switches: environment variables that turn one of weft's optimizations off so that a
// before/after measurement runs the same binary (WEFT_MERGE_UPDATES, WEFT_FOLD_CONCATS,
// WEFT_LOOP_SLOTS in codegen/cpu_backend.cc, WEFT_GPU_VECTOR in codegen/emit_gpu.cc,
// WEFT_FOLD_WINDOW_PRODUCERS in codegen/lower.cc, WEFT_INPUT_PREFETCH in
// runtime/cuda/backend.cc). Each is read where its decision is made, through this one
// test. An optimization not yet measured is opt-in instead (WEFT_CUBLASLT_EPILOGUE in
// runtime/cuda/executor.cc, WEFT_PERSISTENT_LOOPS in runtime/cuda/bind.cc): on only when
// set to "1".
//
//   if (switched_off("WEFT_FOLD_CONCATS")) lower.fold_concats = false;

namespace weft {

/// Whether the environment sets `variable` to "0" (any other value, or none, leaves the
/// optimization on; a value other than "0" or "1", such as `off`, is named on stderr once).
bool switched_off(const char* variable);

/// Whether the environment sets `variable` to "1" (an opt-in switch: any other value, or
/// none, leaves it off; a value other than "0" or "1", such as `yes`, is named on stderr once).
bool switched_on(const char* variable);

}  // namespace weft
