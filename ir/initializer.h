#pragma once
// How a parameter or state input gets its first value: part of the parameter table that
// travels with a graph (the builder records it, the runtime materializes it, AOT
// binaries embed it). Initializers are data, not code, so the table can be printed,
// hashed and compiled ahead of time; training/init.h turns one into a tensor.
//
// Bounds follow PyTorch's torch.nn.init with the same names and defaults:
//   uniform(a, b)                U(a, b)
//   normal(mean, std)            N(mean, std²)
//   truncated_normal(mean, std, a, b)   N(mean, std²) redrawn outside [a, b]
//   xavier_uniform(gain)         U(±gain·sqrt(6 / (fan_in + fan_out)))
//   xavier_normal(gain)          N(0, (gain·sqrt(2 / (fan_in + fan_out)))²)
//   kaiming_uniform(a, mode)     U(±gain·sqrt(3 / fan)), gain = sqrt(2 / (1 + a²)),
//                                fan = fan_in or fan_out (PyTorch's leaky_relu default)
//   kaiming_normal(a, mode)      N(0, (gain / sqrt(fan))²)
//   orthogonal(gain)             a (semi-)orthogonal matrix over [dim0, rest] times gain
//   constant(value)              zeros and ones are constant(0) / constant(1)
//   rng_key()                    the i64[2] Philox key (seed, 0) of the graph's `rng`
//                                state: random ops draw from the initialization seed
//   stored(values)               exactly the given values (an imported model's weights:
//                                interop/onnx); the bytes are shared, never copied
// fan_in / fan_out are computed from the shape as PyTorch does: for a [out, in, k...]
// weight, fan_in = in·prod(k), fan_out = out·prod(k); a 1-D shape has fan_in = fan_out
// = its size.

#include <cstdint>
#include <memory>
#include <string>

#include "ir/shape.h"

namespace weft {

/// The values of a `stored` initializer: a type and its elements' bytes (row-major,
/// little-endian, the dtype's size each), immutable once made.
struct StoredValues {
  Type type;
  std::string bytes;
  std::string origin;        ///< Where they came from, for printing: `resnet.onnx:conv1.weight`.
  uint64_t fingerprint = 0;  ///< 64-bit FNV-1a of the type and the bytes.
};

struct Initializer {
  enum class Kind {
    Constant,
    Uniform,
    Normal,
    TruncatedNormal,
    XavierUniform,
    XavierNormal,
    KaimingUniform,
    KaimingNormal,
    Orthogonal,
    RngKey,
    Stored,
  };
  enum class FanMode { FanIn, FanOut };

  Kind kind = Kind::Constant;
  double a = 0;     ///< constant: value; uniform: low; normal: mean; kaiming: negative slope
  double b = 0;     ///< uniform: high; normal: std
  double low = -2;  ///< truncated normal: lower cut
  double high = 2;  ///< truncated normal: upper cut
  double gain = 1;  ///< xavier / orthogonal
  FanMode mode = FanMode::FanIn;
  std::shared_ptr<const StoredValues> stored;  ///< stored: the values

  static Initializer constant(double value);
  static Initializer zeros() { return constant(0); }
  static Initializer ones() { return constant(1); }
  static Initializer uniform(double low, double high);
  static Initializer normal(double mean, double std);
  static Initializer truncated_normal(double mean, double std, double low = -2, double high = 2);
  static Initializer xavier_uniform(double gain = 1);
  static Initializer xavier_normal(double gain = 1);
  static Initializer kaiming_uniform(double a = 0, FanMode mode = FanMode::FanIn);
  static Initializer kaiming_normal(double a = 0, FanMode mode = FanMode::FanIn);
  static Initializer orthogonal(double gain = 1);
  static Initializer rng_key();
  /// Exactly `bytes` as a tensor of `type` (bytes.size() must be type.bytes(): checked).
  static Initializer stored_values(Type type, std::string bytes, std::string origin);

  /// `kaiming_uniform(a=2.23607, fan_in)`, `constant(0)`, `stored(f32[64,3] from
  /// m.onnx:w, fnv 0123456789abcdef)`, ...: for printing and hashing.
  std::string to_string() const;
  /// Stored values compare by type and fingerprint, not by where they live.
  bool operator==(const Initializer& other) const;
};

/// PyTorch's fan computation for a weight of shape `shape` (see the header comment).
void compute_fans(const Shape& shape, int64_t* fan_in, int64_t* fan_out);

}  // namespace weft
