#include "runtime/reference/interpreter.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <new>
#include <optional>

#include "ir/checked_math.h"
#include "ir/scan.h"
#include "runtime/reference/kernels.h"

namespace weft::reference {

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> in_strides = in.strides();
  std::vector<int64_t> s(out.rank(), 0);
  const int offset = out.rank() - in.rank();
  for (int d = 0; d < in.rank(); ++d) {
    s[offset + d] = in.dims[d] == 1 ? 0 : in_strides[d];
  }
  return s;
}

int64_t int_element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::i32: return t.data<int32_t>()[i];
    case DType::i64: return t.data<int64_t>()[i];
    case DType::u8: return t.data<uint8_t>()[i];
    default: return static_cast<int64_t>(t.get_double(i));
  }
}

StatusOr<int> checked_axis(const Node& node, int64_t axis, int rank) {
  std::optional<int> a = normalize_axis(axis, rank);
  if (!a) {
    return node_error(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                                std::to_string(rank));
  }
  return *a;
}

namespace {

Status fused(const Node& node, const std::vector<const Tensor*>& in, Tensor& out);

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
    register_elementwise_kernels(t);
    register_reduction_kernels(t);
    register_movement_kernels(t);
    register_contraction_kernels(t);
    register_creation_kernels(t);
    register_composite_kernels(t);
    t.add(Op::Fused, fused);
    // scan has several results: run() calls scan() itself; the entry says it is covered.
    t.add(Op::Scan, [](const Node& node, const std::vector<const Tensor*>&, Tensor&) -> Status {
      return node_error(node, "scan runs through reference::run (it has several results)");
    });
    return t;
  }();
  return table;
}


// A fused kernel computes its body (the body's own nodes widen what they need).
Status fused(const Node& node, const std::vector<const Tensor*>& in, Tensor& out) {
  std::vector<Tensor> args;
  args.reserve(in.size());
  for (const Tensor* t : in) args.push_back(*t);
  WEFT_ASSIGN_OR_RETURN(RunResult r, run(*node.body, std::move(args)));
  out = std::move(r.outputs[0]);
  return Status::ok_status();
}

}  // namespace

// A loop: the body run `length` times (ir/ops.def, `scan`), from slot 0 up or, with
// `reverse`, from slot length-1 down; slot i reads xs[i] and writes ys[i].
StatusOr<std::vector<Tensor>> run_loop(
    const Node& node, const std::vector<const Tensor*>& in, const std::vector<Type>& result_types,
    const std::function<Status(int64_t slot, const std::vector<Tensor>& args)>& each) {
  const int64_t length = node.int_attr("length");
  const size_t carries = static_cast<size_t>(node.int_attr("carries"));
  const size_t consts = static_cast<size_t>(node.int_attr("consts"));
  const bool reverse = node.bool_attr("reverse");
  std::vector<Tensor> state;
  for (size_t c = 0; c < carries; ++c) state.push_back(*in[consts + c]);
  std::vector<Tensor> ys;
  for (size_t k = carries; k < result_types.size(); ++k) ys.emplace_back(result_types[k]);
  const ScanExit exit = scan_exit(node);
  for (int64_t step = 0; step < length; ++step) {
    const int64_t i = reverse ? length - 1 - step : step;
    // An iteration that does not run: the carries stay, its ys slot stays zero.
    if (exit.stop_carry >= 0 && state[static_cast<size_t>(exit.stop_carry)].get_double(0) != 0) break;
    if (exit.active_operand >= 0 && in[static_cast<size_t>(exit.active_operand)]->get_double(i) == 0) continue;
    std::vector<Tensor> args;
    args.reserve(in.size());
    for (size_t k = 0; k < consts; ++k) args.push_back(*in[k]);
    for (Tensor& c : state) args.push_back(std::move(c));
    for (size_t k = consts + carries; k < in.size(); ++k) {
      Type slice = in[k]->type();
      slice.shape.dims.erase(slice.shape.dims.begin());
      Tensor x(slice);
      const auto* from = static_cast<const std::byte*>(in[k]->raw_data());
      std::copy(from + i * x.bytes(), from + (i + 1) * x.bytes(), static_cast<std::byte*>(x.raw_data()));
      args.push_back(std::move(x));
    }
    if (each) WEFT_RETURN_IF_ERROR(each(i, args));
    WEFT_ASSIGN_OR_RETURN(RunResult r, run(*node.body, std::move(args)));
    state.assign(std::make_move_iterator(r.outputs.begin()),
                 std::make_move_iterator(r.outputs.begin() + static_cast<int64_t>(carries)));
    for (size_t k = 0; k < ys.size(); ++k) {
      const Tensor& y = r.outputs[carries + k];
      const auto* from = static_cast<const std::byte*>(y.raw_data());
      std::copy(from, from + y.bytes(), static_cast<std::byte*>(ys[k].raw_data()) + i * y.bytes());
    }
  }
  for (Tensor& y : ys) state.push_back(std::move(y));
  return state;
}

