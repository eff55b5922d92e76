#pragma once
// The compiler's side of the backend registry: one table that maps the backend names a
// user writes (TrainOptions::backend, `weftc --backend=`, the examples' --backend, the
// AOT macros' `backend`) to how weft compiles a graph for that device — its pass
// pipeline, its compile-and-bind call, how its kernels travel in code built ahead of
// time — and, through the runtime registry (runtime/backend.h), to what the device
// offers. The Trainer, weftc and the AOT generator ask this table rather than comparing
// backend names.
//
//   StatusOr<const Target*> t = find_target("cuda");     // error lists every target
//   Pipeline p = (*t)->pipeline({});                       // what `weftc dump` walks
//   StatusOr<std::unique_ptr<ProgramExecutor>> ex = (*t)->compile(graph, {.bind = {.max_memory = m}});
//   if (!(*t)->has_check_numerics()) return (*t)->check_numerics_unsupported("--check-numerics");
//   if ((*t)->aot_code == AotCode::module) { ... (*t)->lower(graph)->module ... }  // PTX
//
// Targets: "cpu" (codegen/cpu_backend.h: kernels JIT-compiled through MLIR, a
// runtime/cpu Executor), "cuda" (codegen/cuda_backend.h: PTX, cuBLAS, cuDNN, one CUDA
// graph per step) and "reference" (the interpreter, runtime/reference: no Program, no
// executor; the semantics the other two are tested against). A fourth device is a new
// entry in targets.cc and its runtime registration (runtime/README.md, "A new device"),
// not edits across the tree. The AOT generator (tools/aot) compiles the two Program
// targets, cpu and cuda, ahead of time into the form their aot_code names.

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

namespace weft::cuda {
struct ExecutorOptions;  // runtime/cuda/executor.h
}  // namespace weft::cuda

namespace weft::codegen {

struct LowerOptions;  // codegen/lower.h

/// How to compile and bind, for every target; a target ignores what does not concern
/// its device (the cuda fields on the cpu) and refuses what it cannot honour (a
/// communicator of more than one rank that is not NCCL's on cuda) with an error naming it.
struct CompileOptions {
  /// What binding needs, as every backend is bound with it (runtime/backend.h): threads,
  /// the memory limit, the communicator that runs the Program's all_reduce ops (cpu: any;
  /// cuda: NCCL's, from Backend::communicator_for), the bucket sizes, TF32, gradient
  /// accumulation's window. The same struct the AOT path's Backend::bind is given.
  BindOptions bind = {};
  bool check_numerics = false;  ///< cpu: stop at the first op producing a NaN or an infinity.
  bool overlap_all_reduce = true;  ///< cpu::ExecutorOptions'.
  /// Devices that capture work (cuda): the whole step captured once as one device graph
  /// and replayed (a CUDA graph); false: launched op by op.
  bool capture_graph = true;
  /// Devices that refuse ops without a kernel of theirs (cuda): run those on the host.
  bool allow_host_fallback = false;
  /// Unroll loops (LowerOptions::unroll_loops, through Target::lower_options: cpu and
  /// cuda alike) rather than run each as a loop invocation over its body: the comparison
  /// bench/loops makes.
  bool unroll_loops = false;
};

/// The cuda executor's options for `options` and `program` (what the cuda target compiles
/// and runs with): cuda::executor_options of options.bind — the same conversion as the
/// cuda Backend's bind, so NCCL's communicator, the bucket sizes and the accumulation
/// window reach a JIT step as they reach an AOT one — plus the capture and host-fallback
/// choices; a caller includes runtime/cuda/executor.h. Error: a communicator of more
/// than one rank that is not NCCL's.
StatusOr<cuda::ExecutorOptions> cuda_executor_options(const CompileOptions& options, const Program& program);

/// A Program lowered for code generated ahead of time (tools/aot), with its device code
/// as data: in the module form, one module and each kernel's entry symbol (cuda: PTX);
/// in the object form, none (the generator compiles Program::kernels into an object
/// file: Target::compile_object).
struct LoweredProgram {
  Program program;
  std::string module;
  std::vector<std::string> symbols;
};

/// How a target's generated kernels travel in code built ahead of time (tools/aot): the
/// two forms of DeviceCode (runtime/backend.h) and of the AOT ModelTable
/// (training/aot/compiled_model.h).
enum class AotCode {
  none,    ///< Nothing is compiled ahead of time: the interpreter.
  /// Host object code: every kernel of the library's Programs compiled into one object
  /// file (Target::compile_object) linked into it, its table listing their addresses
  /// (cpu).
  object,
  /// One module of device code per Program, embedded in the Program's source as a
  /// string constant with its kernels' entry symbols and loaded by the backend when it
  /// binds (cuda: PTX).
  module,
};

/// A Program and the name its kernels' symbols are made from (kernel_symbol,
/// codegen/program_source.h).
struct NamedProgram {
  std::string name;
  const Program* program = nullptr;
};

struct Target {
  std::string name;  ///< "cpu", "cuda", "reference".
  /// The passes before lowering (default_pipeline() for the interpreter).
  Pipeline (*pipeline)(PipelineOptions options) = nullptr;
  /// `pipeline` followed by the graph passes of lowering itself (merge-updates): what
  /// `weftc dump --after` walks. Null: `pipeline` (the interpreter lowers nothing).
  Pipeline (*dump_pipeline)(PipelineOptions options) = nullptr;
  /// Lowers `g` (verified and type-inferred), generates its device code and binds an
  /// executor. Null for the interpreter, which runs graphs, not Programs.
  StatusOr<std::unique_ptr<ProgramExecutor>> (*compile)(const Graph& g,
                                                        const CompileOptions& options) = nullptr;

