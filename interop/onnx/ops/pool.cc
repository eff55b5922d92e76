// (family: pool)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> pool_converters() { return {}; }

}  // namespace weft::onnx_io
