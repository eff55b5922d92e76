#include "training/init.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "ir/text_util.h"
#include "runtime/philox.h"

namespace weft {
namespace {

using Kind = Initializer::Kind;

/// The uniforms of element i: words (0, 1) and (2, 3) of its block, 53 bits each, [0, 1).
struct Uniforms {
  double u0, u1;
};

Uniforms uniforms(uint64_t seed, uint64_t stream, uint64_t i) {
  const philox::Block b =
      philox::element_block(static_cast<int64_t>(seed), static_cast<int64_t>(stream), i);
  const philox::Block hi{{b.v[2], b.v[3], 0, 0}};
  return {philox::uniform_f64(b), philox::uniform_f64(hi)};
}

double standard_normal(uint64_t seed, uint64_t stream, uint64_t i) {
  const Uniforms u = uniforms(seed, stream, i);
  // 1 - u0 lies in (0, 1]: the log is finite.
  return std::sqrt(-2.0 * std::log(1.0 - u.u0)) * std::cos(2.0 * std::numbers::pi * u.u1);
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

/// Fills `out` with f(i) for every element.
template <typename F>
void fill(Tensor& out, F f) {
  for (int64_t i = 0; i < out.numel(); ++i) out.set_double(i, f(static_cast<uint64_t>(i)));
}

/// torch.nn.init.orthogonal_ on a [rows, cols] view.
Status orthogonal(Tensor& out, double gain, uint64_t seed, uint64_t stream) {
  const Shape& shape = out.shape();
  if (shape.rank() < 2) {
    return Error{"orthogonal initialization needs at least 2 dimensions"};
  }
  const int64_t rows = shape[0];
  if (rows == 0 || out.numel() == 0) return Status();
  const int64_t cols = out.numel() / rows;
  // The tall matrix A [m, n], m >= n: the normal [rows, cols] matrix, transposed if wide.
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  // Column-major storage of A: column j at a[j*m ...].
  std::vector<double> a(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      double z = standard_normal(seed, stream, static_cast<uint64_t>(r * cols + c));
      // Element (r, c) of the [rows, cols] matrix is A(r, c), or A(c, r) when wide.
      int64_t ar = wide ? c : r, ac = wide ? r : c;
      a[static_cast<size_t>(ac * m + ar)] = z;
    }
  }
  // Modified Gram–Schmidt, each projection pass applied twice ("twice is enough"), gives
  // the Q of the QR factorization whose R has a positive diagonal: PyTorch's
  // `q *= sign(diag(r))`.
  for (int64_t j = 0; j < n; ++j) {
    double* qj = &a[static_cast<size_t>(j * m)];
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t k = 0; k < j; ++k) {
        const double* qk = &a[static_cast<size_t>(k * m)];
        double dot = 0;
        for (int64_t i = 0; i < m; ++i) dot += qk[i] * qj[i];
        for (int64_t i = 0; i < m; ++i) qj[i] -= dot * qk[i];
      }
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += qj[i] * qj[i];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < m; ++i) qj[i] /= norm;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      int64_t ar = wide ? c : r, ac = wide ? r : c;
      out.set_double(r * cols + c, gain * a[static_cast<size_t>(ac * m + ar)]);
    }
  }
  return Status();
}

}  // namespace

double normal_quantile(double p) {
  if (!(p > 0)) return p == 0 ? -std::numeric_limits<double>::infinity() : std::nan("");
  if (!(p < 1)) return p == 1 ? std::numeric_limits<double>::infinity() : std::nan("");
  // P. J. Acklam's rational approximation (relative error < 1.15e-9).
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow) {
    double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - kLow) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step on Φ(x) - p brings it to full double precision.
  double e = normal_cdf(x) - p;
  double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

StatusOr<Tensor> materialize(const Initializer& init, const Type& type, uint64_t seed,
                             uint64_t stream) {
  Tensor out(type);
  if (init.kind == Kind::Constant) {
    fill(out, [&](uint64_t) { return init.a; });
    return out;
  }
  auto fail = [&](const std::string& why) -> Error {
    return Error{init.to_string() + " for " + type.to_string() + ": " + why};
  };
  if (init.kind == Kind::Stored) {
    if (!(init.stored->type == type)) return fail("the stored values have another type");
    std::memcpy(out.raw_data(), init.stored->bytes.data(), init.stored->bytes.size());
    return out;
  }
  if (init.kind == Kind::RngKey) {
    if (!(type == Type{DType::i64, {2}})) return fail("a Philox key is i64[2]");
    out.data<int64_t>()[0] = static_cast<int64_t>(seed);
    out.data<int64_t>()[1] = 0;
    return out;
  }
  if (!is_floating(type.dtype)) return fail("random initializers need a float dtype");
  int64_t fan_in = 0, fan_out = 0;
  compute_fans(type.shape, &fan_in, &fan_out);
  auto uniform = [&](double low, double high) {
    fill(out, [&](uint64_t i) { return low + (high - low) * uniforms(seed, stream, i).u0; });
  };
  auto normal = [&](double mean, double std) {
    fill(out, [&](uint64_t i) { return mean + std * standard_normal(seed, stream, i); });
  };
  if (out.numel() == 0) return out;
  switch (init.kind) {
    case Kind::Constant:
      break;
    case Kind::Uniform:
      if (!(init.a <= init.b)) return fail("the low bound exceeds the high bound");
      uniform(init.a, init.b);
      break;
    case Kind::Normal:
      if (!(init.b >= 0)) return fail("std must be >= 0");
      normal(init.a, init.b);
      break;
    case Kind::TruncatedNormal: {
      const double mean = init.a, std = init.b;
      if (!(std > 0)) return fail("std must be > 0");
      if (!(init.low < init.high)) return fail("the lower cut must be below the upper cut");
      const double lo = normal_cdf((init.low - mean) / std);
      const double hi = normal_cdf((init.high - mean) / std);
      fill(out, [&](uint64_t i) {
        double p = lo + (hi - lo) * uniforms(seed, stream, i).u0;
        // Keep p inside (0, 1) so that the quantile stays finite at infinite cuts.
        p = std::clamp(p, std::numeric_limits<double>::min(), 1 - 0x1p-53);
        return std::clamp(mean + std * normal_quantile(p), init.low, init.high);
      });
      break;
    }
    case Kind::XavierUniform:
    case Kind::XavierNormal: {
      if (!(init.gain >= 0)) return fail("gain must be >= 0");
      const double std = init.gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
      if (init.kind == Kind::XavierUniform) {
        uniform(-std::sqrt(3.0) * std, std::sqrt(3.0) * std);
      } else {
        normal(0, std);
      }
      break;
    }
    case Kind::KaimingUniform:
    case Kind::KaimingNormal: {
      const double fan =
          static_cast<double>(init.mode == Initializer::FanMode::FanIn ? fan_in : fan_out);
      const double gain = std::sqrt(2.0 / (1.0 + init.a * init.a));
      const double std = gain / std::sqrt(fan);
      if (init.kind == Kind::KaimingUniform) {
        uniform(-std::sqrt(3.0) * std, std::sqrt(3.0) * std);
      } else {
        normal(0, std);
      }
      break;
    }
    case Kind::Orthogonal: {
      if (!(init.gain >= 0)) return fail("gain must be >= 0");
      Status s = orthogonal(out, init.gain, seed, stream);
      if (!s.ok()) return fail(s.error().message);
      break;
    }
    case Kind::RngKey:
    case Kind::Stored:
      break;  // handled above
  }
  return out;
}

uint64_t parameter_stream(std::string_view name) { return fnv1a64(name); }

}  // namespace weft