namespace {

// ops.def's half rule (HalfRule): Widen ops see f16/bf16 operands widened to f32 and
// produce f32 that is then rounded; the others (Follow, Convert, Exact) handle every
// dtype themselves. `compute(args, outs)` fills `outs`, allocated with `result_types`
// (f32 for a half result of a widening op).
template <typename Compute>
Status run_widened(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Type>& result_types, std::vector<Tensor>& outs,
                   const Compute& compute) {
  bool widen = false;
  for (const Type& t : result_types) widen = widen || is_half(t.dtype);
  for (const Tensor* t : in) widen = widen || is_half(t->dtype());
  widen = widen && computes_half_in_f32(node.op);
  outs.clear();
  if (!widen) {
    for (const Type& t : result_types) outs.emplace_back(t);
    return compute(in, outs);
  }
  std::vector<Tensor> widened;
  widened.reserve(in.size());
  std::vector<const Tensor*> args;
  for (const Tensor* t : in) {
    if (is_half(t->dtype())) {
      widened.push_back(to_dtype(*t, DType::f32));
      args.push_back(&widened.back());
    } else {
      args.push_back(t);
    }
  }
  for (Type t : result_types) {
    if (is_half(t.dtype)) t.dtype = DType::f32;
    outs.emplace_back(t);
  }
  WEFT_RETURN_IF_ERROR(compute(args, outs));
  for (size_t k = 0; k < outs.size(); ++k) {
    if (is_half(result_types[k].dtype)) outs[k] = to_dtype(outs[k], result_types[k].dtype);
  }
  return Status::ok_status();
}

Status run_node(const Node& node, const Kernel& kernel, const std::vector<const Tensor*>& in,
                const Type& result_type, Tensor* out) {
  std::vector<Tensor> outs;
  WEFT_RETURN_IF_ERROR(run_widened(
      node, in, {result_type}, outs,
      [&](const std::vector<const Tensor*>& args, std::vector<Tensor>& o) {
        return kernel(node, args, o[0]);
      }));
  *out = std::move(outs[0]);
  return Status::ok_status();
}

// Types come from the graph, which the caller may not have run infer-types on.
Status result_fits(const Node& node, const Type& type) {
  if (size_fits(type.dtype, type.shape.dims)) return Status::ok_status();
  return Error{std::string(op_name(node.op)) + ": result type " + type.to_string() +
                   " has a size in bytes that does not fit in 64 bits",
               node.loc};
}

// A type that fits in int64 may still be far beyond memory (f32[1000000000000], a loop's
// 16 TiB of stacked ys): the op's largest result is named.
Error allocation_error(const Node& node, const std::vector<Type>& types) {
  const Type* largest = &types.front();
  for (const Type& t : types) {
    if (t.bytes() > largest->bytes()) largest = &t;
  }
  return Error{std::string(op_name(node.op)) + ": cannot allocate its result " + largest->to_string() + " (" +
                   std::to_string(largest->bytes()) + " bytes)",
               node.loc};
}

}  // namespace

