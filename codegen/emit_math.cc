// The math of ops whose lowering weft chooses instead of taking MLIR's: f64
// transcendentals through libm per lane (math_f64, libm), GELU, and f32 erf as
// polynomials (erf); see emitter.h. emit_elementwise.cc emits the ops that call them.

#include <algorithm>
#include <string>

#include "codegen/emitter.h"

namespace weft::codegen {
namespace emit_detail {

// f64 tanh, erf and log1p have no LLVM intrinsic and no MLIR approximation, and
// MathToLLVM would expand log1p(x) as log(1 + x), which loses digits for small x: call
// libm per lane, as the reference does.
std::string Emitter::libm(const std::string& fn, const std::string& x, int w) {
  if (std::find(libm_.begin(), libm_.end(), fn) == libm_.end()) libm_.push_back(fn);
  auto call = [&](const std::string& arg) { return emit("func.call @" + fn + "(" + arg + ") : (f64) -> f64"); };
  if (w == 1) return call(x);
  const std::string t = vec("f64", w);
  std::string acc = emit("arith.constant dense<0.0> : " + t);
  for (int lane = 0; lane < w; ++lane) {
    const std::string l = std::to_string(lane);
    const std::string r = call(emit("vector.extract " + x + "[" + l + "] : f64 from " + t));
    acc = emit("vector.insert " + r + ", " + acc + " [" + l + "] : f64 into " + t);
  }
  return acc;
}

std::string Emitter::math_f64(const char* op, const std::string& x, DType d, int w) {
  if (d == DType::f64) return libm(std::string(op).substr(5), x, w);  // "math.tanh" → tanh
  return un(op, x, vec(compute_elem(d), w));
}

std::string Emitter::gelu(const std::string& x, DType d, bool tanh, int w) {
  const std::string t = vec(compute_elem(d), w);
  if (tanh) {
    // PyTorch's 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), computed as the equal
    // x / (1 + exp(-2u)): for x ≲ -4, 1 + tanh(u) cancels, and the f32 tanh
    // approximation's absolute error (~1e-7 near -1) would become a large relative one.
    std::string cube = bi("arith.mulf", cst(d, 0.044715, w), x, t);
    cube = bi("arith.mulf", bi("arith.mulf", cube, x, t), x, t);
    const std::string minus_2u = bi("arith.mulf", cst(d, -2 * 0.79788456080286535587989211986876, w),
                                    bi("arith.addf", x, cube, t), t);
    return bi("arith.divf", x, bi("arith.addf", cst(d, 1, w), un("math.exp", minus_2u, t), t), t);
  }
  // 0.5·x·(1 + erf(x/√2))
  const std::string half_x = bi("arith.mulf", cst(d, 0.5, w), x, t);
  const std::string e = erf(bi("arith.mulf", x, cst(d, 0.70710678118654752440084436210485, w), t), d, w);
  return bi("arith.mulf", half_x, bi("arith.addf", cst(d, 1, w), e, t), t);
}

// erf on a = |x| (fitted by weighted least squares, Lawson's iteration toward minimax,
// coefficients rounded to f32, by erf_fit.py; max abs error 9.6e-8 over f32 patterns):
//   a < 1:        a + a·P(a²), P of degree 5 (erf(a)/a - 1 on [0, 1])
//   1 ≤ a < 3.92: Q(a - 2.5), Q of degree 12 (erf on [1, 3.9192])
//   a ≥ 3.9192:   1 exactly (erf rounds to 1 in f32 from 3.9192059)
// then the sign of x. 18 FMAs, 2 selects and no divide per vector, where MLIR's
// approximation (math.erf, a rational function on three intervals) compiles to 8 FMAs,
// 18 blends and a divide. Measured (erf_bench), this one is 4% faster alone and 8-15%
// within GELU and its backward, with a third of the error (kernel_erf_test). Fewer FMAs
// need lower degrees: two ranges need 17 coefficients at this accuracy wherever the
// split lies, and one Horner over both (coefficients selected per lane) ran 7% slower.
// NaN stays NaN (both compares are false), ±inf gives ±1, ±0 gives ±0. a - 2.5 is exact
// wherever Q is selected (both are multiples of 2^-23 there, the difference below 2).
std::string Emitter::erf(const std::string& x, DType d, int w) {
  if (d == DType::f64) return math_f64("math.erf", x, d, w);
  static constexpr double kSmall[] = {0x1.06eba2p-3,  -0x1.812688p-2, 0x1.ce0bb2p-4,
                                      -0x1.b5be3cp-6, 0x1.42c074p-8,  -0x1.28c1e6p-11};
  static constexpr double kBig[] = {
      0x1.ffcaaap-1,  0x1.1d7c40p-9,  -0x1.64f3aap-8, 0x1.11b806p-7,  -0x1.1a4e88p-7,
      0x1.8ffb7cp-8,  -0x1.71623ep-9, 0x1.2b09d6p-11, 0x1.2c6c82p-12, -0x1.2472c2p-12,
      0x1.03934ep-14, 0x1.6100cap-16, -0x1.322c48p-17};
  const std::string t = vec(compute_elem(d), w);
  auto fma = [&](const std::string& a, const std::string& b, const std::string& c) {
    return emit("math.fma " + a + ", " + b + ", " + c + " : " + t);
  };
  auto horner = [&](const std::string& v, const double* c, int n) {
    std::string p = cst(d, c[n - 1], w);
    for (int i = n - 2; i >= 0; --i) p = fma(p, v, cst(d, c[i], w));
    return p;
  };
  const std::string a = un("math.absf", x, t);
  const std::string small = fma(a, horner(bi("arith.mulf", a, a, t), kSmall, 6), a);
  const std::string big = horner(bi("arith.subf", a, cst(d, 2.5, w), t), kBig, 13);
  std::string r = sel(cmp(d, "olt", a, cst(d, 1, w), w), small, big, d, w);
  r = sel(cmp(d, "oge", a, cst(d, 0x1.f5a88ap+1, w), w), cst(d, 1, w), r, d, w);
  return bi("math.copysign", r, x, t);
}

}  // namespace emit_detail
}  // namespace weft::codegen
