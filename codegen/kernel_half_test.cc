// f16 and bf16 in generated kernels (emit_half.cc: stored as 16 bits, computed in f32,
// each result rounded to nearest even) compared with the reference interpreter:
// conversions bit for bit (every f16 and bf16 pattern widened and cast to every dtype;
// f32 ties, denormals, overflow and NaN payloads rounded; f64 and integers narrowed);
// every float op bit for bit where its f32 math is exact, within one unit in the last
// place of the dtype for the f32 approximations (exp, tanh, ...); compares and select;
// reductions; a fused body mixing f32 and bf16; bodies as round-at-stores rewrites them
// (passes/round_at_stores.h: computed in f32, rounded once at the store), bit for bit
// where their f32 math is exact, in the CPU kernels and in the GPU kernels' scalar code
// run on the host. Worst distances are printed.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "codegen/cpu_backend.h"
#include "codegen/emit_elementwise.h"
#include "codegen/gpu_host_test_util.h"
#include "codegen/kernel_test_util.h"
#include "passes/round_at_stores.h"

namespace weft::codegen {
namespace {

using testing::expect_half_matches_reference;
using testing::expect_random_half_matches;
using testing::op_body;
using testing::parse_typed;

const DType kHalves[] = {DType::f16, DType::bf16};

// Expects outputs `got` of `body` equal to the reference's byte for byte (NaN payloads too).
void expect_reference_bits(const Graph& body, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& got) {
  StatusOr<reference::RunResult> want = reference::run(body, inputs);
  ASSERT_TRUE(want.ok()) << want.error().to_string();
  ASSERT_EQ(got.size(), want->outputs.size());
  for (size_t o = 0; o < got.size(); ++o) {
    const Tensor& g = got[o];
    const Tensor& w = want->outputs[o];
    const size_t size = dtype_size(w.dtype());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const auto* a = static_cast<const unsigned char*>(g.raw_data()) + i * size;
      const auto* b = static_cast<const unsigned char*>(w.raw_data()) + i * size;
      if (std::memcmp(a, b, size) == 0) continue;
      const double in = inputs[0].get_double(i);
      ADD_FAILURE() << kernel_key(body) << ": element " << i << " (input " << in << ") is "
                    << g.get_double(i) << ", the reference gives " << w.get_double(i);
      return;
    }
  }
}

// Expects the kernel's outputs equal to the reference's byte for byte (NaN payloads too).
void expect_same_bits(const Graph& body, std::vector<Tensor> inputs) {
  expect_reference_bits(body, inputs, testing::run_kernel(body, inputs));
}

// A 1-D tensor of `d` holding the raw `bits` of each element.
template <typename Bits>
Tensor from_bits(DType d, const std::vector<Bits>& bits) {
  Tensor t(Type{d, Shape{{static_cast<int64_t>(bits.size())}}});
  std::memcpy(t.raw_data(), bits.data(), bits.size() * sizeof(Bits));
  return t;
}

Graph cast_body(DType from, DType to, int64_t n) {
  return op_body(Op::Cast, {{from, Shape{{n}}}}, {{"dtype", to}}, to);
}

TEST(KernelHalf, EveryHalfPatternConvertsAsTheReferenceDoes) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (DType d : kHalves) {
    for (DType to : kAllDTypes) {
      if (to == d) continue;
      SCOPED_TRACE(std::string(dtype_name(d)) + " -> " + std::string(dtype_name(to)));
      expect_same_bits(cast_body(d, to, 65536), {from_bits(d, all)});
    }
  }
}

// f32 values around every rounding decision of f16 and bf16, then random bit patterns
// (every exponent, NaN payloads, denormals).
std::vector<uint32_t> f32_patterns() {
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  std::vector<uint32_t> v = {
      bits(0.0f), bits(-0.0f), bits(1.0f + 0x1p-8f), bits(1.0f + 3 * 0x1p-8f),  // bf16 ties
      bits(1.0f + 0x1p-11f), bits(1.0f + 3 * 0x1p-11f),                          // f16 ties
      bits(65504.0f), bits(65519.0f), bits(65520.0f), bits(65536.0f), bits(-65520.0f),
      bits(0x1p-24f), bits(0x1p-25f), bits(3 * 0x1p-25f), bits(0x1p-14f - 0x1p-25f),
      bits(std::numeric_limits<float>::denorm_min()), 0x00400000u, 0x807fffffu,  // denormals
      bits(std::numeric_limits<float>::max()), 0x7f7f8000u, 0x7f7f7fffu,  // bf16 overflow
      0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc12345u,
      0xff812345u, 0x7fffffffu, 0x7f80e000u};
  std::mt19937_64 rng(30);
  while (v.size() < 40000) v.push_back(static_cast<uint32_t>(rng()));
  return v;
}

