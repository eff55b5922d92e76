// libFuzzer target: the .npy reader (formats/npy.h). Beyond not crashing: an error has a
// message; a tensor that parses serializes to a file that parses back to the same type
// and bytes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "formats/npy.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  weft::StatusOr<weft::Tensor> t = weft::parse_npy(bytes, "fuzz.npy");
  if (!t.ok()) {
    FUZZ_CHECK_ERROR(t);
    return 0;
  }
  weft::StatusOr<std::string> written = weft::serialize_npy(*t, "fuzz.npy");
  FUZZ_CHECK(written.ok(), "a parsed tensor does not serialize: " + written.status().to_string());
  weft::StatusOr<weft::Tensor> back = weft::parse_npy(*written, "written.npy");
  FUZZ_CHECK(back.ok(), "a serialized tensor does not parse: " + back.status().to_string());
  FUZZ_CHECK(back->type() == t->type(), "round trip changed the type");
  FUZZ_CHECK(std::memcmp(back->raw_data(), t->raw_data(), t->type().bytes()) == 0,
             "round trip changed the data");
  return 0;
}
