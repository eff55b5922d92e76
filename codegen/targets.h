#pragma once
// The compiler's side of the backend registry: one table that maps the backend names a
// user writes (TrainOptions::backend, `weftc --backend=`, the examples' --backend) to how
// weft compiles a graph for that device — its pass pipeline and its compile-and-bind
// call — and, through the runtime registry (runtime/backend.h), to what the device
// offers. The Trainer, weftc and the AOT generator ask this table rather than comparing
// backend names; what stays name-specific is output that exists for one device only
// (`weftc dump --format=ptx`, `weftc check --backend=cuda`, the generator's object file
// or PTX).
//
//   StatusOr<const Target*> t = find_target("cuda");     // error lists every target
//   Pipeline p = (*t)->pipeline({});                       // what `weftc dump` walks
//   StatusOr<std::unique_ptr<ProgramExecutor>> ex = (*t)->compile(graph, {.max_memory = m});
//   if (!(*t)->has_check_numerics()) return (*t)->check_numerics_unsupported("--check-numerics");
//
// Targets: "cpu" (codegen/cpu_backend.h: kernels JIT-compiled through MLIR, a
// runtime/cpu Executor), "cuda" (codegen/cuda_backend.h: PTX, cuBLAS, cuDNN, one CUDA
// graph per step) and "reference" (the interpreter, runtime/reference: no Program, no
// executor; the semantics the other two are tested against). A fourth device is a new
// entry in targets.cc and its runtime registration, not edits across the tree. The AOT
// generator (tools/aot) compiles the two Program targets, cpu and cuda, into object code
// or PTX ahead of time; it looks them up here too.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "passes/pipeline.h"
#include "runtime/backend.h"
#include "runtime/collective/communicator.h"
#include "runtime/executor.h"
#include "runtime/program.h"
#include "runtime/reference/interpreter.h"

namespace weft::codegen {

/// How to compile and bind, for every target; a target ignores what does not concern
/// its device (the cuda fields on the cpu) and refuses what it cannot honour (a
/// communicator of more than one rank on cuda) with an error naming it.
struct CompileOptions {
  int num_threads = 0;          ///< cpu: host threads; 0: $WEFT_NUM_THREADS or every core.
  int64_t max_memory = 0;       ///< Arena + inputs limit; 0: the device's available memory.
  bool check_numerics = false;  ///< cpu: stop at the first op producing a NaN or an infinity.
  /// cpu: what runs the Program's all_reduce ops; nullptr: one process.
  std::shared_ptr<collective::Communicator> communicator = nullptr;
  int64_t all_reduce_bucket_bytes = int64_t{25} << 20;  ///< cpu::ExecutorOptions'.
  bool cuda_graph = true;            ///< cuda: the whole step as one CUDA graph.
  bool allow_host_fallback = false;  ///< cuda: ops without a CUDA kernel run on the host.
  /// cpu: unroll loops (LowerOptions::unroll_loops) rather than run each as a loop over
  /// its body: the comparison bench/loops makes. cuda runs loops as loop invocations.
  bool unroll_loops = false;
};

/// A Program lowered for code generated ahead of time (tools/aot), with its device code
/// as data: cuda, one PTX module and each kernel's entry symbol; cpu, none (the generator
/// compiles Program::kernels into an object file).
struct LoweredProgram {
  Program program;
  std::string ptx;
  std::vector<std::string> symbols;
};

struct Target {
  std::string name;  ///< "cpu", "cuda", "reference".
  /// The passes before lowering (default_pipeline() for the interpreter).
  Pipeline (*pipeline)(PipelineOptions options) = nullptr;
  /// Lowers `g` (verified and type-inferred), generates its device code and binds an
  /// executor. Null for the interpreter, which runs graphs, not Programs.
  StatusOr<std::unique_ptr<ProgramExecutor>> (*compile)(const Graph& g,
                                                        const CompileOptions& options) = nullptr;

  /// Lowers `g` without binding it, for the AOT generator (null for the interpreter).
  StatusOr<LoweredProgram> (*lower)(const Graph& g) = nullptr;

  /// False for the interpreter.
  bool compiled() const { return compile != nullptr; }
  /// The runtime backend its executors belong to (runtime/backend.h); null for the
  /// interpreter. The features below are the runtime backend's.
  const Backend* runtime() const;
  /// Whether a run can stop at the first NaN or infinity (the interpreter can).
  bool has_check_numerics() const;
  /// Whether a compiled step can average gradients over more than one rank.
  bool has_multi_rank() const;
  /// Whether a compiled step can time each kernel (set_profiling, profile_report).
  bool has_profiler() const;
  /// Whether it plans memory (an arena per Program): the compiled targets.
  bool plans_memory() const { return compiled(); }

  /// Compiles `g` and runs it once on `inputs` (graph-input order), returning the outputs
  /// and the assigned values as reference::run does; the interpreter runs the graph
  /// itself (with options.check_numerics, after reference::check_numerics). A
  /// check_numerics the target lacks is refused with check_numerics_unsupported.
  StatusOr<reference::RunResult> (*run_once)(const Graph& g, std::vector<Tensor> inputs,
                                             const CompileOptions& options) = nullptr;
  StatusOr<reference::RunResult> run(const Graph& g, std::vector<Tensor> inputs,
                                     const CompileOptions& options = {}) const;

  /// The error for check-numerics asked of a target without it, `feature` as the user
  /// asked ("check_numerics", "--check-numerics"): "check_numerics runs on the cpu and
  /// reference backends, not yet on cuda".
  Error check_numerics_unsupported(const std::string& feature) const;
  /// The error for profiling asked of a target without a profiler, `feature` as the user
  /// asked ("--profile"): "--profile runs on the cpu backend, not on cuda".
  Error profiler_unsupported(const std::string& feature) const;
  /// The error for a communicator of `ranks` > 1 on a target without collectives: "data
  /// parallelism over 2 ranks needs the cpu backend; the cuda backend runs one process".
  Error one_process(int ranks) const;
};

/// Every target: cpu, cuda, reference.
const std::vector<Target>& targets();

/// The target named `name`, or "unknown backend 'NAME'; backends: cpu, cuda, reference".
StatusOr<const Target*> find_target(std::string_view name);

/// The names of the targets for which `keep` is true, for messages: "a, b, c" (a list of
/// choices), or with `last` = " and ", "a, b and c" (prose).
template <typename Keep>
std::string target_names(Keep keep, std::string_view last = ", ") {
  std::vector<std::string> names;
  for (const Target& t : targets()) {
    if (keep(t)) names.push_back(t.name);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? std::string(last) : ", ") + names[i];
  }
  return out;
}

}  // namespace weft::codegen
