#pragma once
// Internal to the kernels built on oneDNN's primitives (conv_onednn.cc, matmul_onednn.cc):
// the CPU engine, a primitive with its arguments, the parts a kernel cuts its work into
// (one per pool chunk), and the kernel scratch that their temporaries (blocked layouts,
// user-mode scratchpads) are laid out in.
//
//   Scratch scratch;
//   Step step{dnnl::matmul(pd), {{DNNL_ARG_SRC, a}, ...}};
//   add_scratchpad(step, pd.scratchpad_desc(), scratch);   // bound by scratch.bind(base)

#include <dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/cpu/contraction_internal.h"

namespace weft::cpu::onednn {

/// The one CPU engine every primitive is created on.
inline dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// One primitive and its arguments.
struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};

/// The steps one pool chunk runs, in order, on its own stream.
struct Part {
  std::vector<Step> steps;
  dnnl::stream stream{cpu_engine()};
};

/// Runs every part, each on one of the pool's chunks with OpenMP (so oneDNN) limited to
/// that thread.
inline void run_parts(ThreadPool& pool, std::vector<Part>& parts) {
  pool.parallel_for(static_cast<int64_t>(parts.size()), 1, [&](int64_t begin, int64_t end) {
    use_one_omp_thread();
    for (int64_t s = begin; s < end; ++s) {
      Part& p = parts[s];
      for (Step& step : p.steps) step.primitive.execute(p.stream, step.args);
      p.stream.wait();
    }
  });
}

/// The temporary buffers of a kernel: memories created without a buffer, each given a
/// 64-byte aligned offset in the kernel's scratch, bound when the scratch is.
struct Scratch {
  std::vector<std::pair<dnnl::memory, int64_t>> memories;
  int64_t bytes = 0;

  /// Reserves `size` bytes; returns their offset.
  int64_t reserve(size_t size) {
    const int64_t at = bytes;
    bytes += static_cast<int64_t>((size + 63) / 64 * 64);
    return at;
  }
  /// A memory of `desc` in a fresh part of the scratch.
  dnnl::memory make(const dnnl::memory::desc& desc) {
    dnnl::memory m(desc, cpu_engine(), DNNL_MEMORY_NONE);
    memories.emplace_back(m, reserve(desc.get_size()));
    return m;
  }
  /// Points every memory at its offset in `base`.
  void bind(std::byte* base) {
    for (auto& [m, at] : memories) m.set_data_handle(base + at);
  }
};

/// Adds a user-mode scratchpad to `step` when the primitive needs one.
inline void add_scratchpad(Step& step, const dnnl::memory::desc& scratchpad, Scratch& scratch) {
  if (scratchpad.get_size() > 0) step.args[DNNL_ARG_SCRATCHPAD] = scratch.make(scratchpad);
}

/// Attributes asking for a user-mode scratchpad (so it lives in the kernel's scratch).
inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace weft::cpu::onednn