TEST(KernelHalf, F32RoundsToNearestEvenAsTheReferenceDoes) {
  const std::vector<uint32_t> v = f32_patterns();
  for (DType to : kHalves) {
    SCOPED_TRACE(std::string("f32 -> ") + std::string(dtype_name(to)));
    expect_same_bits(cast_body(DType::f32, to, static_cast<int64_t>(v.size())),
                     {from_bits(DType::f32, v)});
  }
}

// f32 patterns at bf16's rounding corners, none denormal: ties (to even, up and down) in
// several binades and both signs, the smallest normals, the largest finite values (a
// tie that overflows to infinity), ±0, ±infinity, quiet and signaling NaNs with
// payloads; then random patterns of every non-zero exponent. 1,600 of them (100
// vectors of 16).
std::vector<uint32_t> bf16_corner_patterns() {
  std::vector<uint32_t> v = {
      0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f817fffu, 0xbf808000u, 0xbf818000u,  // ties
      0x00808000u, 0x00818000u, 0x80808000u, 0x7e808000u, 0x7f7f8000u, 0xff7f8000u,
      0x00800000u, 0x80800000u, 0x0080ffffu, 0x00807fffu,  // the smallest normals
      0x7f7fffffu, 0xff7fffffu, 0x7f7f7fffu, 0x7f7effffu,  // the largest finite
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
      0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0xffffffffu, 0x7fffffffu, 0x7fc0ffffu,  // quiet
      0x7f800001u, 0xff800001u, 0x7f812345u, 0xffbfffffu, 0x7f80e000u, 0x7fbf8000u};  // signaling
  std::mt19937_64 rng(32);
  while (v.size() < 1600) {
    const uint32_t u = static_cast<uint32_t>(rng());
    if ((u & 0x7f800000u) != 0) v.push_back(u);
  }
  return v;
}

// `body`'s outputs from its elementwise kernel emitted with or without the native bf16
// conversion (emit_elementwise's native_bf16) and compiled by `jit`, rows in two calls.
std::vector<Tensor> run_emitted(Jit& jit, const Graph& body, bool native_bf16,
                                std::vector<Tensor>& inputs) {
  StatusOr<JitResult> k = jit.compile(emit_elementwise(body, "k", native_bf16), "k");
  EXPECT_TRUE(k.ok()) << k.error().to_string();
  if (!k.ok()) return {};
  return testing::run_rows(reinterpret_cast<GeneratedFn>(k->address), row_layout(body).rows, body,
                           inputs);
}

// Rounding to bf16 on a target with AVX512_BF16 (Jit::native_bf16) takes vcvtneps2bf16
// for a vector without denormal lanes and the integer steps for a vector with one (the
// instruction flushes it to zero); a target without it takes the integer steps always.
// All give float_to_bf16's bits: NaN quieted with its payload, ties to even, overflow to
// infinity, denormals kept; 16-lane vectors and 8-lane ones (a body with an f64).
TEST(KernelHalf, Bf16RoundsAsTheReferenceOnTheNativeAndTheIntegerPath) {
  const std::vector<uint32_t> normal = bf16_corner_patterns();
  std::vector<uint32_t> one_denormal = normal;  // vector k: lane k % 16 denormal
  const uint32_t denormals[] = {0x00000001u, 0x80000001u, 0x00008000u, 0x00018000u, 0x00400000u,
                                0x807fffffu, 0x007fffffu, 0x00017fffu, 0x8000c000u};
  for (size_t k = 0; k * 16 < one_denormal.size(); ++k) {
    one_denormal[k * 16 + k % 16] = denormals[k % std::size(denormals)];
  }
  const std::string n = std::to_string(normal.size());
  const Graph lanes16 = cast_body(DType::f32, DType::bf16, static_cast<int64_t>(normal.size()));
  const Graph lanes8 = parse_typed("graph @k(%x: f32[" + n + "], %y: f64[" + n + "]) -> (bf16[" +
                                   n + "], f64[" + n + "]) {\n  %h = cast(%x) {dtype=bf16} : bf16[" +
                                   n + "]\n  %z = neg(%y) : f64[" + n + "]\n  return %h, %z\n}");
  const Tensor y = Tensor::from_doubles(DType::f64, Shape{{static_cast<int64_t>(normal.size())}},
                                        std::vector<double>(normal.size(), 0.5));
  // The choice, in the emitted code.
  for (const auto& [body, lanes] : {std::pair{&lanes16, 16}, std::pair{&lanes8, 8}}) {
    const std::string native = emit_elementwise(*body, "k", /*native_bf16=*/true);
    const std::string integer = emit_elementwise(*body, "k", /*native_bf16=*/false);
    const std::string w = std::to_string(lanes);
    EXPECT_NE(native.find("llvm.x86.avx512.fpclass.ps." + std::to_string(32 * lanes)), std::string::npos);
    EXPECT_NE(native.find("to vector<" + w + "xbf16>"), std::string::npos);
    EXPECT_EQ(integer.find("fpclass"), std::string::npos);
    EXPECT_EQ(integer.find("bf16>"), std::string::npos);
  }
  Jit jit;
  if (!jit.native_bf16()) std::printf("  this host has no AVX512_BF16: the integer path only\n");
  for (bool native : {true, false}) {
    if (native && !jit.native_bf16()) continue;  // vcvtneps2bf16 would fault
    for (const std::vector<uint32_t>* bits : {&normal, static_cast<const std::vector<uint32_t>*>(&one_denormal)}) {
      SCOPED_TRACE(std::string(native ? "native" : "integer") + " path, " +
                   (bits == &normal ? "no denormal lane" : "a denormal lane per vector"));
      std::vector<Tensor> in16 = {from_bits(DType::f32, *bits)};
      expect_reference_bits(lanes16, in16, run_emitted(jit, lanes16, native, in16));
      std::vector<Tensor> in8 = {from_bits(DType::f32, *bits), y};
      expect_reference_bits(lanes8, in8, run_emitted(jit, lanes8, native, in8));
    }
  }
}

