// (family: activation)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> activation_converters() { return {}; }

}  // namespace weft::onnx_io
