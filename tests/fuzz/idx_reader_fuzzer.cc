// libFuzzer target: the IDX reader (training/data/idx.h), through a file so that the
// gzip path is fuzzed too (inputs starting with the gzip magic are decompressed). Beyond
// not crashing: an error has a message naming the file; a tensor that reads has exactly
// as many elements as its shape says and one of the dtypes IDX maps to.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "training/data/idx.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = weft::fuzz::write_scratch_file("weft_idx_fuzz", "", data, size);

  weft::StatusOr<weft::Tensor> t = weft::read_idx(path);
  std::remove(path.c_str());
  if (!t.ok()) {
    FUZZ_CHECK_ERROR(t);
    FUZZ_CHECK(t.error().loc.file == path, "IDX error without the file name: " + t.error().to_string());
    return 0;
  }
  weft::DType d = t->dtype();
  FUZZ_CHECK(d == weft::DType::u8 || d == weft::DType::i32 || d == weft::DType::f32 || d == weft::DType::f64,
             "IDX read as an unexpected dtype");
  FUZZ_CHECK(t->bytes() == static_cast<size_t>(t->type().shape.numel()) * weft::dtype_size(d),
             "IDX tensor size disagrees with its shape");
  return 0;
}