// The host's answer is its CPU's flags; named CPUs answer by their features.
TEST(KernelHalf, NativeBf16IsTheTargetsAvx512Bf16) {
  Jit jit;
  EXPECT_EQ(jit.native_bf16(), __builtin_cpu_supports("avx512bf16") &&
                                  __builtin_cpu_supports("avx512dq") &&
                                  __builtin_cpu_supports("avx512vl"));
  EXPECT_TRUE(jit.native_bf16("znver4"));
  EXPECT_TRUE(jit.native_bf16("cooperlake"));
  EXPECT_FALSE(jit.native_bf16("skylake-avx512"));
  EXPECT_FALSE(jit.native_bf16("x86-64-v3"));
}

// An object file compiled ahead of time for a CPU takes that CPU's answer, not the
// host's: for x86-64-v3 the integer steps (the native path's AVX-512 intrinsics would
// stop LLVM: "Do not know how to promote this operator"), for znver4 the native path.
TEST(KernelHalf, AnObjectRoundsToBf16AsItsCpuCan) {
  const Graph body = cast_body(DType::f32, DType::bf16, 1000);
  for (const char* cpu : {"x86-64-v3", "znver4"}) {
    SCOPED_TRACE(cpu);
    StatusOr<std::string> object =
        KernelCompiler::global().compile_object({{"k", &body, FusedKind::elementwise}}, cpu);
    ASSERT_TRUE(object.ok()) << object.error().to_string();
    EXPECT_FALSE(object->empty());
  }
}

TEST(KernelHalf, OtherDtypesNarrowAsTheReferenceDoes) {
  std::mt19937_64 rng(31);
  std::vector<uint64_t> f64(20000), i64(20000);
  std::vector<int32_t> i32(20000);
  std::vector<uint8_t> u8(256), boolean = {0, 1, 1, 0};
  for (auto& x : f64) {  // Doubles near f32 midpoints: where rounding through f32 shows.
    double d = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                          static_cast<int>(rng() % 80) - 40);
    std::memcpy(&x, &d, 8);
    if (rng() % 4 == 0) x = (x & ~uint64_t{0x1fffffff}) | 0x10000000 | (rng() & 1);
  }
  for (auto& x : i64) x = rng() >> (rng() % 64);
  for (auto& x : i32) x = static_cast<int32_t>(rng() >> (32 + rng() % 32));
  for (size_t i = 0; i < u8.size(); ++i) u8[i] = static_cast<uint8_t>(i);
  for (DType to : kHalves) {
    SCOPED_TRACE(dtype_name(to));
    expect_same_bits(cast_body(DType::f64, to, 20000), {from_bits(DType::f64, f64)});
    expect_same_bits(cast_body(DType::i64, to, 20000), {from_bits(DType::i64, i64)});
    expect_same_bits(cast_body(DType::i32, to, 20000), {from_bits(DType::i32, i32)});
    expect_same_bits(cast_body(DType::u8, to, 256), {from_bits(DType::u8, u8)});
    expect_same_bits(cast_body(DType::boolean, to, 4), {from_bits(DType::boolean, boolean)});
  }
}

const std::vector<Shape> kShapes = {{37}, {4, 19}, {3, 2, 40}, {}, {64}};

void report(const std::string& what, double ulps) {
  std::printf("  max ulps |jit - ref|  %-20s %.3g\n", what.c_str(), ulps);
}

struct UnaryCase {
  Op op;
  double lo, hi;
  double ulps;  // 0: the f32 math is exact (correctly rounded or exact), 1: approximated.
  Attrs attrs = {};
};

