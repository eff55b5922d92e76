// (family: loss)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> loss_converters() { return {}; }

}  // namespace weft::onnx_io
