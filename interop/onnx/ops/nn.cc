// (family: nn)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> nn_converters() { return {}; }

}  // namespace weft::onnx_io
