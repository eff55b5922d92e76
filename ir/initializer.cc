#include "ir/initializer.h"

#include <cstdio>

#include "ir/attribute.h"
#include "ir/status.h"

namespace weft {

Initializer Initializer::constant(double value) {
  Initializer i;
  i.kind = Kind::Constant;
  i.a = value;
  return i;
}

Initializer Initializer::uniform(double low, double high) {
  Initializer i;
  i.kind = Kind::Uniform;
  i.a = low;
  i.b = high;
  return i;
}

Initializer Initializer::normal(double mean, double std) {
  Initializer i;
  i.kind = Kind::Normal;
  i.a = mean;
  i.b = std;
  return i;
}

Initializer Initializer::truncated_normal(double mean, double std, double low, double high) {
  Initializer i = normal(mean, std);
  i.kind = Kind::TruncatedNormal;
  i.low = low;
  i.high = high;
  return i;
}

Initializer Initializer::xavier_uniform(double gain) {
  Initializer i;
  i.kind = Kind::XavierUniform;
  i.gain = gain;
  return i;
}

Initializer Initializer::xavier_normal(double gain) {
  Initializer i = xavier_uniform(gain);
  i.kind = Kind::XavierNormal;
  return i;
}

Initializer Initializer::kaiming_uniform(double a, FanMode mode) {
  Initializer i;
  i.kind = Kind::KaimingUniform;
  i.a = a;
  i.mode = mode;
  return i;
}

Initializer Initializer::kaiming_normal(double a, FanMode mode) {
  Initializer i = kaiming_uniform(a, mode);
  i.kind = Kind::KaimingNormal;
  return i;
}

Initializer Initializer::orthogonal(double gain) {
  Initializer i;
  i.kind = Kind::Orthogonal;
  i.gain = gain;
  return i;
}

Initializer Initializer::rng_key() {
  Initializer i;
  i.kind = Kind::RngKey;
  return i;
}

Initializer Initializer::stored_values(Type type, std::string bytes, std::string origin) {
  WEFT_CHECK(bytes.size() == type.bytes(), "stored values of " + type.to_string() + " hold " +
                                               std::to_string(bytes.size()) + " bytes");
  auto values = std::make_shared<StoredValues>();
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  };
  mix(type.to_string());
  mix(bytes);
  values->type = std::move(type);
  values->bytes = std::move(bytes);
  values->origin = std::move(origin);
  values->fingerprint = h;
  Initializer i;
  i.kind = Kind::Stored;
  i.stored = std::move(values);
  return i;
}

bool Initializer::operator==(const Initializer& o) const {
  if (kind != o.kind) return false;
  if (kind == Kind::Stored) {
    return stored->type == o.stored->type && stored->fingerprint == o.stored->fingerprint;
  }
  return a == o.a && b == o.b && low == o.low && high == o.high && gain == o.gain &&
         mode == o.mode;
}

std::string Initializer::to_string() const {
  auto f = format_float;
  std::string fan = mode == FanMode::FanIn ? "fan_in" : "fan_out";
  switch (kind) {
    case Kind::Constant: return "constant(" + f(a) + ")";
    case Kind::Uniform: return "uniform(" + f(a) + ", " + f(b) + ")";
    case Kind::Normal: return "normal(" + f(a) + ", " + f(b) + ")";
    case Kind::TruncatedNormal:
      return "truncated_normal(" + f(a) + ", " + f(b) + ", " + f(low) + ", " + f(high) + ")";
    case Kind::XavierUniform: return "xavier_uniform(" + f(gain) + ")";
    case Kind::XavierNormal: return "xavier_normal(" + f(gain) + ")";
    case Kind::KaimingUniform: return "kaiming_uniform(" + f(a) + ", " + fan + ")";
    case Kind::KaimingNormal: return "kaiming_normal(" + f(a) + ", " + fan + ")";
    case Kind::Orthogonal: return "orthogonal(" + f(gain) + ")";
    case Kind::RngKey: return "rng_key()";
    case Kind::Stored: {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(stored->fingerprint));
      return "stored(" + stored->type.to_string() + " from " + stored->origin + ", fnv " + hex + ")";
    }
  }
  return "?";
}

void compute_fans(const Shape& shape, int64_t* fan_in, int64_t* fan_out) {
  if (shape.rank() < 2) {
    *fan_in = *fan_out = shape.rank() == 1 ? shape[0] : 1;
    return;
  }
  int64_t receptive = 1;
  for (int i = 2; i < shape.rank(); ++i) receptive *= shape[i];
  *fan_in = shape[1] * receptive;
  *fan_out = shape[0] * receptive;
}

}  // namespace weft
