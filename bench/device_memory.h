#pragma once
// Device memory of a training step on one NVIDIA GPU, estimated on the host (issue #31:
// weft's device memory below PyTorch's). The step graph is lowered as the cuda target
// lowers it (codegen::cuda_lower_options(), or another LowerOptions to compare) and
// runtime/cuda's own size computation (runtime/cuda/device_memory.h) counts what its
// executor would allocate: the root arena and inputs block, each loop body's, the
// update snapshots, the constants, cuBLAS's workspace. What only the device decides
// (cuDNN's workspaces, persistent loops' arrays, prefetch slots) is named, not counted.
//
//   StatusOr<StepMemory> m = step_memory(trainer.step_graph(), codegen::cuda_lower_options(), 8);
//   std::cout << format_step_memory(*m);
//
// Besides the total, the arena at its peak: which values are live at the node where the
// most planned bytes are (the memory plan's lower bound), largest first, with the op
// that makes each: what to cut to lower the arena.

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "ir/graph.h"
#include "runtime/cuda/device_memory.h"

namespace weft::bench {

/// One value live at the arena's peak.
struct LiveValue {
  std::string name;   ///< The value (%name).
  std::string op;     ///< Its producer: the op, or a fused kernel's kind and ops.
  std::string type;   ///< f32[64,32,16,16]
  int64_t bytes = 0;  ///< Aligned bytes of its buffer (values sharing one in place: once).
  int def = 0, last = 0;  ///< Node indices of its producer and last reader (n: the end).
};

struct StepMemory {
  cuda::DeviceMemory device;
  int64_t body_arenas = 0;      ///< The loop bodies' arenas alone (in device.loop_bodies).
  int invocations = 0;          ///< The Program's, its bodies' included (each once).
  int64_t lower_bound = 0;      ///< The root plan's lower bound (most bytes live at one node).
  int peak_node = 0;            ///< Where that is (index into the lowered graph's nodes).
  int nodes = 0;                ///< Nodes of the lowered root graph.
  std::vector<LiveValue> peak;  ///< Live there, largest first (at most the rows asked for).
  int64_t peak_rest = 0;        ///< Bytes of the live values not listed.
};

/// `step` (a training step graph, verified and typed) lowered with `options`, its device
/// memory and the `rows` largest values live at its arena's peak.
StatusOr<StepMemory> step_memory(const Graph& step, const codegen::LowerOptions& options, int rows);

/// Lines: the components in bytes and MiB, the total known, what is not counted, the
/// peak's values.
std::string format_step_memory(const StepMemory& m);

}  // namespace weft::bench
