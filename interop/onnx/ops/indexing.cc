// (family: indexing)
#include "interop/onnx/convert.h"

namespace weft::onnx_io {

std::span<const OpConverter> indexing_converters() { return {}; }

}  // namespace weft::onnx_io
