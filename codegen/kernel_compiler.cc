// KernelCompiler: body validation, the structural key, the cache, and the glue between
// the emitter (emit_elementwise.h) and the JIT (jit.h).

#include "codegen/kernel_compiler.h"

#include "codegen/emit_elementwise.h"
#include "codegen/jit.h"
#include "passes/fuse_elementwise.h"

namespace weft::codegen {
namespace {

// A slice through which a body input is read in place (input_window), or a pad through
// which an output is stored (output_window).
bool is_window(const Graph& body, const Node& n) {
  if (n.op == Op::Pad) {
    for (size_t o = 0; o < body.outputs().size(); ++o) {
      if (output_window(body, o) == &n) return true;
    }
    return false;
  }
  if (n.op != Op::Slice) return false;
  const int k = body.input_index(n.operands[0]);
  return k >= 0 && input_window(body, static_cast<size_t>(k)) == &n;
}

Status check_supported(const Graph& body) {
  for (const Node& n : body.nodes()) {
    if (!is_window(body, n) && !KernelCompiler::supports(body, n)) {
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

/// A row body: every reduction keepdims over the same trailing axes of one shape, every
/// value broadcasting to that shape, outputs full or per-row.
Status check_row_body(const Graph& body) {
  if (first_reduction(body) == nullptr) {
    return Error("codegen: row kernel body @" + body.name() + " has no reduction");
  }
  const Node& first = *first_reduction(body);
  const Shape& full = body.type(first.operands[0]).shape;
  const Shape& row = body.type(first.result()).shape;
  const std::string where = "codegen: row kernel body @" + body.name() + ": ";
  for (const Node& n : body.nodes()) {
    const Shape& s = body.type(n.result()).shape;
    if (n.info().category == OpCategory::Reduction) {
      if (!n.bool_attr("keepdims") || body.type(n.operands[0]).shape != full || s != row ||
          !is_row_shape(row, full)) {
        return Error(where + std::string(op_name(n.op)) + " from " +
                         body.type(n.operands[0]).shape.to_string() + " to " + s.to_string() +
                         ": the reductions of a row kernel keep their dims and reduce the "
                         "same trailing axes of one shape (here " + full.to_string() + " to " +
                         row.to_string() + ")",
                     n.loc);
      }
    } else if (n.info().category != OpCategory::Elementwise) {
      return Error(where + std::string(op_name(n.op)) + " is neither elementwise nor a reduction", n.loc);
    }
  }
  for (ValueId v = 0; v < body.num_values(); ++v) {
    const Shape& s = body.type(v).shape;
    std::optional<Shape> b = broadcast_shapes(s, full);
    if (!b || *b != full) {
      return Error(where + "%" + body.value(v).name + " " + s.to_string() +
                   " does not broadcast to the row space " + full.to_string());
    }
  }
  for (ValueId out : body.outputs()) {
    const Shape& s = body.type(out).shape;
    if (s != full && s != row) {
      return Error(where + "output %" + body.value(out).name + " " + s.to_string() +
                   " has neither the full shape " + full.to_string() + " nor the per-row shape " +
                   row.to_string());
    }
  }
  return check_supported(body);
}

/// The error for a body with no outputs or an untyped value, or ok.
Status check_typed(const Graph& body) {
  if (body.outputs().empty()) return Error("codegen: kernel body @" + body.name() + " has no outputs");
  for (ValueId v = 0; v < body.num_values(); ++v) {
    if (!body.value(v).type) {
      return Error("codegen: value %" + body.value(v).name + " of kernel body @" + body.name() +
                   " has no type; run shape inference before generating code");
    }
  }
  return Status::ok_status();
}

/// An elementwise body (`red` null) or a reduction body ending in `red`: elementwise
/// nodes, one iteration space (the reduction's input shape) every operand broadcasts to.
Status check_space_body(const Graph& body, const Node* red) {
  if (red != nullptr && &body.nodes().back() != red) {
    return Error("codegen: the reduction of kernel body @" + body.name() +
                 " must be its last node (its one output)", red->loc);
  }
  for (const Node& n : body.nodes()) {
    if (&n != red && n.info().category != OpCategory::Elementwise && !is_window(body, n)) {
      return Error("codegen: " + std::string(op_name(n.op)) + " in kernel body @" + body.name() +
                       " is neither elementwise nor the body's final reduction",
                   n.loc);
    }
  }
  // A reduction body iterates over the reduction's input shape; an elementwise one over
  // its outputs' (what a store window stores, output_window).
  const auto stored = [&](size_t o) {
    const Node* window = output_window(body, o);
    return window ? window->operands[0] : body.outputs()[o];
  };
  const Shape& space = red ? body.type(red->operands[0]).shape : body.type(stored(0)).shape;
  for (size_t o = 0; o < body.outputs().size() && !red; ++o) {
    if (body.type(stored(o)).shape != space) {
      return Error("codegen: outputs of kernel body @" + body.name() + " differ in shape: " +
                   space.to_string() + " and " + body.type(stored(o)).shape.to_string() +
                   " (%" + body.value(stored(o)).name + "); a kernel has one iteration space");
    }
  }
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    const Input& in = body.inputs()[k];
    const Node* window = input_window(body, k);
    const Shape& s = body.type(window ? window->result() : in.value).shape;
    std::optional<Shape> b = broadcast_shapes(s, space);
    if (!b || *b != space) {
      return Error("codegen: operand %" + body.value(in.value).name + " " + s.to_string() +
                   " does not broadcast to the iteration space " + space.to_string());
    }
  }
  return check_supported(body);
}

/// The user error for a body of form `kind` the generator cannot compile, or ok.
Status check_body(const Graph& body, FusedKind kind) {
  WEFT_RETURN_IF_ERROR(check_typed(body));
  switch (kind) {
    case FusedKind::row: return check_row_body(body);
    case FusedKind::reduction:
      if (body_reduction(body) == nullptr) {
        return Error("codegen: reduction kernel body @" + body.name() +
                     " does not end in its one reduction (its one output)");
      }
      return check_space_body(body, body_reduction(body));
    case FusedKind::elementwise: return check_space_body(body, nullptr);
    case FusedKind::contraction: break;
  }
  return Error("codegen: kernel body @" + body.name() +
               " is a contraction; its kernel is its epilogue (lower.h)");
}

std::string emit(const Graph& body, FusedKind kind, const std::string& symbol, bool native_bf16) {
  switch (kind) {
    case FusedKind::row: return emit_rows(body, symbol, native_bf16);
    case FusedKind::reduction: return emit_reduction(body, symbol, native_bf16);
    default: return emit_elementwise(body, symbol, native_bf16);
  }
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

FusedKind standalone_kind(const Graph& body) {
  const std::optional<FusedKind> kind = body_fused_kind(body);
  return kind && *kind != FusedKind::contraction ? *kind : FusedKind::elementwise;
}

RowLayout row_layout(const Graph& body, FusedKind kind) {
  if (kind == FusedKind::row) {  // A row is read once per pass.
    const ReductionSpace r = collapse_reduction_space(body, kind);
    return {r.rows(), r.row_length() * row_passes(body)};
  }
  if (kind == FusedKind::reduction) {
    const ReductionSpace r = collapse_reduction_space(body, kind);
    return {r.rows(), r.row_length()};
  }
  const CollapsedSpace space = collapse_space(body);
  return {space.rows(), space.row_length()};
}

RowLayout row_layout(const Graph& body) { return row_layout(body, standalone_kind(body)); }

struct KernelCompiler::Impl {
  std::mutex mutex;
  Jit jit;
  const bool native_bf16 = jit.native_bf16();  ///< The host's, for the JIT's kernels.
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

StatusOr<std::string> KernelCompiler::emit_mlir(const Graph& body, FusedKind kind) {
  WEFT_RETURN_IF_ERROR(check_body(body, kind));
  return emit(body, kind, "weft_kernel", impl_->native_bf16);
}

StatusOr<std::string> KernelCompiler::emit_mlir(const Graph& body) {
  return emit_mlir(body, standalone_kind(body));
}

StatusOr<const CompiledKernel*> KernelCompiler::compile(const Graph& body) {
  return compile(body, standalone_kind(body));
}

StatusOr<const CompiledKernel*> KernelCompiler::compile(const Graph& body, FusedKind kind) {
  WEFT_RETURN_IF_ERROR(check_body(body, kind));
  std::string key = kernel_key(body);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (auto it = impl_->kernels.find(key); it != impl_->kernels.end()) {
    ++impl_->cache_hits;
    return static_cast<const CompiledKernel*>(it->second.get());
  }
  auto kernel = std::make_unique<CompiledKernel>();
  kernel->symbol = "weft_kernel_" + std::to_string(impl_->compilations);
  WEFT_ASSIGN_OR_RETURN(JitResult jit,
                        impl_->jit.compile(emit(body, kind, kernel->symbol, impl_->native_bf16),
                                           kernel->symbol));
  const RowLayout layout = row_layout(body, kind);
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
  const bool native_bf16 = impl_->jit.native_bf16(cpu);
  for (const ObjectKernel& k : kernels) {
    WEFT_RETURN_IF_ERROR(check_body(*k.body, k.kind));
    modules.push_back(emit(*k.body, k.kind, k.symbol, native_bf16));
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
