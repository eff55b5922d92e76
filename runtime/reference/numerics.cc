#include "runtime/reference/numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/reference/interpreter.h"

namespace weft::reference {
namespace {

template <typename T>
int64_t scan(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) return i;
  }
  return -1;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

}  // namespace

int64_t first_nonfinite(const void* data, const Type& type) {
  const int64_t n = type.numel();
  switch (type.dtype) {
    case DType::f32: return scan(static_cast<const float*>(data), n);
    case DType::f64: return scan(static_cast<const double*>(data), n);
    case DType::f16:
    case DType::bf16: {
      Tensor t(type);
      std::memcpy(t.raw_data(), data, t.bytes());
      for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(t.get_double(i))) return i;
      }
      return -1;
    }
    default: return -1;
  }
}

double element_value(const void* data, const Type& type, int64_t index) {
  switch (type.dtype) {
    case DType::f32: return static_cast<const float*>(data)[index];
    case DType::f64: return static_cast<const double*>(data)[index];
    default: {
      Tensor t(Type{type.dtype, Shape({1})});
      const size_t size = dtype_size(type.dtype);
      std::memcpy(t.raw_data(), static_cast<const std::byte*>(data) + index * size, size);
      return t.get_double(0);
    }
  }
}

int64_t first_nonfinite(const Tensor& t) { return first_nonfinite(t.raw_data(), t.type()); }

Error nonfinite_error(const Node* node, const std::string& name, const Type& type, int64_t index,
                      double value, const Location& input_loc) {
  const std::string where =
      " (" + type.to_string() + ", element " + std::to_string(index) + ")";
  if (node == nullptr) {
    return Error{"check-numerics: input %" + name + " holds " + format_value(value) + where,
                 input_loc};
  }
  return Error{"check-numerics: " + std::string(node->info().name) + " produced " +
                   format_value(value) + (name.empty() ? "" : " in %" + name) + where,
               node->loc};
}

namespace {

// Node `n` of `g` (a loop or a fused kernel) made non-finite value `made` from
// `operands`: the error for the body op that did, or nullopt when none did.
StatusOr<std::optional<Error>> explain_body(const Graph& g, const Node& n, ValueId made,
                                            std::vector<Tensor> operands) {
  if (n.op == Op::Scan) {
    std::vector<Type> types;
    for (ValueId v : n.results) types.push_back(g.type(v));
    return explain_loop(n, operands, types);
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<NonFinite> f, find_nonfinite(*n.body, std::move(operands)));
  if (!f || f->node < 0) return std::optional<Error>();
  Error e = f->inside ? *f->inside
                      : nonfinite_error(&n.body->nodes()[static_cast<size_t>(f->node)], "", f->type, f->index,
                                        f->element);
  e.message += " inside the fused kernel computing %" + g.value(made).name;
  return std::optional<Error>(std::move(e));
}

}  // namespace

StatusOr<std::optional<NonFinite>> find_nonfinite(const Graph& g, std::vector<Tensor> inputs) {
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    const int64_t bad = first_nonfinite(inputs[i]);
    if (bad >= 0) {
      return std::optional<NonFinite>(NonFinite{-1, static_cast<int>(i), g.inputs()[i].value,
                                                inputs[i].type(), bad, inputs[i].get_double(bad), std::nullopt});
    }
  }
  // The same graph returning every node's results, in node order.
  Graph all = g;
  std::vector<std::pair<int, ValueId>> produced;  // (node index, value), output order
  all.mutable_outputs().clear();
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    for (ValueId v : g.nodes()[n].results) {
      all.add_output(v);
      produced.emplace_back(static_cast<int>(n), v);
    }
  }
  const bool bodies = std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.body != nullptr; });
  std::vector<Tensor> kept;  // a body's operands may be inputs: searching it needs them
  if (bodies) kept = inputs;
  WEFT_ASSIGN_OR_RETURN(RunResult r, run(all, std::move(inputs)));
  for (size_t k = 0; k < produced.size(); ++k) {
    const int64_t bad = first_nonfinite(r.outputs[k]);
    if (bad < 0) continue;
    NonFinite found{produced[k].first, -1, produced[k].second, r.outputs[k].type(), bad,
                    r.outputs[k].get_double(bad), std::nullopt};
    const Node& n = g.nodes()[static_cast<size_t>(found.node)];
    if (n.body != nullptr) {
      std::vector<Tensor> operands;  // as the node read them
      for (ValueId o : n.operands) {
        if (const int i = g.input_index(o); i >= 0) operands.push_back(kept[static_cast<size_t>(i)]);
        for (size_t p = 0; p < produced.size(); ++p) {
          if (produced[p].second == o) operands.push_back(r.outputs[p]);
        }
      }
      WEFT_ASSIGN_OR_RETURN(found.inside, explain_body(g, n, found.value, std::move(operands)));
    }
    return std::optional<NonFinite>(std::move(found));
  }
  return std::optional<NonFinite>();
}

std::string loop_iteration_suffix(int64_t slot, const Location& loop) {
  return ", in iteration " + std::to_string(slot) + " of the loop" + (loop.known() ? " at " + loop.to_string() : "");
}

StatusOr<std::optional<Error>> explain_loop(const Node& node, const std::vector<Tensor>& operands,
                                            const std::vector<Type>& result_types) {
  const Graph& body = *node.body;
  std::vector<const Tensor*> in;
  for (const Tensor& t : operands) in.push_back(&t);
  std::optional<Error> culprit;
  auto each = [&](int64_t slot, const std::vector<Tensor>& args) -> Status {
    WEFT_ASSIGN_OR_RETURN(std::optional<NonFinite> f, find_nonfinite(body, args));
    if (!f || f->node < 0) return Status::ok_status();  // a non-finite carry in: not made here
    culprit = f->inside ? *f->inside
                        : nonfinite_error(&body.nodes()[static_cast<size_t>(f->node)], body.value(f->value).name,
                                          f->type, f->index, f->element);
    culprit->message += loop_iteration_suffix(slot, node.loc);
    return Error{"found"};  // stops the loop
  };
  const Status stepped = run_loop(node, in, result_types, each).status();
  if (culprit) return culprit;
  if (!stepped.ok()) return stepped.error();
  return std::optional<Error>();
}

Status check_numerics(const Graph& g, std::vector<Tensor> inputs) {
  WEFT_ASSIGN_OR_RETURN(std::optional<NonFinite> found, find_nonfinite(g, std::move(inputs)));
  if (!found) return Status::ok_status();
  const std::string& name = g.value(found->value).name;
  if (found->node < 0) {
    return nonfinite_error(nullptr, name, found->type, found->index, found->element,
                           g.inputs()[found->input].loc);
  }
  if (found->inside) return *found->inside;
  return nonfinite_error(&g.nodes()[found->node], name, found->type, found->index, found->element);
}

}  // namespace weft::reference
