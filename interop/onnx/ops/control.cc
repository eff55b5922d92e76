// (family: control)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> control_converters() { return {}; }

}  // namespace weft::onnx_io
