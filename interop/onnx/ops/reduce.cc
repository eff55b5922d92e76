// (family: reduce)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> reduce_converters() { return {}; }

}  // namespace weft::onnx_io
