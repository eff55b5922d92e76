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

#include <cstdlib>
#include <string_view>

namespace weft {

/// Whether the environment sets `variable` to "0" (any other value, or none, leaves the
/// optimization on).
inline bool switched_off(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && std::string_view(value) == "0";
}

/// Whether the environment sets `variable` to "1" (an opt-in switch: any other value, or
/// none, leaves it off).
inline bool switched_on(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace weft
