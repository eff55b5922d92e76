#pragma once
// What gen_cases' files share (gen_cases_main.cc writes cases.cc; gen_cases_half.cc holds
// the mixed-precision cases, gen_cases_vector.cc the vectorized kernels'): a graph to
// lower for the GPU, and the helpers that build one from `.wir` text.

#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::gen_cases {

struct GraphCase {
  std::string name;
  Graph graph;
  int steps = 1;
  bool unroll = false;  ///< Lowered with LowerOptions::unroll_loops (for comparison).
  /// Lowered with WEFT_ATTENTION_GRAD_KERNEL=0: attention_grad decomposed, the kernel's
  /// A/B twin (runtime/cuda/library.h).
  bool decompose_attention_grad = false;
};

/// `text` parsed, every type inferred (an internal error when it does not parse).
Graph parse(const std::string& text);

/// `graph @NAME(INPUTS) { BODY return OUTS }`: every result type left to inference.
std::string graph_text(const std::string& name, const std::string& inputs, const std::string& body,
                       const std::string& outs);

/// Whole training steps built by the Trainer, run `steps` times by the test
/// (gen_cases_training.cc).
std::vector<GraphCase> training_cases();

/// The benchmark suite's ten models (bench/models.h) at the paper preset, at `precision`
/// (f32: `--suite`; bf16 under autocast: `--suite-bf16`), and the loop models once more
/// unrolled, for step_bench's suite binaries (gen_cases_training.cc).
std::vector<GraphCase> suite_cases(DType precision);

/// [Distributed]: the MLP step with its gradients' all_reduce ops, plain and accumulating
/// over 2 micro-batches (gen_cases_training.cc).
std::vector<GraphCase> data_parallel_cases();

/// #31: an attention block's step with fuse-attention and its two twins, causal and
/// padded (gen_cases_training.cc), appended last.
std::vector<GraphCase> attention_step_cases();

/// [Mixed precision] on the GPU (gen_cases_half.cc), after every other case.
std::vector<GraphCase> half_cases();

/// [Mixed precision]: an f16 step whose scaled backward overflows f16, so that loss scaling
/// skips its updates inside the CUDA graph (gen_cases_half.cc), appended after every other
/// case.
std::vector<GraphCase> loss_scale_cases();

/// Vectorized generated kernels and the library's cross-entropy rows (gen_cases_vector.cc),
/// appended last so every earlier case keeps its index and its seeded inputs.
std::vector<GraphCase> vector_cases();

/// cuBLASLt's epilogues' contractions (gen_cases_lt.cc, #31/#30), appended after
/// vector_cases.
std::vector<GraphCase> cublaslt_cases();

/// The vocabulary's softmax and log-softmax, 4096 rows of 8192, for vocab_bench
/// (gen_cases_vector.cc).
std::vector<GraphCase> vocab_cases();

}  // namespace weft::gen_cases