const Kernel* find_kernel(Op op) {
  const Kernel& k = kernel_table().kernels[static_cast<size_t>(op)];
  return k == nullptr ? nullptr : &k;
}

const SeveralKernel* find_several_kernel(Op op) {
  const SeveralKernel& k = kernel_table().several[static_cast<size_t>(op)];
  return k == nullptr ? nullptr : &k;
}

namespace {

// One run of a graph, as named steps: its inputs bound, each node run by its form (a
// loop, a fused kernel with several results, an op with several results, one result),
// its operands released after their last use (graph outputs count as a use), and the
// outputs and assigned inputs collected.
class GraphRun {
 public:
  explicit GraphRun(const Graph& g)
      : g_(g), values_(static_cast<size_t>(g.num_values())), uses_(g.use_counts()) {}

  Status bind_inputs(std::vector<Tensor> inputs) {
    if (inputs.size() != g_.inputs().size()) {
      return Error{"graph @" + g_.name() + " takes " + std::to_string(g_.inputs().size()) +
                       " inputs, but " + std::to_string(inputs.size()) + " were given",
                   {}};
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Input& input = g_.inputs()[i];
      const Value& v = g_.value(input.value);
      if (!v.type || *v.type != inputs[i].type()) {
        return Error{"input %" + v.name + " expects " + (v.type ? v.type->to_string() : "?") +
                         ", but was given " + inputs[i].type().to_string(),
                     input.loc};
      }
      values_[input.value] = std::move(inputs[i]);
    }
    return Status::ok_status();
  }

  Status run_node(const Node& node) {
    const Kernel* kernel = find_kernel(node.op);
    if (kernel == nullptr) {
      return Error{std::string(op_name(node.op)) + ": no reference kernel", node.loc};
    }
    std::vector<const Tensor*> in;
    for (ValueId o : node.operands) {
      WEFT_CHECK(values_[o].has_value(), "operand %" + g_.value(o).name + " has no value");
      in.push_back(&*values_[o]);
    }
    if (node.op == Op::Scan) {
      WEFT_RETURN_IF_ERROR(run_scan(node, in));
    } else if (node.op == Op::Fused && node.results.size() > 1) {
      WEFT_RETURN_IF_ERROR(run_fused(node, in));
    } else if (const SeveralKernel* several = find_several_kernel(node.op)) {
      WEFT_RETURN_IF_ERROR(run_several(node, *several, in));
    } else {
      WEFT_RETURN_IF_ERROR(run_one(node, *kernel, in));
    }
    for (ValueId o : node.operands) {
      if (--uses_[o] == 0) values_[o].reset();
    }
    return Status::ok_status();
  }

  RunResult result() {
    RunResult result;
    for (ValueId o : g_.outputs()) {
      WEFT_CHECK(values_[o].has_value(), "output %" + g_.value(o).name + " has no value");
      result.outputs.push_back(*values_[o]);
    }
    std::sort(updated_.begin(), updated_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& u : updated_) result.updated.push_back(std::move(u.second));
    return result;
  }

 private:
  // The type the graph declares for `r`, a result of `node`, and that its bytes fit.
  StatusOr<Type> declared_type(const Node& node, ValueId r) const {
    const Value& v = g_.value(r);
    if (!v.type) {
      return Error{std::string(op_name(node.op)) + ": result %" + v.name +
                       " has no type; run shape inference before the reference interpreter",
                   node.loc};
    }
    WEFT_RETURN_IF_ERROR(result_fits(node, *v.type));
    return *v.type;
  }

  StatusOr<std::vector<Type>> declared_types(const Node& node) const {
    std::vector<Type> types;
    for (ValueId r : node.results) {
      WEFT_ASSIGN_OR_RETURN(Type t, declared_type(node, r));
      types.push_back(t);
    }
    return types;
  }

