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

}  // namespace weft
