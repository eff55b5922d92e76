#include "codegen/targets.h"

#include <utility>

#include "codegen/cpu_backend.h"
#include "codegen/cuda_backend.h"
#include "codegen/cuda_program.h"
#include "codegen/kernel_compiler.h"
#include "codegen/lower.h"
#include "codegen/program_source.h"
#include "codegen/run_once.h"
#include "runtime/cpu/backend.h"
#include "runtime/cuda/backend.h"
#include "runtime/reference/numerics.h"

namespace weft::codegen {
namespace {

// The entry of targets() named `name`, for a compiled target's calls to ask it for their
// lowering options (Target::lower_options).
const Target& target(std::string_view name) { return **find_target(name); }

// The cpu backend's own conversion of the bind options (runtime/cpu/backend.h), plus
// what only the JIT target sets.
CpuOptions cpu_options(const CompileOptions& options) {
  CpuOptions cpu;
  cpu.executor = cpu::executor_options(options.bind);
  cpu.executor.check_numerics = options.check_numerics;
  cpu.executor.overlap_all_reduce = options.overlap_all_reduce;
  cpu.lower = target("cpu").lower_options(options);
  return cpu;
}

StatusOr<std::unique_ptr<ProgramExecutor>> compile_cpu(const Graph& g, const CompileOptions& options) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Executor> ex, compile_for_cpu(g, cpu_options(options)));
  return std::unique_ptr<ProgramExecutor>(std::move(ex));
}

StatusOr<std::unique_ptr<cuda::Executor>> bind_cuda(const Graph& g, const CompileOptions& options) {
  WEFT_ASSIGN_OR_RETURN(CudaProgram p, compile_cuda_program(g, target("cuda").lower_options(options)));
  WEFT_ASSIGN_OR_RETURN(cuda::ExecutorOptions executor, cuda_executor_options(options, p.program));
  return bind_for_cuda(std::move(p), executor);
}

StatusOr<std::unique_ptr<ProgramExecutor>> compile_cuda(const Graph& g, const CompileOptions& options) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::Executor> ex, bind_cuda(g, options));
  return std::unique_ptr<ProgramExecutor>(std::move(ex));
}

StatusOr<LoweredProgram> lower_cpu(const Graph& g) {
  WEFT_ASSIGN_OR_RETURN(Lowering l, lower_to_program(g, target("cpu").lower_options({})));
  return LoweredProgram{std::move(l.program), "", {}};
}

StatusOr<LoweredProgram> lower_cuda(const Graph& g) {
  WEFT_ASSIGN_OR_RETURN(CudaProgram p, compile_cuda_program(g, target("cuda").lower_options({})));
  return LoweredProgram{std::move(p.program), std::move(p.ptx), std::move(p.symbols)};
}

// Every kernel of `programs` into one object file for `cpu` (the AOT object form).
StatusOr<std::string> compile_cpu_object(const std::vector<NamedProgram>& programs, const std::string& cpu) {
  std::vector<KernelCompiler::ObjectKernel> kernels;
  for (const NamedProgram& p : programs) {
    for (size_t k = 0; k < p.program->kernels.size(); ++k) {
      const GeneratedKernel& kernel = p.program->kernels[k];
      kernels.push_back({kernel_symbol(p.name, static_cast<int>(k)), &kernel.body, kernel.kind});
    }
  }
  return KernelCompiler::global().compile_object(kernels, cpu);
}

StatusOr<reference::RunResult> run_cpu(const Graph& g, std::vector<Tensor> inputs,
                                       const CompileOptions& options) {
  return run_on_cpu(g, inputs, cpu_options(options));
}

StatusOr<reference::RunResult> run_cuda(const Graph& g, std::vector<Tensor> inputs,
                                        const CompileOptions& options) {
  WEFT_RETURN_IF_ERROR(check_input_count(g, inputs));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::Executor> ex, bind_cuda(g, options));
  return run_once(*ex, g, inputs);
}

// Each compiled target's pipeline followed by merge-updates: every graph pass its
// lower_to_program runs (Target::dump_pipeline).
Pipeline cpu_dump_pipeline(PipelineOptions options) {
  Pipeline p = cpu_pipeline(std::move(options));
  add_merge_updates(p);
  return p;
}

