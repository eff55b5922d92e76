// The converter table: every family's rows, looked up by op type and opset.
#include <algorithm>
#include <map>

#include "interop/onnx/convert.h"

namespace weft::onnx_io {
namespace {

using Table = std::map<std::string, std::vector<const OpConverter*>, std::less<>>;

const Table& table() {
  static const Table t = [] {
    Table out;
    for (std::span<const OpConverter> family :
         {elementwise_converters(), activation_converters(), nn_converters(),
          pool_converters(), norm_converters(), loss_converters(), linalg_converters(),
          reduce_converters(), tensor_converters(), indexing_converters(),
          control_converters(), rnn_converters()}) {
      for (const OpConverter& c : family) out[c.op_type].push_back(&c);
    }
    for (auto& [name, rows] : out) {
      std::sort(rows.begin(), rows.end(),
                [](const OpConverter* a, const OpConverter* b) { return a->since < b->since; });
    }
    return out;
  }();
  return t;
}

}  // namespace

const OpConverter* find_converter(std::string_view op_type, int opset) {
  auto it = table().find(op_type);
  if (it == table().end()) return nullptr;
  const OpConverter* best = nullptr;
  for (const OpConverter* c : it->second) {
    if (c->since <= opset) best = c;
  }
  return best;
}

int first_converted_opset(std::string_view op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? 0 : it->second.front()->since;
}

}  // namespace weft::onnx_io
