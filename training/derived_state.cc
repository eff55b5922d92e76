// Derived state inputs of a training step: their names and their one refresh routine.
#include "training/derived_state.h"

namespace weft {

std::string weight_copy_name(const std::string& param) { return kWeightCopyPrefix + param; }

std::optional<std::string> weight_copy_source(const std::string& name) {
  const std::string prefix = kWeightCopyPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return name.substr(prefix.size());
}

Tensor derived_value(const Tensor& master, const Type& type) {
  WEFT_CHECK(master.shape() == type.shape, "derived_value: master " + master.type().to_string() + " for " +
                                               type.to_string());
  return to_dtype(master, type.dtype);
}

StatusOr<Tensor> state_value(const std::map<std::string, Tensor>& values, const std::string& name,
                             const Type& type) {
  const std::optional<std::string> source = weight_copy_source(name);
  auto it = values.find(source ? *source : name);
  if (it == values.end()) {
    return Error{"the compiled graph needs '" + name + "'" +
                 (source ? " (a copy of parameter '" + *source + "')" : std::string()) +
                 ", which the trainer does not have"};
  }
  if (!source) return it->second;
  return derived_value(it->second, type);
}

StatusOr<Tensor> DerivedState::take(const std::map<std::string, Tensor>& values, const std::string& name,
                                    const Type& type) {
  auto it = kept_.find(name);
  if (it == kept_.end()) return refresh(values, name, type);
  Tensor value = std::move(it->second);
  kept_.erase(it);
  return value;
}

StatusOr<Tensor> DerivedState::refresh(const std::map<std::string, Tensor>& values, const std::string& name,
                                       const Type& type) {
  WEFT_ASSIGN_OR_RETURN(Tensor value, state_value(values, name, type));
  refreshes_ += weight_copy_source(name).has_value();
  return value;
}

void DerivedState::keep(const std::string& name, Tensor value) {
  WEFT_CHECK(weight_copy_source(name).has_value(), "DerivedState::keep: '" + name + "' is not a derived input");
  kept_.insert_or_assign(name, std::move(value));
}

}  // namespace weft
