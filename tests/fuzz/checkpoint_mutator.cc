#include "tests/fuzz/checkpoint_mutator.h"

#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/dtype.h"
#include "formats/safetensors.h"
#include "runtime/tensor.h"

// libFuzzer's own byte mutator, callable from a custom mutator.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace weft::fuzz {
namespace {

using Tensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

/// Values that probe a decimal or hex field's validation.
constexpr std::string_view kInterestingValues[] = {
    "",     "-1",   "0",  "1",  "2",   "-0",  "+1",   " 1",  "1 ",   "01",  "1e3", "0x10", "1.5",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616",
    "0000000000000000", "ffffffffffffffff", "FFFFFFFFFFFFFFFF", "ffffffffffffffff0", "fffffffffffffff",
    "nan",  "inf",  "step", "\xff", std::string_view("a\0b", 3)};

/// Metadata keys the loader reads, and one it does not.
const char* const kMetadataKeys[] = {"weft.format_version", "weft.structural_hash", "weft.step",
                                     "weft.subgraph_hash.0", "weft.subgraph_structure.0", "weft.batch",
                                     "weft.structure", "weft.unknown"};

class Mutation {
 public:
  explicit Mutation(unsigned int seed) : rng_(seed) {}

  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  /// One change to the metadata.
  void metadata(Metadata& m) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : m) keys.push_back(k);
    for (const char* k : kMetadataKeys) keys.push_back(k);
    const std::string key = keys[below(keys.size())];
    switch (below(4)) {
      case 0:
        m.erase(key);
        return;
      case 1: {  // a byte-level mutation of the current value
        std::string v = m.count(key) && !m[key].empty() ? m[key] : std::string("0");
        v.resize(v.size() + 8);
        const size_t n = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(v.data()), v.size() - 8, v.size());
        v.resize(n);
        m[key] = v;
        return;
      }
      default: {
        m[key] = std::string(kInterestingValues[below(std::size(kInterestingValues))]);
        return;
      }
    }
  }

  /// One change to the tensors.
  void tensors(Tensors& t) {
    if (t.empty()) {
      t.emplace_back("0.weight", Tensor::scalar(DType::f32, 1));
      return;
    }
    const size_t i = below(t.size());
    auto& [name, value] = t[i];
    switch (below(8)) {
      case 0:
        t.erase(t.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      case 1:  // renamed to a sibling's name (a duplicate key), or with a suffix
        name = below(2) == 0 ? t[below(t.size())].first : name + (below(2) == 0 ? ".x" : "_");
        return;
      case 2:  // the tensor as some parameter's optimizer slot
        name = "optimizer." + t[below(t.size())].first + (below(2) == 0 ? ".m" : ".exp_avg_sq");
        return;
      case 3:  // an extra tensor
        t.emplace_back(name + ".extra", value);
        return;
      case 4: {  // another dtype, same shape and values
        const DType dtype = kAllDTypes[below(std::size(kAllDTypes))];
        value = Tensor::from_doubles(dtype, value.shape(), value.to_doubles());
        return;
      }
      case 5: {  // another shape
        std::vector<double> values = value.to_doubles();
        Shape shape;
        switch (below(3)) {
          case 0: shape = Shape{value.numel()}; break;
          case 1:
            shape = value.shape();
            shape.dims.insert(shape.dims.begin(), 1);
            break;
          default:
            if (!values.empty()) values.pop_back();
            shape = Shape{static_cast<int64_t>(values.size())};
        }
        value = Tensor::from_doubles(value.dtype(), shape, values);
        return;
      }
      default: {  // one element set to a value that breaks arithmetic
        if (value.numel() == 0) return;
        const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                                   std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(), 1e300, -0.0, 1e9};
        value.set_double(static_cast<int64_t>(below(static_cast<size_t>(value.numel()))),
                         specials[below(std::size(specials))]);
        return;
      }
    }
  }

 private:
  std::minstd_rand rng_;
};

}  // namespace

size_t mutate_checkpoint(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Mutation mutation(seed);
  if (mutation.below(4) != 0) {
    StatusOr<SafetensorsFile> file =
        parse_safetensors(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    if (file.ok()) {
      Metadata metadata = std::move(file->metadata);
      metadata.erase(std::string(kSafetensorsChecksumKey));  // recomputed by serialize
      metadata.erase(std::string(kSafetensorsMetadataChecksumKey));
      Tensors tensors = std::move(file->tensors);
      const size_t changes = 1 + mutation.below(3);
      for (size_t c = 0; c < changes; ++c) {
        if (mutation.below(2) == 0) {
          mutation.metadata(metadata);
        } else {
          mutation.tensors(tensors);
        }
      }
      StatusOr<std::string> bytes = serialize_safetensors(tensors, metadata, "fuzz");
      if (bytes.ok() && bytes->size() <= max_size) {
        std::memcpy(data, bytes->data(), bytes->size());
        return bytes->size();
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

}  // namespace weft::fuzz
