// (family: norm)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> norm_converters() { return {}; }

}  // namespace weft::onnx_io