Pipeline cuda_dump_pipeline(PipelineOptions options) {
  Pipeline p = cuda_pipeline(std::move(options));
  add_merge_updates(p, cuda_lower_options());
  return p;
}

LowerOptions cpu_lower_options() { return LowerOptions{}; }

Pipeline reference_pipeline(PipelineOptions options) { return default_pipeline(std::move(options)); }

StatusOr<reference::RunResult> run_reference(const Graph& g, std::vector<Tensor> inputs,
                                             const CompileOptions& options) {
  if (options.check_numerics) WEFT_RETURN_IF_ERROR(reference::check_numerics(g, inputs));
  return reference::run(g, std::move(inputs));
}

}  // namespace

StatusOr<cuda::ExecutorOptions> cuda_executor_options(const CompileOptions& options, const Program& program) {
  WEFT_ASSIGN_OR_RETURN(cuda::ExecutorOptions gpu, cuda::executor_options(options.bind, program));
  gpu.cuda_graph = options.capture_graph;
  gpu.allow_host_fallback = options.allow_host_fallback;
  return gpu;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {.name = "cpu", .pipeline = cpu_pipeline, .dump_pipeline = cpu_dump_pipeline,
       .compile = compile_cpu, .lower = lower_cpu, .default_lower_options = cpu_lower_options,
       .device = "the CPU", .title = "CPU", .aot_code = AotCode::object,
       .compile_object = compile_cpu_object, .run_once = run_cpu},
      {.name = "cuda", .pipeline = cuda_pipeline, .dump_pipeline = cuda_dump_pipeline,
       .compile = compile_cuda, .lower = lower_cuda, .default_lower_options = cuda_lower_options,
       .device = "the GPU", .title = "CUDA", .aot_code = AotCode::module, .module_format = "ptx",
       .module_description = "one PTX module (codegen/cuda_program.h)", .run_once = run_cuda},
      {.name = "reference", .pipeline = reference_pipeline, .run_once = run_reference},
  };
  return all;
}

StatusOr<const Target*> find_target(std::string_view name) {
  for (const Target& t : targets()) {
    if (t.name == name) return &t;
  }
  return Error{"unknown backend '" + std::string(name) + "'; backends: " +
               target_names([](const Target&) { return true; })};
}

const Backend* Target::runtime() const {
  if (!compiled()) return nullptr;
  // The compiled targets link their runtime registration (this library's deps), so the
  // lookup cannot fail.
  StatusOr<const Backend*> b = find_backend(name);
  WEFT_CHECK(b.ok(), "codegen target '" + name + "' has no runtime backend: " + b.error().to_string());
  return *b;
}

LowerOptions Target::lower_options(const CompileOptions& options) const {
  WEFT_CHECK(default_lower_options != nullptr, "codegen target '" + name + "' lowers nothing");
  LowerOptions lower = default_lower_options();
  lower.unroll_loops = options.unroll_loops;
  return lower;
}

bool Target::has_check_numerics() const { return !compiled() || runtime()->has(Feature::check_numerics); }

bool Target::has_multi_rank() const { return compiled() && runtime()->has(Feature::multi_rank); }

bool Target::has_profiler() const { return compiled() && runtime()->has(Feature::profiler); }

bool Target::has_device_check() const { return compiled() && runtime()->check_program != nullptr; }

StatusOr<reference::RunResult> Target::run(const Graph& g, std::vector<Tensor> inputs,
                                           const CompileOptions& options) const {
  if (options.check_numerics && !has_check_numerics()) return check_numerics_unsupported("check_numerics");
  return run_once(g, std::move(inputs), options);
}

Error Target::check_numerics_unsupported(const std::string& feature) const {
  return Error{feature + " runs on the " + target_names([](const Target& t) { return t.has_check_numerics(); }, " and ") +
               " backends, not yet on " + name};
}

Error Target::profiler_unsupported(const std::string& feature) const {
  return Error{feature + " runs on the " + target_names([](const Target& t) { return t.has_profiler(); }, " and ") +
               " backend, not on " + name};
}

Error Target::one_process(int ranks) const {
  return Error{"data parallelism over " + std::to_string(ranks) + " ranks needs the " +
               target_names([](const Target& t) { return t.has_multi_rank(); }, " or ") + " backend; the " +
               (compiled() ? name + " backend" : std::string("reference interpreter")) + " runs one process"};
}

}  // namespace weft::codegen