TEST(KernelHalf, FloatUnaryOpsMatchReference) {
  const std::vector<UnaryCase> cases = {
      {Op::Neg, -3, 3, 0},        {Op::Abs, -3, 3, 0},      {Op::Exp, -10, 10, 1},
      {Op::Log, 1e-3, 50, 1},     {Op::Log1p, -0.9, 50, 1}, {Op::Sqrt, 0, 50, 0},
      {Op::Rsqrt, 1e-3, 50, 0},   {Op::Tanh, -6, 6, 1},     {Op::Sigmoid, -10, 10, 1},
      {Op::Relu, -3, 3, 0},       {Op::Sin, -6, 6, 1},      {Op::Cos, -6, 6, 1},
      {Op::Erf, -4, 4, 1},        {Op::Sign, -3, 3, 0},     {Op::Softplus, -30, 30, 1},
      {Op::Floor, -3, 3, 0},
      // Below -3, 1 + erf(x/√2) cancels in f32: the reference's own f32 value has few
      // correct digits there (f32 gelu(none) is within 2e-7 absolute, README.md).
      {Op::Gelu, -3, 6, 1, {{"approximate", std::string("none")}}},
      // Below -3 the kernel's x / (1 + exp(-2u)) keeps digits the reference's
      // 0.5·x·(1 + tanh(u)) cancels (README.md: a deliberate difference).
      {Op::Gelu, -3, 6, 1, {{"approximate", std::string("tanh")}}},
  };
  for (const UnaryCase& c : cases) {
    for (DType d : kHalves) {
      double worst = 0;
      for (const Shape& s : kShapes) {
        SCOPED_TRACE(std::string(op_name(c.op)) + " " + (Type{d, s}).to_string());
        for (uint64_t seed : {1, 2, 3}) {
          worst = std::max(worst, expect_random_half_matches(op_body(c.op, {{d, s}}, c.attrs),
                                                             c.ulps, c.lo, c.hi, seed));
        }
      }
      std::string name(op_name(c.op));
      if (c.op == Op::Gelu) name += "(" + std::get<std::string>(c.attrs.at("approximate")) + ")";
      report(name + " " + std::string(dtype_name(d)), worst);
    }
  }
}

TEST(KernelHalf, FloatBinaryOpsComparesAndSelectMatchReference) {
  const std::vector<std::vector<Shape>> broadcasts = {
      {{37}, {37}}, {{4, 19}, {19}}, {{4, 1}, {1, 5}}, {{3, 5, 33}, {5, 1}}, {{}, {4, 19}}};
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Maximum, Op::Minimum, Op::Eq,
                Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge}) {
    for (DType d : kHalves) {
      for (const auto& shapes : broadcasts) {
        const bool compare = op_info(op).math == MathClass::Comparison;
        Graph body = op_body(op, {{d, shapes[0]}, {d, shapes[1]}}, {},
                             compare ? std::optional(DType::boolean) : std::nullopt);
        SCOPED_TRACE(kernel_key(body));
        // Integers in [-4, 4] half the time: equal operands for the compares.
        expect_random_half_matches(body, 0, op == Op::Pow ? 0.1 : -3, 3);
        expect_random_half_matches(body, 0, -4, 4, 7);
      }
    }
  }
  for (DType d : kHalves) {
    const Shape s{{3, 37}};
    Graph body = op_body(Op::Select, {{DType::boolean, s}, {d, s}, {d, Shape{{37}}}});
    SCOPED_TRACE(kernel_key(body));
    expect_random_half_matches(body, 0);
  }
}

TEST(KernelHalf, NaNAndInfinityPropagateAsInTheReference) {
  for (DType d : kHalves) {
    std::vector<double> xs, ys;
    const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -2.5, 65504.0};
    for (double x : specials) {
      for (double y : specials) {
        xs.push_back(x);
        ys.push_back(y);
      }
    }
    const Shape n{{static_cast<int64_t>(xs.size())}};
    for (Op op : {Op::Add, Op::Mul, Op::Div, Op::Maximum, Op::Minimum, Op::Lt, Op::Eq}) {
      const bool compare = op_info(op).math == MathClass::Comparison;
      Graph body = op_body(op, {{d, n}, {d, n}}, {},
                           compare ? std::optional(DType::boolean) : std::nullopt);
      SCOPED_TRACE(kernel_key(body));
      expect_half_matches_reference(
          body, {Tensor::from_doubles(d, n, xs), Tensor::from_doubles(d, n, ys)}, 0);
    }
    for (Op op : {Op::Relu, Op::Sign, Op::Exp, Op::Sqrt, Op::Tanh}) {
      Graph body = op_body(op, {{d, n}});
      SCOPED_TRACE(kernel_key(body));
      const bool approximated = op == Op::Exp || op == Op::Tanh;
      expect_half_matches_reference(body, {Tensor::from_doubles(d, n, xs)}, approximated ? 1 : 0);
    }
  }
}

