// KernelCompiler: body validation, the structural key, the cache, and the glue between
// the emitter (emit_elementwise.h) and the JIT (jit.h).

#include "codegen/kernel_compiler.h"

#include "codegen/emit_elementwise.h"
#include "codegen/jit.h"

namespace weft::codegen {
namespace {

/// The user error for a body the generator cannot compile, or ok.
Status check_body(const Graph& body) {
  if (body.outputs().empty()) return Error("codegen: kernel body @" + body.name() + " has no outputs");
  for (ValueId v = 0; v < body.num_values(); ++v) {
    if (!body.value(v).type) {
      return Error("codegen: value %" + body.value(v).name + " of kernel body @" + body.name() +
                   " has no type; run shape inference before generating code");
    }
  }
  const Node* red = body_reduction(body);
  if (red != nullptr && &body.nodes().back() != red) {
    return Error("codegen: the reduction of kernel body @" + body.name() +
                 " must be its last node (its one output)", red->loc);
  }
  for (const Node& n : body.nodes()) {
    if (&n != red && n.info().category != OpCategory::Elementwise) {
      return Error("codegen: " + std::string(op_name(n.op)) + " in kernel body @" + body.name() +
                       " is neither elementwise nor the body's final reduction",
                   n.loc);
    }
  }
  // A reduction body iterates over the reduction's input shape.
  const Shape& space = red ? body.type(red->operands[0]).shape : body.type(body.outputs()[0]).shape;
  for (ValueId out : body.outputs()) {
    if (red) break;
    if (body.type(out).shape != space) {
      return Error("codegen: outputs of kernel body @" + body.name() + " differ in shape: " +
                   space.to_string() + " and " + body.type(out).shape.to_string() +
                   " (%" + body.value(out).name + "); a kernel has one iteration space");
    }
  }
  for (const Input& in : body.inputs()) {
    const Shape& s = body.type(in.value).shape;
    std::optional<Shape> b = broadcast_shapes(s, space);
    if (!b || *b != space) {
      return Error("codegen: operand %" + body.value(in.value).name + " " + s.to_string() +
                   " does not broadcast to the iteration space " + space.to_string());
    }
  }
  for (const Node& n : body.nodes()) {
    if (!KernelCompiler::supports(body, n)) {
      std::string types;
      for (ValueId o : n.operands) types += (types.empty() ? "" : ", ") + body.type(o).to_string();
      return Error("codegen: " + std::string(op_name(n.op)) + "(" + types +
                       ") is not supported by the kernel generator; keep it out of fused "
                       "kernels (KernelCompiler::supports)",
                   n.loc);
    }
  }
  return Status::ok_status();
}

std::string emit(const Graph& body, const std::string& symbol) {
  return body_reduction(body) ? emit_reduction(body, symbol) : emit_elementwise(body, symbol);
}

}  // namespace

std::string kernel_key(const Graph& body) {
  std::vector<std::string> name(body.num_values());
  std::string key = "(";
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    const ValueId v = body.inputs()[k].value;
    name[v] = "%a" + std::to_string(k);
    key += (k ? ", " : "") + body.type(v).to_string();
  }
  key += ")\n";
  for (size_t i = 0; i < body.nodes().size(); ++i) {
    const Node& n = body.nodes()[i];
    for (ValueId r : n.results) name[r] = "%" + std::to_string(i);
    key += name[n.result()] + " = " + std::string(op_name(n.op)) + "(";
    for (size_t j = 0; j < n.operands.size(); ++j) key += (j ? ", " : "") + name[n.operands[j]];
    key += ")";
    for (const AttrSpec& spec : n.info().attrs) {  // Defaults spelled out: one key per meaning.
      if (const Attribute* a = n.attr(spec.name)) {
        key += " " + std::string(spec.name) + "=" + attribute_to_string(*a);
      }
    }
    key += " : " + body.type(n.result()).to_string() + "\n";
  }
  key += "return";
  for (ValueId out : body.outputs()) key += " " + name[out];
  return key;
}

RowLayout row_layout(const Graph& body) {
  if (body_reduction(body) != nullptr) {
    const ReductionSpace r = collapse_reduction_space(body);
    return {r.rows(), r.row_length()};
  }
  const CollapsedSpace space = collapse_space(body);
  return {space.rows(), space.row_length()};
}

struct KernelCompiler::Impl {
  std::mutex mutex;
  Jit jit;
  std::unordered_map<std::string, std::unique_ptr<CompiledKernel>> kernels;
  std::vector<std::unique_ptr<JitModule>> modules;
  int compilations = 0;
  int cache_hits = 0;
};

KernelCompiler::KernelCompiler() : impl_(std::make_unique<Impl>()) {}
KernelCompiler::~KernelCompiler() = default;

KernelCompiler& KernelCompiler::global() {
  static KernelCompiler* compiler = new KernelCompiler();  // Never destroyed: kernels outlive exit-time destructors.
  return *compiler;
}

bool KernelCompiler::supports(const Graph& g, const Node& node) { return emit_supports(g, node); }

StatusOr<std::string> KernelCompiler::emit_mlir(const Graph& body) {
  WEFT_RETURN_IF_ERROR(check_body(body));
  return emit(body, "weft_kernel");
}

StatusOr<const CompiledKernel*> KernelCompiler::compile(const Graph& body) {
  WEFT_RETURN_IF_ERROR(check_body(body));
  std::string key = kernel_key(body);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (auto it = impl_->kernels.find(key); it != impl_->kernels.end()) {
    ++impl_->cache_hits;
    return static_cast<const CompiledKernel*>(it->second.get());
  }
  auto kernel = std::make_unique<CompiledKernel>();
  kernel->symbol = "weft_kernel_" + std::to_string(impl_->compilations);
  WEFT_ASSIGN_OR_RETURN(JitResult jit,
                        impl_->jit.compile(emit(body, kernel->symbol), kernel->symbol));
  const RowLayout layout = row_layout(body);
  kernel->fn = reinterpret_cast<GeneratedFn>(jit.address);
  kernel->rows = layout.rows;
  kernel->row_length = layout.row_length;
  impl_->modules.push_back(std::move(jit.module));
  ++impl_->compilations;
  const CompiledKernel* result = kernel.get();
  impl_->kernels.emplace(std::move(key), std::move(kernel));
  return result;
}

StatusOr<std::string> KernelCompiler::compile_object(const std::vector<ObjectKernel>& kernels,
                                                    const std::string& cpu) {
  std::vector<std::string> modules;
  for (const ObjectKernel& k : kernels) {
    WEFT_RETURN_IF_ERROR(check_body(*k.body));
    modules.push_back(emit(*k.body, k.symbol));
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->jit.compile_object(modules, cpu);
}

int KernelCompiler::compilations() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->compilations;
}

int KernelCompiler::cache_hits() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->cache_hits;
}

}  // namespace weft::codegen
