#include "runtime/reference/numerics.h"

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

StatusOr<std::optional<NonFinite>> find_nonfinite(const Graph& g, std::vector<Tensor> inputs) {
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    const int64_t bad = first_nonfinite(inputs[i]);
    if (bad >= 0) {
      return std::optional<NonFinite>(NonFinite{-1, static_cast<int>(i), g.inputs()[i].value,
                                                inputs[i].type(), bad, inputs[i].get_double(bad)});
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
  WEFT_ASSIGN_OR_RETURN(RunResult r, run(all, std::move(inputs)));
  for (size_t k = 0; k < produced.size(); ++k) {
    const int64_t bad = first_nonfinite(r.outputs[k]);
    if (bad >= 0) {
      return std::optional<NonFinite>(NonFinite{produced[k].first, -1, produced[k].second,
                                                r.outputs[k].type(), bad, r.outputs[k].get_double(bad)});
    }
  }
  return std::optional<NonFinite>();
}

Status check_numerics(const Graph& g, std::vector<Tensor> inputs) {
  WEFT_ASSIGN_OR_RETURN(std::optional<NonFinite> found, find_nonfinite(g, std::move(inputs)));
  if (!found) return Status::ok_status();
  const std::string& name = g.value(found->value).name;
  if (found->node < 0) {
    return nonfinite_error(nullptr, name, found->type, found->index, found->element,
                           g.inputs()[found->input].loc);
  }
  return nonfinite_error(&g.nodes()[found->node], name, found->type, found->index, found->element);
}

}  // namespace weft::reference