// The op table's half rule (ir/op.h, HalfRule) in generated code as in the reference:
// select (Follow) keeps a signaling NaN's bits, add and maximum (Widen) compute on f32
// and round, which quiets it.
TEST(KernelHalf, HalfRuleRoundsWidenedOpsAndNotSelect) {
  const std::vector<uint16_t> bits = {0x7f81, 0xff81, 0x7fc1, 0x3f80, 0x0001, 0x8000};
  const Shape n{{static_cast<int64_t>(bits.size())}};
  const Tensor x = from_bits(DType::bf16, bits);
  const Tensor zero = Tensor::from_doubles(DType::bf16, n, std::vector<double>(bits.size(), 0.0));
  const Tensor all = Tensor::from_vector<bool>(n, std::vector<bool>(bits.size(), true));
  Graph select = op_body(Op::Select, {{DType::boolean, n}, {DType::bf16, n}, {DType::bf16, n}});
  std::vector<Tensor> picked = {all, x, zero};
  EXPECT_EQ(testing::run_kernel(select, picked).at(0).data<uint16_t>()[0], 0x7f81);
  expect_same_bits(select, picked);
  Graph add = op_body(Op::Add, {{DType::bf16, n}, {DType::bf16, n}});
  std::vector<Tensor> added = {x, zero};
  EXPECT_EQ(testing::run_kernel(add, added).at(0).data<uint16_t>()[0], 0x7fc1);
  expect_same_bits(add, added);
}

