// The emitter's f16 and bf16 values (emitter.h): stored as their 16 bits (i16 in memory),
// computed in f32. Loading widens exactly; every op whose result is f16/bf16 computes
// in f32 and rounds to nearest even as the reference interpreter does (it widens each
// op's operands, runs the f32 kernel and rounds the result with runtime/tensor.h's
// float_to_f16 / float_to_bf16); storing converts an already representable value.
//
// bf16 is rounded with integer ops, the same steps as float_to_bf16 (NaN quieted, ties
// to even, denormals kept). On a CPU with AVX512_BF16 (set_native_bf16) a vector of 8 or
// 16 lanes takes vcvtneps2bf16 instead, which rounds to the same bits except that it
// flushes denormal inputs to zero: vfpclassps tests for a denormal lane and only such a
// vector takes the integer steps (4 instructions per 16 lanes instead of 8). f16 uses
// arith.extf / arith.truncf (F16C's vcvtph2ps / vcvtps2ph: IEEE round to nearest even,
// denormals included) with the NaN lanes fixed up to what the reference gives.

#include "codegen/emit_elementwise.h"
#include "codegen/emitter.h"

namespace weft::codegen {
namespace emit_detail {

std::string Emitter::load_value(const std::string& x, DType d, int w) {
  if (d == DType::boolean) return cmp(DType::u8, "ne", x, cst(DType::u8, 0, w), w);
  if (is_half(d)) return half_to_f32(x, d, w);
  return x;
}

std::string Emitter::store_value(const std::string& x, DType d, int w) {
  if (d == DType::boolean) return conv("arith.extui", x, DType::boolean, DType::u8, w);
  if (is_half(d)) return f32_to_half(x, d, /*round=*/false, w);
  return x;
}

std::string Emitter::half_to_f32(const std::string& bits, DType d, int w) {
  const std::string i32 = vec("i32", w);
  const std::string wide = convert("arith.extui", bits, "i16", "i32", w);
  if (d == DType::bf16) {  // bf16 is the top half of an f32
    return convert("arith.bitcast", bi("arith.shli", wide, cst(DType::i32, 16, w), i32), "i32",
                   "f32", w);
  }
  const std::string f = convert("arith.extf", convert("arith.bitcast", bits, "i16", "f16", w),
                                "f16", "f32", w);
  // NaN: sign, all-ones exponent, the 10 payload bits on top of the mantissa (as
  // f16_to_float; the hardware would also set the quiet bit of a signaling NaN).
  const std::string sign = bi("arith.shli", bi("arith.andi", wide, cst(DType::i32, 0x8000, w), i32),
                              cst(DType::i32, 16, w), i32);
  const std::string payload = bi("arith.shli", bi("arith.andi", wide, cst(DType::i32, 0x3ff, w), i32),
                                 cst(DType::i32, 13, w), i32);
  const std::string nan = bi("arith.ori", bi("arith.ori", sign, payload, i32),
                             cst(DType::i32, 0x7f800000, w), i32);
  // The NaN test on the bits: a float compare of the widened value would be folded into
  // one on the f16 vector, which x86 without AVX512-FP16 does lane by lane (it made f16
  // kernels 40x slower than bf16 ones).
  const std::string is_nan = cmp(DType::i32, "ugt", bi("arith.andi", wide, cst(DType::i32, 0x7fff, w), i32),
                                 cst(DType::i32, 0x7c00, w), w);
  return sel(is_nan, convert("arith.bitcast", nan, "i32", "f32", w), f, DType::f32, w);
}

std::string Emitter::quiet_nan(const std::string& x, int w) {
  const std::string bits = convert("arith.bitcast", x, "f32", "i32", w);
  const std::string quiet = bi("arith.ori", bits, cst(DType::i32, 0x400000, w), vec("i32", w));
  return sel(cmp(DType::f32, "uno", x, x, w), convert("arith.bitcast", quiet, "i32", "f32", w), x,
             DType::f32, w);
}

std::string Emitter::native_round_bf16(const std::string& x, int w,
                                       const std::function<std::string()>& integer_steps) {
  const std::string i16 = vec("i16", w), i1 = vec("i1", w);
  // vfpclassps with class 0x20: the denormal lanes.
  const std::string denormal =
      emit("llvm.call_intrinsic \"llvm.x86.avx512.fpclass.ps." + std::to_string(32 * w) + "\"(" +
           x + ", " + cst(DType::i32, 0x20, 1) + ") : (" + vec("f32", w) + ", i32) -> " + i1);
  const std::string any = emit("vector.reduction <or>, " + denormal + " : " + i1 + " into i1");
  const std::string bits = "%t" + std::to_string(next_++);
  os_ << indent_ << bits << " = scf.if " << any << " -> (" << i16 << ") {\n";
  indent_ += "  ";
  const std::string slow = integer_steps();
  os_ << indent_ << "scf.yield " << slow << " : " << i16 << "\n";
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "} else {\n";
  indent_ += "  ";
  const std::string fast = convert("arith.bitcast", convert("arith.truncf", x, "f32", "bf16", w),
                                   "bf16", "i16", w);
  os_ << indent_ << "scf.yield " << fast << " : " << i16 << "\n";
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "}\n";
  return bits;
}

std::string Emitter::f32_to_half(const std::string& x, DType d, bool round, int w) {
  const std::string i32 = vec("i32", w);
  auto c = [&](int64_t v) { return cst(DType::i32, static_cast<double>(v), w); };
  if (d == DType::bf16) {
    // float_to_bf16: u + 0x7fff + (bit 16 of u), then the top half (ties to even; a
    // carry into the exponent gives the next binade or infinity). NaN: top half with
    // the quiet bit set.
    auto integer_steps = [&] {
      const std::string u = convert("arith.bitcast", x, "f32", "i32", w);
      const std::string top = bi("arith.shrui", u, c(16), i32);  // sign, exponent, 7 bits
      if (!round) return convert("arith.trunci", top, "i32", "i16", w);
      const std::string r =
          bi("arith.addi", u, bi("arith.addi", c(0x7fff), bi("arith.andi", top, c(1), i32), i32), i32);
      return convert("arith.trunci",
                     sel(cmp(DType::f32, "uno", x, x, w), bi("arith.ori", top, c(0x40), i32),
                         bi("arith.shrui", r, c(16), i32), DType::i32, w),
                     "i32", "i16", w);
    };
    // vcvtneps2bf16 rounds as float_to_bf16 does (NaN: the top half, quiet bit set) but
    // flushes a denormal input to zero; vectors of 8 or 16 lanes have vfpclassps.
    if (round && native_bf16_ && (w == 8 || w == 16)) return native_round_bf16(x, w, integer_steps);
    return integer_steps();
  }
  const std::string u = convert("arith.bitcast", x, "f32", "i32", w);
  const std::string top = bi("arith.shrui", u, c(16), i32);  // sign, exponent, 7 bits
  const std::string is_nan = cmp(DType::f32, "uno", x, x, w);
  const std::string bits =
      convert("arith.bitcast", convert("arith.truncf", x, "f32", "f16", w), "f16", "i16", w);
  // float_to_f16 gives every NaN as sign | 0x7e00; a representable NaN keeps its payload.
  std::string nan = bi("arith.ori", bi("arith.andi", top, c(0x8000), i32), c(0x7e00), i32);
  if (!round) {
    nan = bi("arith.ori", bi("arith.andi", top, c(0x8000), i32),
             bi("arith.ori", c(0x7c00),
                bi("arith.andi", bi("arith.shrui", u, c(13), i32), c(0x3ff), i32), i32),
             i32);
  }
  return emit("arith.select " + is_nan + ", " + convert("arith.trunci", nan, "i32", "i16", w) +
              ", " + bits + " : " + (w > 1 ? vec("i1", w) + ", " : "") + vec("i16", w));
}

}  // namespace emit_detail
}  // namespace weft::codegen