  void store_results(const Node& node, std::vector<Tensor>& results) {
    for (size_t k = 0; k < node.results.size(); ++k) values_[node.results[k]] = std::move(results[k]);
  }

  Status run_scan(const Node& node, const std::vector<const Tensor*>& in) {
    WEFT_ASSIGN_OR_RETURN(std::vector<Type> types, declared_types(node));
    StatusOr<std::vector<Tensor>> scanned = std::vector<Tensor>{};
    try {
      scanned = run_loop(node, in, types);
    } catch (const std::bad_alloc&) {
      return allocation_error(node, types);
    }
    WEFT_RETURN_IF_ERROR(scanned.status());
    store_results(node, *scanned);
    return Status::ok_status();
  }

  // A fused kernel with several results: its body's outputs, in order.
  Status run_fused(const Node& node, const std::vector<const Tensor*>& in) {
    std::vector<Tensor> args;
    for (const Tensor* t : in) args.push_back(*t);
    WEFT_ASSIGN_OR_RETURN(RunResult r, run(*node.body, std::move(args)));
    store_results(node, r.outputs);
    return Status::ok_status();
  }

  // An op with a fixed count of several results (attention_grad's dq, dk, dv).
  Status run_several(const Node& node, const SeveralKernel& several, const std::vector<const Tensor*>& in) {
    WEFT_ASSIGN_OR_RETURN(std::vector<Type> types, declared_types(node));
    std::vector<Tensor> outs;
    try {
      WEFT_RETURN_IF_ERROR(run_widened(node, in, types, outs,
                                       [&](const std::vector<const Tensor*>& args, std::vector<Tensor>& o) {
                                         return several(node, args, o);
                                       }));
    } catch (const std::bad_alloc&) {
      return allocation_error(node, types);
    }
    store_results(node, outs);
    return Status::ok_status();
  }

  // One result, or an assign (whose value is its target's new value).
  Status run_one(const Node& node, const Kernel& kernel, const std::vector<const Tensor*>& in) {
    Type result_type;
    if (node.op == Op::Assign) {
      WEFT_CHECK(in.size() == 2, "assign takes two operands");
      result_type = in[0]->type();
      WEFT_RETURN_IF_ERROR(result_fits(node, result_type));
    } else {
      WEFT_ASSIGN_OR_RETURN(result_type, declared_type(node, node.result()));
    }
    Tensor out;
    try {
      WEFT_RETURN_IF_ERROR(reference::run_node(node, kernel, in, result_type, &out));
    } catch (const std::bad_alloc&) {
      return allocation_error(node, {result_type});
    }
    if (node.op == Op::Assign) return record_assign(node, std::move(out));
    values_[node.result()] = std::move(out);
    return Status::ok_status();
  }

  Status record_assign(const Node& node, Tensor value) {
    const int index = g_.input_index(node.operands[0]);
    if (index < 0) {
      return Error{"assign: target %" + g_.value(node.operands[0]).name + " is not a graph input", node.loc};
    }
    for (const auto& u : updated_) {
      if (u.first == index) {
        return Error{"assign: input %" + u.second.first + " is assigned more than once", node.loc};
      }
    }
    updated_.push_back({index, {g_.value(node.operands[0]).name, std::move(value)}});
    return Status::ok_status();
  }

  const Graph& g_;
  std::vector<std::optional<Tensor>> values_;
  std::vector<int> uses_;
  std::vector<std::pair<int, std::pair<std::string, Tensor>>> updated_;
};

}  // namespace

StatusOr<RunResult> run(const Graph& g, std::vector<Tensor> inputs) {
  GraphRun r(g);
  WEFT_RETURN_IF_ERROR(r.bind_inputs(std::move(inputs)));
  for (const Node& node : g.nodes()) WEFT_RETURN_IF_ERROR(r.run_node(node));
  return r.result();
}

}  // namespace weft::reference