// A widening cast of a half value sets the quiet bit of its NaN lanes (as the
// reference's conversion through f64 does) only where that can show: in an output, or
// read by an op that passes a NaN through (maximum compares and selects). Read only by
// add/sub/mul/div or a sum or mean, which return any NaN operand quiet, it emits no
// quieting; every body still matches the reference bit for bit, signaling NaNs included.
TEST(KernelHalf, WideningCastsQuietNaNsOnlyWhereItShows) {
  const std::vector<uint16_t> bits = {0x7f81, 0xff81, 0x7fc1, 0x3f80, 0x0001, 0x8000, 0xc040};
  const std::string n = std::to_string(bits.size());
  const Tensor x = from_bits(DType::bf16, bits);
  const Tensor y = Tensor::from_doubles(DType::f32, Shape{{static_cast<int64_t>(bits.size())}},
                                        std::vector<double>(bits.size(), 0.5));
  struct Case {
    std::string text;
    bool quiets;
  };
  const std::vector<Case> cases = {
      {"graph @k(%x: bf16[" + n + "], %y: f32[" + n + "]) -> (f32[" + n + "]) {\n"
       "  %w = cast(%x) {dtype=f32} : f32[" + n + "]\n  %p = mul(%w, %y) : f32[" + n + "]\n"
       "  %q = sub(%p, %w) : f32[" + n + "]\n  return %q\n}",
       false},
      {"graph @k(%x: bf16[" + n + "], %y: f32[" + n + "]) -> (f32[" + n + "], f32[1]) {\n"
       "  %w = cast(%x) {dtype=f32} : f32[" + n + "]\n  %p = mul(%w, %y) : f32[" + n + "]\n"
       "  %s = mean(%w) {axes=[0], keepdims=true} : f32[1]\n  return %p, %s\n}",
       false},
      {"graph @k(%x: bf16[" + n + "], %y: f32[" + n + "]) -> (f32[" + n + "], f32[" + n + "]) {\n"
       "  %w = cast(%x) {dtype=f32} : f32[" + n + "]\n  %p = mul(%w, %y) : f32[" + n + "]\n"
       "  return %w, %p\n}",
       true},
      {"graph @k(%x: bf16[" + n + "], %y: f32[" + n + "]) -> (f32[" + n + "]) {\n"
       "  %w = cast(%x) {dtype=f32} : f32[" + n + "]\n  %m = maximum(%w, %y) : f32[" + n + "]\n"
       "  return %m\n}",
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const Graph body = parse_typed(c.text);
    setenv("WEFT_JIT_DUMP", "1", /*overwrite=*/1);
    ::testing::internal::CaptureStderr();
    std::vector<Tensor> inputs = {x, y};
    std::vector<Tensor> got = testing::run_kernel(body, inputs);
    const std::string ir = ::testing::internal::GetCapturedStderr();
    unsetenv("WEFT_JIT_DUMP");
    ASSERT_FALSE(got.empty());
    // 4194304 = 0x400000, f32's quiet bit, in the optimized LLVM IR.
    EXPECT_EQ(ir.find("4194304") != std::string::npos, c.quiets);
    expect_same_bits(body, {x, y});
  }
}

// reduce(mul(a, b)) over `axes` in dtype `d`.
Graph mul_reduce(Op op, DType d, const Shape& a, const Shape& b, const std::vector<int64_t>& axes,
                 const Shape& out) {
  Graph g("k");
  const ValueId x = g.add_input("a", {d, a}), y = g.add_input("b", {d, b});
  const ValueId m = g.add_node(Op::Mul, {x, y}, {}, {}, Type{d, a});
  g.add_output(g.add_node(op, {m}, {{"axes", IntList(axes)}}, {}, Type{d, out}));
  return g;
}

TEST(KernelHalf, ReductionsAccumulateWideAndRoundOnceAtTheEnd) {
  struct Case {
    Shape a, b;
    std::vector<int64_t> axes;
    Shape out;
  };
  const std::vector<Case> cases = {
      {{64, 1000}, {1000}, {1}, {64}},          // Rows: vectors and a tail.
      {{7, 37}, {7, 37}, {-1}, {7}},
      {{128, 40}, {40}, {0}, {40}},             // Columns: blocks and leftover columns.
      {{4, 6, 7, 5}, {1, 6, 1, 1}, {0, 2, 3}, {6}},
      {{3, 4, 5}, {3, 4, 5}, {0, 1, 2}, {}}};
  for (Op op : {Op::Sum, Op::Mean, Op::Max, Op::Min}) {
    for (DType d : kHalves) {
      double worst = 0;
      for (const Case& c : cases) {
        Graph body = mul_reduce(op, d, c.a, c.b, c.axes, c.out);
        SCOPED_TRACE(kernel_key(body));
        // Sums may differ in the f64 accumulation order (the kernel adds 16 lanes):
        // a tie after the f32 rounding could round the other way.
        const double ulps = op == Op::Max || op == Op::Min ? 0 : 1;
        for (uint64_t seed : {1, 2}) {
          worst = std::max(worst, expect_random_half_matches(body, ulps, -3, 3, seed));
        }
      }
      report(std::string(op_name(op)) + " " + std::string(dtype_name(d)), worst);
    }
  }
}

// A mixed-precision step's bias gradient: a lone column sum of a bf16 gradient, which
// fuse-elementwise makes a kernel of one (the library would convert the whole operand to
// f32 first); keepdims as autodiff writes it, rows of the batch and a tail of columns.
TEST(KernelHalf, ALoneColumnSumOfAHalfGradient) {
  for (DType d : kHalves) {
    for (const Shape& s : {Shape{64, 512}, Shape{37, 70}}) {
      Graph g("k");
      const ValueId x = g.add_input("g", {d, s});
      g.add_output(g.add_node(Op::Sum, {x}, {{"axes", IntList({0})}, {"keepdims", true}}, {},
                              Type{d, {1, s[1]}}));
      SCOPED_TRACE(kernel_key(g));
      for (uint64_t seed : {1, 2}) expect_random_half_matches(g, 1, -3, 3, seed);
    }
  }
}

// A fused body as autocast writes it: an f32 activation cast to bf16 for the product,
// the product cast back to f32 for the residual add; both precisions are outputs.
TEST(KernelHalf, AFusedBodyMixesF32AndBf16) {
  for (const char* half : {"bf16", "f16"}) {
    std::string text = R"(graph @k(%x: f32[8,50], %w: H[50], %r: f32[8,50]) -> (f32[8,50], H[8,50], bool[8,50]) {
  %xh = cast(%x) {dtype=H} : H[8,50]
  %p = mul(%xh, %w) : H[8,50]
  %g = relu(%p) : H[8,50]
  %pf = cast(%g) {dtype=f32} : f32[8,50]
  %y = add(%pf, %r) : f32[8,50]
  %pos = gt(%p, %xh) : bool[8,50]
  return %y, %p, %pos
})";
    for (size_t at; (at = text.find('H')) != std::string::npos;) text.replace(at, 1, half);
    Graph body = parse_typed(text);
    SCOPED_TRACE(half);
    const double worst = expect_random_half_matches(body, 0);
    EXPECT_EQ(worst, 0);
  }
}

// `text` with every 'H' replaced by `half`.
std::string with_half(std::string text, const char* half) {
  for (size_t at; (at = text.find('H')) != std::string::npos;) text.replace(at, 1, half);
  return text;
}

Graph rounded_at_stores(const Graph& body, FusedKind kind) {
  StatusOr<Graph> out = round_body_at_stores(body, kind);
  EXPECT_TRUE(out.ok()) << out.error().to_string();
  return out.ok() ? std::move(*out) : Graph();
}