  /// Lowers `g` without binding it, for the AOT generator and `weftc check` / `weftc
  /// dump --format=MODULE` (null for the interpreter).
  StatusOr<LoweredProgram> (*lower)(const Graph& g) = nullptr;
  /// The target's own lowering options (cpu: LowerOptions{}; cuda: cuda_lower_options(),
  /// codegen/cuda_program.h), which `compile`, `run` and `lower` start from
  /// (lower_options; `lower` with the default CompileOptions). Null for the interpreter.
  LowerOptions (*default_lower_options)() = nullptr;

  // ---- The device in prose, for messages and generated comments (compiled targets).
  /// The device as a noun phrase: "the CPU", "the GPU" ("every op runs on the GPU").
  std::string device = {};
  /// The backend's name as a proper noun: "CPU", "CUDA" ("the CUDA backend's kernels").
  std::string title = {};

  // ---- Code built ahead of time (tools/aot).
  AotCode aot_code = AotCode::none;
  /// Object form: every kernel of `programs` compiled into one object file for the host
  /// CPU `cpu` ("native" or an LLVM CPU name), as its bytes; null in the other forms.
  StatusOr<std::string> (*compile_object)(const std::vector<NamedProgram>& programs,
                                          const std::string& cpu) = nullptr;
  /// Module form: the module's format, as `weftc dump --format=` names it ("ptx"), and
  /// what the generated source calls it ("one PTX module (codegen/cuda_program.h)").
  std::string module_format = {};
  std::string module_description = {};

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
  /// The lowering options `compile` and `run` lower with under `options` (`lower` under
  /// the default ones): default_lower_options() with what CompileOptions decides of every
  /// target's lowering (unroll_loops), one conversion for them all. Compiled targets
  /// only; a caller includes codegen/lower.h.
  LowerOptions lower_options(const CompileOptions& options) const;
  /// Whether its device refuses some ops a Program can hold, and so can check a Program
  /// before it runs (Backend::check_program; `weftc check --backend=cuda`).
  bool has_device_check() const;

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
  /// parallelism over 2 ranks needs the cpu or cuda backend; the reference interpreter
  /// runs one process".
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
