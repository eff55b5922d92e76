#pragma once
// Reading IDX files, the format of MNIST and Fashion-MNIST, plain or gzip-compressed
// (as Debian's dataset-fashion-mnist ships them under /usr/share/datasets/fashion-mnist).
//
//   WEFT_ASSIGN_OR_RETURN(Tensor images, read_idx(".../train-images-idx3-ubyte.gz"));
//   // u8[60000,28,28]
//
// The format: two zero bytes, a type byte (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32,
// 0x0D f32, 0x0E f64), a rank byte, then `rank` big-endian u32 dims and the data,
// big-endian, row-major. weft reads u8 (to u8), i32 (to i32), f32 and f64; i8 and i16
// are refused with an error naming the type.

#include <string>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft {

/// Reads an IDX file (gzip-compressed or not). Errors name the file and what was wrong:
/// a missing file, a bad magic number, an unsupported type, truncated data, trailing
/// bytes.
StatusOr<Tensor> read_idx(const std::string& path);

}  // namespace weft