// (a + b) - a in bf16 with a = 1, b = 2^-8: rounded per op, 1 + 2^-8 is a tie that
// rounds to 1 and the difference is 0; rewritten by round-at-stores it is computed in
// f32 and the store keeps 2^-8 exactly. Kernel and reference agree bit for bit on both
// bodies, on random inputs too.
TEST(KernelHalf, RoundingAtStoresRoundsOnce) {
  Graph body = parse_typed(R"(graph @k(%a: bf16[40], %b: bf16[40]) -> (bf16[40]) {
  %s = add(%a, %b) : bf16[40]
  %d = sub(%s, %a) : bf16[40]
  return %d
})");
  Graph once = rounded_at_stores(body, FusedKind::elementwise);
  ASSERT_EQ(once.nodes().size(), 5u);  // two widening casts, add, sub, the store's cast
  const Shape n{{40}};
  std::vector<Tensor> in = {Tensor::from_doubles(DType::bf16, n, std::vector<double>(40, 1.0)),
                            Tensor::from_doubles(DType::bf16, n, std::vector<double>(40, 0x1p-8))};
  EXPECT_EQ(testing::run_kernel(body, in).at(0).get_double(7), 0.0);
  EXPECT_EQ(testing::run_kernel(once, in).at(0).get_double(7), 0x1p-8);
  expect_same_bits(body, in);
  expect_same_bits(once, in);
  EXPECT_EQ(expect_random_half_matches(once, 0), 0);
}

// The CPU lowering runs round-at-stores (LowerOptions::round_half_at_stores, on by
// default): the fused (1 + 2^-8) - 1 of RoundingAtStoresRoundsOnce gives 2^-8 through the
// whole backend; turned off, every op rounds as the unfused graph does (the reference: 0).
TEST(KernelHalf, TheCpuLoweringRoundsAtStoresUnlessTurnedOff) {
  Graph g = parse_typed(R"(graph @f(%a: bf16[40], %b: bf16[40]) -> (bf16[40]) {
  %s = add(%a, %b) : bf16[40]
  %d = sub(%s, %a) : bf16[40]
  return %d
})");
  const Shape n{{40}};
  const std::vector<Tensor> in = {Tensor::from_doubles(DType::bf16, n, std::vector<double>(40, 1.0)),
                                  Tensor::from_doubles(DType::bf16, n, std::vector<double>(40, 0x1p-8))};
  StatusOr<reference::RunResult> per_op = reference::run(g, in);
  ASSERT_TRUE(per_op.ok()) << per_op.error().to_string();
  EXPECT_EQ(per_op->outputs.at(0).get_double(3), 0.0);
  StatusOr<reference::RunResult> once = run_on_cpu(g, in);
  ASSERT_TRUE(once.ok()) << once.error().to_string();
  EXPECT_EQ(once->outputs.at(0).get_double(3), 0x1p-8);
  CpuOptions off;
  off.lower.round_half_at_stores = false;
  StatusOr<reference::RunResult> rounded = run_on_cpu(g, in, off);
  ASSERT_TRUE(rounded.ok()) << rounded.error().to_string();
  EXPECT_EQ(rounded->outputs.at(0).get_double(3), 0.0);
}

// An elementwise chain whose f32 math is exact: a narrowing cast, a select, a cast back.
constexpr const char* kExactChain = R"(graph @k(%x: f32[8,50], %w: H[50], %c: bool[8,50]) -> (H[8,50], f32[8,50]) {
  %xh = cast(%x) {dtype=H} : H[8,50]
  %p = mul(%xh, %w) : H[8,50]
  %q = sub(%p, %w) : H[8,50]
  %s = select(%c, %q, %p) : H[8,50]
  %r = relu(%s) : H[8,50]
  %f = cast(%r) {dtype=f32} : f32[8,50]
  return %s, %f
})";

// A bias add, GELU and a product: the approximated math (f32 erf).
constexpr const char* kGeluChain = R"(graph @k(%x: H[4,19], %b: H[19]) -> (H[4,19]) {
  %h = add(%x, %b) : H[4,19]
  %g = gelu(%h) : H[4,19]
  %y = mul(%g, %h) : H[4,19]
  return %y
})";

// Bodies as round-at-stores leaves them, f16 and bf16, against the reference on the same
// bodies: exact f32 math bit for bit (a chain with a select and an explicit narrowing
// cast, a column sum over a widened chain), the approximated math (GELU, a softmax row)
// within one unit in the last place.
TEST(KernelHalf, BodiesRoundedAtStoresMatchReference) {
  const char* column_sum = R"(graph @k(%g: H[37,70], %h: H[37,70]) -> (H[70]) {
  %t0 = mul(%g, %h) : H[37,70]
  %t1 = add(%t0, %h) : H[37,70]
  %t2 = sum(%t1) {axes=[0]} : H[70]
  return %t2
})";
  const char* softmax = R"(graph @k(%x: H[7,37]) -> (H[7,37]) {
  %m = max(%x) {axes=[-1], keepdims=true} : H[7,1]
  %d = sub(%x, %m) : H[7,37]
  %e = exp(%d) : H[7,37]
  %s = sum(%e) {axes=[-1], keepdims=true} : H[7,1]
  %q = div(%e, %s) : H[7,37]
  return %q
})";
  struct Case {
    const char* text;
    FusedKind kind;
    double ulps;
    double lo = -3;  // GELU's sum of two inputs stays above -3, where its f32 value cancels
  };
  for (const Case& c : {Case{kExactChain, FusedKind::elementwise, 0}, Case{column_sum, FusedKind::reduction, 1},
                        Case{kGeluChain, FusedKind::elementwise, 1, -1.5}, Case{softmax, FusedKind::row, 1}}) {
    for (const char* half : {"bf16", "f16"}) {
      Graph body = rounded_at_stores(parse_typed(with_half(c.text, half)), c.kind);
      ASSERT_FALSE(rounds_half_intermediates(body, c.kind));
      SCOPED_TRACE(kernel_key(body));
      for (uint64_t seed : {1, 2}) {
        const double worst = expect_random_half_matches(body, c.ulps, c.lo, 3, seed);
        if (c.ulps == 0) {
          EXPECT_EQ(worst, 0);
        }
      }
    }
  }
}

