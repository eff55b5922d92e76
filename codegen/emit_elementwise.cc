// Emits the MLIR text of a fused elementwise kernel; see emit_elementwise.h.
// Semantics follow runtime/reference/elementwise.cc op by op (the comments say where
// an emitted sequence exists to match it exactly: NaN handling, saturation, wrapping).

#include "codegen/emit_elementwise.h"
#include "codegen/emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "ir/scalar_math.h"
#include "ir/status.h"

namespace weft::codegen {
namespace emit_detail {
namespace {

// Whether every use of `v` in `g` is an op that returns a NaN operand quiet whether or not
// it was (the op table's scalar math says so: scalar::quiets_nans, add, sub, mul, div,
// sum and mean), and `v` is no output of `g`. A widening cast of a half value to f32
// then need not set the quiet bit itself (Emitter::cast): the kernel's results are the
// same bits, with three vector ops fewer per cast.
bool users_quiet_nans(const Graph& g, ValueId v) {
  for (ValueId out : g.outputs()) {
    if (out == v) return false;
  }
  for (const Node& n : g.nodes()) {
    if (std::find(n.operands.begin(), n.operands.end(), v) == n.operands.end()) continue;
    if (!scalar::quiets_nans(n.op)) return false;
  }
  return true;
}

}  // namespace

std::string Emitter::cst(DType d, double v, int w) {
  std::string lit;
  if (d == DType::f32 || is_half(d)) {  // f16/bf16 constants are f32 (their compute type)
    const float f = static_cast<float>(v);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", b);
    lit = std::string(buf) + " : f32";
  } else if (d == DType::f64) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llX", static_cast<unsigned long long>(b));
    lit = std::string(buf) + " : f64";
  } else if (d == DType::boolean) {
    lit = v != 0 ? "true" : "false";
  } else {
    // Two's complement in the type's width (255 : i8 is written -1).
    int64_t x = static_cast<int64_t>(v);
    if (d == DType::u8) x = static_cast<int8_t>(static_cast<uint8_t>(x));
    if (d == DType::i32) x = static_cast<int32_t>(x);
    lit = std::to_string(x) + " : " + compute_elem(d);
  }
  std::string s = emit("arith.constant " + lit);
  if (w == 1) return s;
  return emit("vector.broadcast " + s + " : " + compute_elem(d) + " to " +
              vec(compute_elem(d), w));
}

std::string Emitter::cast(const std::string& x, DType from, DType to, int w) {
  // An f16/bf16 value is an exact f32, and a cast to f16/bf16 is one to f32 that node()
  // rounds (f64 → f16 rounds twice, through f32, as the reference does).
  if (is_half(from) && !is_half(to)) {
    from = DType::f32;
    // The reference widens through f64, which quiets a signaling NaN.
    if (to == DType::f32) return quiet_nan(x, w);
  }
  if (is_half(from)) from = DType::f32;
  if (is_half(to)) to = DType::f32;
  if (from == to) return x;
  if (to == DType::boolean) {
    return cmp(from, is_floating(from) ? "une" : "ne", x, cst(from, 0, w), w);  // x != 0
  }
  const bool fl_from = is_floating(from), fl_to = is_floating(to);
  if (fl_from && fl_to) return conv(bits(to) > bits(from) ? "arith.extf" : "arith.truncf", x, from, to, w);
  if (!fl_from && fl_to) {
    if (from == DType::i64 && to == DType::f32) {  // Through f64, as the reference does.
      return conv("arith.truncf", conv("arith.sitofp", x, from, DType::f64, w), DType::f64, to, w);
    }
    return conv(is_signed_int(from) ? "arith.sitofp" : "arith.uitofp", x, from, to, w);
  }
  if (!fl_from && !fl_to) {
    if (bits(to) < bits(from)) return conv("arith.trunci", x, from, to, w);  // Wraps.
    return conv(is_signed_int(from) ? "arith.extsi" : "arith.extui", x, from, to, w);
  }
  // Float to integer truncates toward zero and saturates, NaN gives 0 (saturating_cast
  // in runtime/tensor.h). Out-of-range fptosi is poison, which the selects discard.
  const bool sign = is_signed_int(to);
  const double lo = sign ? -std::ldexp(1.0, bits(to) - 1) : 0.0;
  const double hi = sign ? std::ldexp(1.0, bits(to) - 1) : std::ldexp(1.0, bits(to));
  const int64_t min = sign ? std::numeric_limits<int64_t>::min() >> (64 - bits(to)) : 0;
  const int64_t max = sign ? std::numeric_limits<int64_t>::max() >> (64 - bits(to))
                           : (int64_t{1} << bits(to)) - 1;
  std::string r = conv(sign ? "arith.fptosi" : "arith.fptoui", x, from, to, w);
  r = sel(cmp(from, "ole", x, cst(from, lo, w), w), cst(to, static_cast<double>(min), w), r, to, w);
  // cst takes a double: i64's max rounds to 2^63, so build it from the wrapped minimum.
  std::string max_c = to == DType::i64 ? bi("arith.subi", cst(to, static_cast<double>(min), w),
                                            cst(to, 1, w), vec("i64", w))
                                       : cst(to, static_cast<double>(max), w);
  r = sel(cmp(from, "oge", x, cst(from, hi, w), w), max_c, r, to, w);
  return sel(cmp(from, "uno", x, x, w), cst(to, 0, w), r, to, w);
}

// An f16/bf16 result is rounded by the op's half rule (ir/op.h, HalfRule), as the
// reference rounds: a Widen op's f32 value to nearest even; a Follow op (select) copies an
// operand; a Convert op (cast) rounds its conversion unless it copies (to its own dtype).
std::string Emitter::node(const Node& n, const std::vector<std::string>& a, int w) {
  if (n.op == Op::Slice) return a[0];  // a window: its input was loaded through it
  if (n.op == Op::Pad) return a[0];    // a store window: its output is stored through it
  const std::string x = op_value(n, a, w);
  const DType rd = g_.type(n.result()).dtype;
  const bool rounds = computes_half_in_f32(n.op) ||
                      (half_rule(n.op) == HalfRule::Convert && g_.type(n.operands[0]).dtype != rd);
  return is_half(rd) && rounds ? round_half(x, rd, w) : x;
}

std::string Emitter::op_value(const Node& n, const std::vector<std::string>& a, int w) {
  const DType rd = g_.type(n.result()).dtype;
  const DType d = g_.type(n.operands[0]).dtype;
  const std::string t = vec(compute_elem(d), w);
  const bool fl = is_floating(d);
  auto arith = [&](const char* f, const char* i) { return bi(fl ? f : i, a[0], a[1], t); };
  auto math = [&](const char* op) { return un(op, a[0], t); };
  switch (n.op) {
    case Op::Neg: return fl ? math("arith.negf") : bi("arith.subi", cst(d, 0, w), a[0], t);
    case Op::Abs:
      if (fl) return math("math.absf");
      if (!is_signed_int(d)) return a[0];
      return sel(cmp(d, "slt", a[0], cst(d, 0, w), w), bi("arith.subi", cst(d, 0, w), a[0], t),
                 a[0], d, w);  // Wraps at the minimum, as the reference does.
    case Op::Exp: return math("math.exp");
    case Op::Log: return math("math.log");
    case Op::Log1p: return math_f64("math.log1p", a[0], d, w);
    case Op::Sqrt: return math("math.sqrt");
    case Op::Rsqrt: return bi("arith.divf", cst(d, 1, w), math("math.sqrt"), t);
    case Op::Tanh: return math_f64("math.tanh", a[0], d, w);
    case Op::Sin: return math("math.sin");
    case Op::Cos: return math("math.cos");
    case Op::Erf: return erf(a[0], d, w);
    case Op::Softplus: {  // max(x, 0) + log1p(exp(-|x|)); NaN stays NaN (`ugt`, as relu)
      const std::string e = un("math.exp", un("arith.negf", math("math.absf"), t), t);
      const std::string pos = sel(cmp(d, "ugt", a[0], cst(d, 0, w), w), a[0], cst(d, 0, w), d, w);
      return bi("arith.addf", pos, math_f64("math.log1p", e, d, w), t);
    }
    case Op::Sigmoid:
      return bi("arith.divf", cst(d, 1, w),
                bi("arith.addf", cst(d, 1, w), un("math.exp", math("arith.negf"), t), t), t);
    case Op::Relu:  // NaN stays NaN: `ugt` is true for unordered operands.
      if (!fl && !is_signed_int(d)) return a[0];
      return sel(cmp(d, fl ? "ugt" : "sgt", a[0], cst(d, 0, w), w), a[0], cst(d, 0, w), d, w);
    case Op::Sign: {
      if (!fl && !is_signed_int(d)) {
        return sel(cmp(d, "ne", a[0], cst(d, 0, w), w), cst(d, 1, w), cst(d, 0, w), d, w);
      }
      std::string s = sel(cmp(d, fl ? "olt" : "slt", a[0], cst(d, 0, w), w), cst(d, -1, w),
                          cst(d, 0, w), d, w);
      s = sel(cmp(d, fl ? "ogt" : "sgt", a[0], cst(d, 0, w), w), cst(d, 1, w), s, d, w);
      return fl ? sel(cmp(d, "uno", a[0], a[0], w), a[0], s, d, w) : s;
    }
    case Op::Floor: return fl ? math("math.floor") : a[0];
    case Op::Not: return bi("arith.xori", a[0], cst(d, 1, w), t);
    case Op::Gelu: return gelu(a[0], d, n.str_attr("approximate") == "tanh", w);
    case Op::Cast:
      if (is_half(d) && rd == DType::f32 && users_quiet_nans(g_, n.result())) return a[0];
      return cast(a[0], d, rd, w);
    case Op::Add: return arith("arith.addf", "arith.addi");
    case Op::Sub: return arith("arith.subf", "arith.subi");
    case Op::Mul: return arith("arith.mulf", "arith.muli");
    case Op::Div: return arith("arith.divf", "<int div>");
    case Op::Pow: return arith("math.powf", "<int pow>");
    case Op::Maximum:
    case Op::Minimum: {
      const bool max = n.op == Op::Maximum;
      if (!fl) {
        const bool s = is_signed_int(d);
        return arith("", max ? (s ? "arith.maxsi" : "arith.maxui") : (s ? "arith.minsi" : "arith.minui"));
      }
      // a < b ? b : a (maximum) or b < a ? b : a, then NaN if either operand is NaN.
      std::string m = sel(max ? cmp(d, "olt", a[0], a[1], w) : cmp(d, "olt", a[1], a[0], w),
                          a[1], a[0], d, w);
      return sel(cmp(d, "uno", a[0], a[1], w), cst(d, std::numeric_limits<double>::quiet_NaN(), w),
                 m, d, w);
    }
    case Op::Eq: return cmp(d, fl ? "oeq" : "eq", a[0], a[1], w);
    case Op::Ne: return cmp(d, fl ? "une" : "ne", a[0], a[1], w);
    case Op::Lt: return cmp(d, fl ? "olt" : is_signed_int(d) ? "slt" : "ult", a[0], a[1], w);
    case Op::Le: return cmp(d, fl ? "ole" : is_signed_int(d) ? "sle" : "ule", a[0], a[1], w);
    case Op::Gt: return cmp(d, fl ? "ogt" : is_signed_int(d) ? "sgt" : "ugt", a[0], a[1], w);
    case Op::Ge: return cmp(d, fl ? "oge" : is_signed_int(d) ? "sge" : "uge", a[0], a[1], w);
    case Op::And: return bi("arith.andi", a[0], a[1], t);
    case Op::Or: return bi("arith.ori", a[0], a[1], t);
    case Op::Select: return sel(a[0], a[1], a[2], rd, w);
    default: WEFT_CHECK(false, "emit_elementwise: unsupported op " + std::string(op_name(n.op)));
  }
  return "";
}

// One iteration of width `w` at element index `i` of the row: loads, the nodes, stores.
std::unordered_map<ValueId, std::string> Emitter::compute(
    int w, const std::string& i, const std::vector<std::string>& bases,
    const std::vector<std::string>& splats, const Node* stop) {
  std::unordered_map<ValueId, std::string> val;
  auto access = [&](const std::string& base, DType d) {
    return emit("llvm.getelementptr " + base + "[" + i + "] : (!llvm.ptr, i64) -> !llvm.ptr, " +
                memory_elem(d));
  };
  const std::string align = " {alignment = ";
  for (size_t k = 0; k < g_.inputs().size(); ++k) {
    const ValueId v = g_.inputs()[k].value;
    const DType d = g_.type(v).dtype;
    if (space_.strides[k].back() == 0) {
      val[v] = w == 1 ? splats[k] : emit("vector.broadcast " + splats[k] + " : " +
                                         compute_elem(d) + " to " + vec(compute_elem(d), w));
      continue;
    }
    const std::string x = emit("llvm.load " + access(bases[k], d) + align +
                               std::to_string(access_align(d, w)) + " : i64} : !llvm.ptr -> " +
                               vec(memory_elem(d), w));
    val[v] = load_value(x, d, w);
  }
  for (const Node& n : g_.nodes()) {
    if (&n == stop) break;
    std::vector<std::string> a;
    for (ValueId o : n.operands) a.push_back(val.at(o));
    val[n.result()] = node(n, a, w);
  }
  return val;
}

void Emitter::body(int w, const std::string& i, const std::vector<std::string>& bases,
                   const std::vector<std::string>& splats, const std::vector<std::string>& outs) {
  std::unordered_map<ValueId, std::string> val = compute(w, i, bases, splats, nullptr);
  auto access = [&](const std::string& base, DType d) {
    return emit("llvm.getelementptr " + base + "[" + i + "] : (!llvm.ptr, i64) -> !llvm.ptr, " +
                memory_elem(d));
  };
  const std::string align = " {alignment = ";
  for (size_t o = 0; o < g_.outputs().size(); ++o) {
    const DType d = g_.type(g_.outputs()[o]).dtype;
    const std::string x = store_value(val.at(g_.outputs()[o]), d, w);
    const std::string address = access(outs[o], d);
    os_ << indent_ << "llvm.store " << x << ", " << address << align
        << access_align(d, w) << " : i64} : " << vec(memory_elem(d), w) << ", !llvm.ptr\n";
  }
}

void Emitter::header(std::vector<std::string>& ptr, const std::string& symbol) {
  symbol_ = symbol;
  const size_t buffers = g_.inputs().size() + g_.outputs().size();
  if (gpu_) {
    os_ << "module {\n  func.func @" << symbol << "(";
    for (size_t k = 0; k < buffers; ++k) {
      ptr.push_back("%p" + std::to_string(k));
      os_ << (k ? ", " : "") << ptr.back() << ": !llvm.ptr";
    }
    os_ << ") {\n";
    return;
  }
  os_ << "module {\n  func.func @" << symbol
      << "(%bufs: !llvm.ptr, %row_begin: i64, %row_end: i64) {\n";
  for (size_t k = 0; k < buffers; ++k) {
    std::string slot = emit("llvm.getelementptr %bufs[" + std::to_string(k) +
                            "] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr");
    ptr.push_back(emit("llvm.load " + slot + " : !llvm.ptr -> !llvm.ptr"));
  }
}

void Emitter::open_rows(const std::string& iv, int64_t count) {
  if (!gpu_) {
    const std::string one = cst(DType::i64, 1, 1);
    os_ << indent_ << "scf.for " << iv << " = %row_begin to %row_end step " << one << " : i64 {\n";
  } else {
    // Thread t of T (blocks × threads per block) takes rows t, t + T, t + 2T, ...
    auto sreg = [&](const std::string& reg) {
      return conv("arith.extui", emit("nvvm.read.ptx.sreg." + reg + " : i32"), DType::i32,
                  DType::i64, 1);
    };
    const std::string tid = sreg("tid.x"), block = sreg("ctaid.x"), block_size = sreg("ntid.x"),
                      blocks = sreg("nctaid.x");
    std::string first = bi("arith.addi", bi("arith.muli", block, block_size, "i64"), tid, "i64");
    std::string threads = bi("arith.muli", block_size, blocks, "i64");
    if (lanes_ > 1) {
      // Warp w (of T / 32) takes rows w, w + T/32, ...: the same rows for its 32 lanes.
      const std::string lanes = cst(DType::i64, lanes_, 1);
      lane_id_ = bi("arith.remui", first, lanes, "i64");
      first = bi("arith.divui", first, lanes, "i64");
      threads = bi("arith.divui", threads, lanes, "i64");
    }
    const std::string end = cst(DType::i64, static_cast<double>(count), 1);
    os_ << indent_ << "scf.for " << iv << " = " << first << " to " << end << " step " << threads
        << " : i64 {\n";
  }
  indent_ += "  ";
}

std::string Emitter::shuffle_xor(const std::string& x, DType d, int offset) {
  const std::string all = cst(DType::i32, -1, 1), clamp = cst(DType::i32, 31, 1),
                    by = cst(DType::i32, offset, 1);
  auto shuffle32 = [&](const std::string& v, const std::string& t) {
    return emit("nvvm.shfl.sync bfly " + all + ", " + v + ", " + by + ", " + clamp + " : " + t +
                " -> " + t);
  };
  switch (d) {
    case DType::f16:
    case DType::bf16:  // computed in f32 (emitter.h)
    case DType::f32: return shuffle32(x, "f32");
    case DType::i32: return shuffle32(x, "i32");
    case DType::f64:
    case DType::i64: {
      // Two 32-bit halves.
      const std::string bits = d == DType::f64 ? emit("arith.bitcast " + x + " : f64 to i64") : x;
      const std::string c32 = cst(DType::i64, 32, 1);
      const std::string lo = shuffle32(emit("arith.trunci " + bits + " : i64 to i32"), "i32");
      const std::string hi = shuffle32(
          emit("arith.trunci " + bi("arith.shrui", bits, c32, "i64") + " : i64 to i32"), "i32");
      const std::string joined =
          bi("arith.ori", emit("arith.extui " + lo + " : i32 to i64"),
             bi("arith.shli", emit("arith.extui " + hi + " : i32 to i64"), c32, "i64"), "i64");
      return d == DType::f64 ? emit("arith.bitcast " + joined + " : i64 to f64") : joined;
    }
    default: {  // u8, bool: widened to i32 and back
      const std::string t = compute_elem(d);
      const std::string wide = shuffle32(emit("arith.extui " + x + " : " + t + " to i32"), "i32");
      return emit("arith.trunci " + wide + " : i32 to " + t);
    }
  }
}

std::string Emitter::warp_combine(const Node& red, std::string x, DType d) {
  if (is_half(d)) d = DType::f32;  // max/min of f16/bf16: their f32 compute values
  const bool sum = red.op == Op::Sum || red.op == Op::Mean;
  auto combine = [&](const std::string& a, const std::string& b) {
    return sum ? bi("arith.addf", a, b, "f64") : accumulate(red, a, b, 1);
  };
  for (int offset = kWarp / 2; offset > 0; offset /= 2) x = combine(x, shuffle_xor(x, d, offset));
  if (lanes_ <= kWarp) return x;
  // A block: lane 0 of each warp publishes its warp's result in shared memory, then every
  // thread folds the warps' results in warp order (the same order everywhere, so every
  // lane holds the same bits). The first barrier keeps an earlier combine's readers
  // ahead of this one's writers.
  const std::string t = compute_elem(d);
  const std::string smem = emit("llvm.mlir.addressof @" + symbol_ + "_smem : !llvm.ptr<3>");
  auto slot = [&](const std::string& i) {
    return emit("llvm.getelementptr " + smem + "[" + i + "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + t);
  };
  const std::string warp_size = cst(DType::i64, kWarp, 1);
  const std::string warp = bi("arith.divui", lane_id_, warp_size, "i64");
  const std::string first =
      bi("arith.cmpi eq,", bi("arith.remui", lane_id_, warp_size, "i64"), cst(DType::i64, 0, 1), "i64");
  const std::string mine = slot(warp);
  os_ << indent_ << "nvvm.barrier0\n";
  os_ << indent_ << "scf.if " << first << " {\n";
  os_ << indent_ << "  llvm.store " << x << ", " << mine << " {alignment = " << dtype_size(d)
      << " : i64} : " << t << ", !llvm.ptr<3>\n";
  os_ << indent_ << "}\n";
  os_ << indent_ << "nvvm.barrier0\n";
  std::string total;
  for (int w = 0; w < lanes_ / kWarp; ++w) {
    const std::string v = emit("llvm.load " + slot(cst(DType::i64, w, 1)) + " {alignment = " +
                               std::to_string(dtype_size(d)) + " : i64} : !llvm.ptr<3> -> " + t);
    total = w == 0 ? v : combine(total, v);
  }
  return total;
}

std::string Emitter::group_combine(const Node& red, const std::string& x, DType d) {
  if (is_half(d)) d = DType::f32;  // max/min of f16/bf16: their f32 compute values
  const bool sum = red.op == Op::Sum || red.op == Op::Mean;
  const std::string t = compute_elem(d);
  const std::string smem = emit("llvm.mlir.addressof @" + symbol_ + "_smem : !llvm.ptr<3>");
  auto slot = [&](const std::string& i) {
    return emit("llvm.getelementptr " + smem + "[" + i + "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + t);
  };
  const std::string align = " {alignment = " + std::to_string(dtype_size(d)) + " : i64} ";
  const std::string warp_size = cst(DType::i64, kWarp, 1);
  const std::string lane = bi("arith.remui", lane_id_, warp_size, "i64");
  const std::string mine = slot(lane_id_);  // group · 32 + lane
  os_ << indent_ << "nvvm.barrier0\n";
  os_ << indent_ << "llvm.store " << x << ", " << mine << align << ": " << t << ", !llvm.ptr<3>\n";
  os_ << indent_ << "nvvm.barrier0\n";
  std::string total;
  for (int g = 0; g < lanes_ / kWarp; ++g) {
    const std::string at = bi("arith.addi", cst(DType::i64, g * kWarp, 1), lane, "i64");
    const std::string v = emit("llvm.load " + slot(at) + align + ": !llvm.ptr<3> -> " + t);
    total = g == 0 ? v : (sum ? bi("arith.addf", total, v, "f64") : accumulate(red, total, v, 1));
  }
  return total;
}

std::string Emitter::lanes_sum(const std::string& acc, const std::string& t, int w) {
  if (w == 1) return acc;
  return emit("vector.reduction <add>, " + acc + " : " + t + " into f64");
}

std::string Emitter::lane(const std::string& acc, int lane, const std::string& st,
                          const std::string& vt, int w) {
  if (w == 1) return acc;
  return emit("vector.extract " + acc + "[" + std::to_string(lane) + "] : " + st + " from " + vt);
}

std::string Emitter::footer() {
  os_ << "    return\n  }\n";
  if (lanes_ > kWarp) {  // one 8-byte slot per warp (warp_combine) or thread (group_combine)
    const int slots = column_groups_ ? lanes_ : lanes_ / kWarp;
    const std::string array = "!llvm.array<" + std::to_string(slots) + " x i64>";
    os_ << "  llvm.mlir.global internal @" << symbol_ << "_smem() {addr_space = 3 : i32, "
        << "alignment = 8 : i64} : " << array << " {\n    %u = llvm.mlir.undef : " << array
        << "\n    llvm.return %u : " << array << "\n  }\n";
  }
  for (const std::string& fn : libm_) os_ << "  func.func private @" << fn << "(f64) -> f64\n";
  os_ << "}\n";
  return os_.str();
}

// Operand k's address at element offset `off` of `p`, and its value there when it is
// broadcast along the row (the splat: loaded once, not per element).
void Emitter::operand_base(size_t k, const std::string& p, const std::string& off,
                           std::vector<std::string>& bases, std::vector<std::string>& splats) {
  const DType d = g_.type(g_.inputs()[k].value).dtype;
  std::string at = off;
  if (k < space_.offsets.size() && space_.offsets[k] != 0) {  // a window into its input
    const std::string start = cst(DType::i64, static_cast<double>(space_.offsets[k]), 1);
    at = at.empty() ? start : bi("arith.addi", at, start, "i64");
  }
  bases.push_back(gep(p, at, d));
  std::string s;
  if (space_.strides[k].back() == 0) {
    s = load_value(emit("llvm.load " + bases.back() + " : !llvm.ptr -> " + memory_elem(d)), d, 1);
  }
  splats.push_back(s);
}

// Row `r`'s start in every operand (offset = Σ_j ((r / Π dims[j+1..outer)) % dims[j]) ·
// stride[j]) and in every result (r · row_length; a store window's by its strides, from
// its offset), and the splat value of each operand broadcast along the row.
void Emitter::row_pointers(const std::vector<std::string>& ptr, const std::string& r,
                           std::vector<std::string>& bases, std::vector<std::string>& splats,
                           std::vector<std::string>& outs) {
  const size_t n_in = g_.inputs().size(), n_out = g_.outputs().size();
  const int outer = static_cast<int>(space_.dims.size()) - 1;
  const auto row_offset = [&](const std::vector<int64_t>& strides) {
    std::string off;
    int64_t inner_rows = 1;
    for (int j = outer - 1; j >= 0; inner_rows *= space_.dims[j], --j) {
      if (strides[j] == 0) continue;
      std::string q = r;
      if (inner_rows != 1) q = bi("arith.divui", q, cst(DType::i64, inner_rows, 1), "i64");
      if (j > 0) q = bi("arith.remui", q, cst(DType::i64, space_.dims[j], 1), "i64");
      if (strides[j] != 1) q = bi("arith.muli", q, cst(DType::i64, strides[j], 1), "i64");
      off = off.empty() ? q : bi("arith.addi", off, q, "i64");
    }
    return off;
  };
  for (size_t k = 0; k < n_in; ++k) operand_base(k, ptr[k], row_offset(space_.strides[k]), bases, splats);
  const std::string row_off = bi("arith.muli", r, cst(DType::i64, space_.row_length(), 1), "i64");
  for (size_t o = 0; o < n_out; ++o) {
    std::string at = row_off;
    if (o < space_.out_strides.size() && !space_.out_strides[o].empty()) {  // a store window
      at = row_offset(space_.out_strides[o]);
      const std::string start = cst(DType::i64, static_cast<double>(space_.out_offsets[o]), 1);
      at = at.empty() ? start : bi("arith.addi", at, start, "i64");
    }
    outs.push_back(gep(ptr[n_in + o], at, g_.type(g_.outputs()[o]).dtype));
  }
}

std::string Emitter::module(const std::string& symbol) {
  std::vector<std::string> ptr;
  header(ptr, symbol);
  const int64_t length = space_.row_length();
  if (space_.rows() * length != 0) {
    open_rows("%r", space_.rows());
    std::vector<std::string> bases, splats, outs;
    row_pointers(ptr, "%r", bases, splats, outs);
    const int64_t main = length / width_ * width_;
    auto loop = [&](int64_t from, int64_t to, int w) {
      if (from == to) return;
      const std::string lo = cst(DType::i64, from, 1), hi = cst(DType::i64, to, 1),
                        step = cst(DType::i64, w, 1);
      const std::string i = "%i" + std::to_string(next_++);
      os_ << indent_ << "scf.for " << i << " = " << lo << " to " << hi << " step " << step
          << " : i64 {\n";
      indent_ += "  ";
      body(w, i, bases, splats, outs);
      indent_.resize(indent_.size() - 2);
      os_ << indent_ << "}\n";
    };
    loop(0, main, width_);
    loop(main, length, 1);
    indent_.resize(indent_.size() - 2);
    os_ << indent_ << "}\n";
  }
  return footer();
}

// ---- Reductions (emit_reduction) ----

// Σ_j ((idx / Π dims[later j in list]) % dims[j]) · stride[k][j] over the dims in `list`
// (outermost first); "" when the operand does not move along them.
std::string Emitter::offset(size_t k, const std::string& idx, const std::vector<int>& list) {
  std::string off;
  int64_t inner = 1;
  for (int p = static_cast<int>(list.size()) - 1; p >= 0; inner *= space_.dims[list[p]], --p) {
    const int j = list[p];
    if (space_.strides[k][j] == 0) continue;
    std::string q = idx;
    if (inner != 1) q = bi("arith.divui", q, cst(DType::i64, static_cast<double>(inner), 1), "i64");
    if (p > 0) q = bi("arith.remui", q, cst(DType::i64, static_cast<double>(space_.dims[j]), 1), "i64");
    if (space_.strides[k][j] != 1) {
      q = bi("arith.muli", q, cst(DType::i64, static_cast<double>(space_.strides[k][j]), 1), "i64");
    }
    off = off.empty() ? q : bi("arith.addi", off, q, "i64");
  }
  return off;
}

// Each operand's base pointer for reduced index `o` (over `list`) on top of its row
// offset, and its splat value where it is broadcast along the innermost dim.
void Emitter::operand_bases(const std::vector<std::string>& ptr,
                            const std::vector<std::string>& row_off, const std::string& o,
                            const std::vector<int>& list, std::vector<std::string>& bases,
                            std::vector<std::string>& splats) {
  bases.clear();
  splats.clear();
  for (size_t k = 0; k < g_.inputs().size(); ++k) {
    std::string off = offset(k, o, list);
    if (!row_off[k].empty()) off = off.empty() ? row_off[k] : bi("arith.addi", off, row_off[k], "i64");
    operand_base(k, ptr[k], off, bases, splats);
  }
}

}  // namespace emit_detail

using emit_detail::Emitter;

std::string emit_elementwise(const Graph& body, const std::string& symbol, bool native_bf16) {
  const CollapsedSpace space = collapse_space(body);
  Emitter e(body, space);
  e.set_native_bf16(native_bf16);
  return e.module(symbol);
}

}  // namespace weft::codegen