// How far rounding at stores moves a chain from the per-op reference (the unfused graph's
// numbers, which tests/cuda's half cases compare the GPU with): abs, add 2^-6 and each
// unary op of those cases, inputs in their [-2, 2], within the cases' half tolerance
// (|a - b| <= tol·(1 + |b|), tol 8e-3 in bf16, 1e-3 in f16). exp and rsqrt come nearest:
// the argument's skipped rounding, up to half a unit in its last place, times the slope.
// The constant is a power of two so that abs(x) + c is exact below 1 and 2 (it rounds
// only at ties above them): with 0.01, a sum just below an integer rounded up to it per
// op, and floor's result moved by 1 (0.5 of the scale) where the kernel kept it in f32.
// The worst scaled distance is printed.
TEST(KernelHalf, RoundingAtStoresStaysWithinTheGpuCasesTolerance) {
  for (const char* half : {"bf16", "f16"}) {
    const double tol = std::string(half) == "bf16" ? 8e-3 : 1e-3;
    for (const char* op : {"neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid",
                           "relu", "sin", "cos", "erf", "sign", "floor"}) {
      Graph per_op = parse_typed(with_half(std::string(R"(graph @k(%x: H[64,37], %c: H[]) -> (H[64,37]) {
  %a = abs(%x) : H[64,37]
  %p = add(%a, %c) : H[64,37]
  %y = )") + op + R"((%p) : H[64,37]
  return %y
})", half));
      Graph once = rounded_at_stores(per_op, FusedKind::elementwise);
      SCOPED_TRACE(kernel_key(once));
      double worst = 0;
      for (uint64_t seed : {1, 2, 3}) {
        std::vector<Tensor> in = testing::random_body_inputs(per_op, -2, 2, seed);
        in[1] = Tensor::from_doubles(in[1].dtype(), Shape{}, {0x1p-6});
        std::vector<Tensor> got = testing::run_kernel(once, in);
        StatusOr<reference::RunResult> want = reference::run(per_op, in);
        ASSERT_TRUE(want.ok() && got.size() == 1) << want.error().to_string();
        std::string why;
        EXPECT_TRUE(all_close(got[0], want->outputs[0], tol, &why)) << why;
        for (int64_t i = 0; i < got[0].numel(); ++i) {
          const double g = got[0].get_double(i), w = want->outputs[0].get_double(i);
          worst = std::max(worst, std::abs(g - w) / (1 + std::abs(w)));
        }
      }
      std::printf("  rounded at stores vs per op  %-8s %-5s %.3g of tol %.0e\n", op, half, worst, tol);
    }
  }
}

// The GPU kernels' code (emit_host_scalar_kernel: one thread per element or vector, the
// host's ABI) on bodies rewritten by round-at-stores, against the reference on the same
// bodies: the exact chain bit for bit, GELU's within one unit in the last place.
TEST(KernelHalf, GpuKernelsRoundAtStoresAsTheReferenceDoesOnTheHost) {
  Jit jit;
  for (const char* half : {"bf16", "f16"}) {
    for (const auto& [text, ulps, lo] : {std::tuple{kExactChain, 0.0, -3.0}, std::tuple{kGeluChain, 1.0, -1.5}}) {
      Graph body = rounded_at_stores(parse_typed(with_half(text, half)), FusedKind::elementwise);
      SCOPED_TRACE(kernel_key(body));
      std::vector<Tensor> inputs = testing::random_body_inputs(body, lo, 3, 11);
      StatusOr<std::vector<Tensor>> got = testing::run_gpu_kernel_on_host(jit, body, inputs);
      ASSERT_TRUE(got.ok()) << got.error().to_string();
      StatusOr<reference::RunResult> want = reference::run(body, inputs);
      ASSERT_TRUE(want.ok()) << want.error().to_string();
      for (size_t o = 0; o < got->size(); ++o) {
        EXPECT_LE(testing::max_half_ulps((*got)[o], want->outputs[o]), ulps) << "output " << o;
      }
    }
  }
}

}  // namespace
}  // namespace weft::codegen
