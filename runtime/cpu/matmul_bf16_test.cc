// The bf16 matmul's weight operand (runtime/cpu/matmul_onednn.cc): a weight given
// pre-packed in oneDNN's blocked layout (packed_weight.h) and the split of a call into
// column parts where rows are few (bf16_split), each against the plain kernel bit for bit,
// with the layout checked against oneDNN's own choice. half_test checks the kernels
// against the reference interpreter.

#include <dnnl.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/cpu/contraction_internal.h"
#include "runtime/cpu/kernel_testing.h"

namespace weft::cpu {
namespace {
namespace matmul_bf16_test {  // this file's names, apart in its package's unity test

Tensor rnd(DType dtype, Shape shape, unsigned seed) {
  return testing::random_tensor(Type{dtype, std::move(shape)}, seed, -1, 1);
}

// ---- A weight given pre-packed (packed_weight.h) ----

struct MatmulCase {
  Shape a, b;
  bool ta = false, tb = false;
  DType result = DType::bf16;
};

LibraryCall matmul_call(const MatmulCase& c) {
  LibraryCall call;
  call.node.op = Op::Matmul;
  if (c.ta) call.node.attrs["transpose_a"] = true;
  if (c.tb) call.node.attrs["transpose_b"] = true;
  call.operand_types = {{DType::bf16, c.a}, {DType::bf16, c.b}};
  const Shape& a = c.a;
  Shape result = a;
  result.dims.back() = c.tb ? c.b[c.b.rank() - 2] : c.b[c.b.rank() - 1];
  if (c.ta) result.dims[a.rank() - 2] = a[a.rank() - 1];
  call.result_type = {c.result, result};
  return call;
}

// The weight GEMMs of the suite's mlp (784-512-512-512-10, batch 64, in row parts of 32)
// and residual_tower, both orientations: x·Wᵀ (B = Wᵀ) and dY·W (B = W).
std::vector<MatmulCase> packed_cases() {
  return {
      {{64, 784}, {512, 784}, false, true},  {{64, 512}, {512, 784}},
      {{64, 512}, {512, 512}, false, true},  {{64, 512}, {512, 512}},
      {{64, 512}, {10, 512}, false, true},   {{64, 10}, {10, 512}},
      {{64, 256}, {256, 256}, false, true},  {{3, 7, 130}, {50, 130}, false, true},
      {{130, 7}, {130, 50}, true, false},    {{64, 512}, {512, 10}, false, false, DType::f32},
  };
}

// The layout packed_weight.h spells out is the one oneDNN's bf16 brgemm picks for
// format_tag::any, and pack_weight writes what oneDNN's own reorder into it writes.
TEST(PackedWeightTest, IsOnednnsChoice) {
  if (!native_bf16()) GTEST_SKIP() << "no AVX512_BF16: oneDNN's bf16 matmul picks another kernel";
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const MatmulCase& c : packed_cases()) {
    SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
    const std::optional<PackedWeightLayout> layout = packed_weight_layout(matmul_call(c));
    ASSERT_TRUE(layout.has_value());
    const int64_t m = 32, k = layout->k, n = layout->n;
    const memory::desc a({m, k}, memory::data_type::bf16, memory::dims{k, 1});
    const memory::desc any({k, n}, memory::data_type::bf16, memory::format_tag::any);
    const memory::desc out({m, n}, memory::data_type::bf16, memory::dims{n, 1});
    const dnnl::matmul::primitive_desc pd({a, any, out}, engine);
    const memory::desc packed({k, n}, memory::data_type::bf16, memory::format_tag::BA16a64b2a);
    EXPECT_TRUE(pd.weights_desc() == packed) << pd.impl_info_str();
    ASSERT_EQ(static_cast<int64_t>(packed.get_size()), 2 * layout->elements());

    const Tensor b = rnd(DType::bf16, {c.tb ? n : k, c.tb ? k : n}, 31);
    const auto* bits = static_cast<const uint16_t*>(b.raw_data());
    const memory::desc plain({k, n}, memory::data_type::bf16,
                             c.tb ? memory::dims{1, k} : memory::dims{n, 1});
    std::vector<uint16_t> theirs(layout->elements(), 0xffff), ours(layout->elements(), 0xffff);
    memory from(plain, engine, const_cast<uint16_t*>(bits)), to(packed, engine, theirs.data());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
    pack_weight(bits, c.tb, c.tb ? k : n, *layout, ours.data());
    EXPECT_TRUE(ours == theirs);
  }
}

// The GEMM reading B pre-packed computes the same bits as reading it plain (oneDNN packs
// a plain B into the same layout and runs the same kernel), on 1 and 2 threads.
TEST(HalfMatmulTest, PrePackedWeightGivesTheSameBits) {
  if (!native_bf16()) GTEST_SKIP() << "no AVX512_BF16: nothing reads a packed weight";
  unsigned seed = 40;
  for (const MatmulCase& c : packed_cases()) {
    SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
    const LibraryCall call = matmul_call(c);
    const PackedWeightLayout layout = *packed_weight_layout(call);
    const Tensor a = rnd(DType::bf16, c.a, seed), b = rnd(DType::bf16, c.b, seed + 1);
    seed += 2;
    std::vector<uint16_t> packed(layout.elements());
    pack_weight(static_cast<const uint16_t*>(b.raw_data()), c.tb, c.b[c.b.rank() - 1], layout,
                packed.data());
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      Tensor plain(call.result_type), prepacked(call.result_type);
      auto k1 = make_onednn_matmul_kernel(call, {a.raw_data(), b.raw_data()}, plain.raw_data());
      auto k2 = make_onednn_matmul_kernel(call, {a.raw_data(), packed.data()}, prepacked.raw_data(),
                                          /*b_packed=*/true);
      ASSERT_TRUE(k1.ok() && *k1 && k2.ok() && *k2) << k2.status().to_string();
      ASSERT_TRUE((*k1)->run(pool).ok());
      ASSERT_TRUE((*k2)->run(pool).ok());
      EXPECT_TRUE(prepacked == plain) << (*k2)->describe();
      EXPECT_NE((*k2)->describe().find("brg:avx512_core_bf16"), std::string::npos) << (*k2)->describe();
      EXPECT_NE((*k2)->describe().find("(B pre-packed)"), std::string::npos) << (*k2)->describe();
      EXPECT_EQ((*k1)->describe().find("(B pre-packed)"), std::string::npos) << (*k1)->describe();
    }
  }
}

// Nothing but oneDNN's bf16 brgemm reads a packed weight, so a call it cannot run is an
// error, not the f32 fallback (which would read the packed bytes as a plain B).
TEST(HalfMatmulTest, PrePackedWeightRefusedWhereNothingReadsIt) {
  const std::string message =
      "matmul: a pre-packed bf16 weight needs oneDNN's bf16 brgemm matmul (bf16 operands, one 2-D "
      "weight for the whole batch, a CPU with AVX512_BF16); this call has none: store its "
      "weight plain";
  std::vector<uint16_t> a(3 * 7 * 13), b(4096), c(3 * 7 * 5);
  const auto refused = [&](const LibraryCall& call) {
    EXPECT_FALSE(packed_weight_layout(call).has_value());
    auto k = make_onednn_matmul_kernel(call, {a.data(), b.data()}, c.data(), /*b_packed=*/true);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.error().message, message);
  };
  refused(matmul_call({{3, 7, 13}, {3, 13, 5}}));  // a weight per batch entry
  refused(matmul_call({{7, 0}, {0, 5}}));           // an empty product
  force_bf16_conversion_for_testing(true);          // a CPU without AVX512_BF16
  refused(matmul_call({{7, 13}, {13, 5}}));
  force_bf16_conversion_for_testing(false);
}

// ---- The split of C over the kernel's parts (bf16_split) ----

// Sets WEFT_BF16_SPLIT for its lifetime (unset when `value` is null), then unsets it.
class ScopedSplitEnv {
 public:
  explicit ScopedSplitEnv(const char* value) {
    if (value != nullptr) setenv("WEFT_BF16_SPLIT", value, /*overwrite=*/1);
    else unsetenv("WEFT_BF16_SPLIT");
  }
  ~ScopedSplitEnv() { unsetenv("WEFT_BF16_SPLIT"); }
};

// The training GEMMs of the suite's mlp, residual_tower and transformer (the cpu preset;
// runtime/cpu:half_bench --splits), a transposed A copied dense (K <= 128) and read in
// place, K and N that are not multiples of the packed layout's blocks (K padded to 32, N
// to 64), a batch, and an f32 result.
std::vector<MatmulCase> split_cases() {
  return {
      {{64, 784}, {512, 784}, false, true},  {{64, 512}, {512, 784}},
      {{64, 512}, {512, 512}, false, true},  {{64, 256}, {256, 256}},
      {{64, 512}, {64, 784}, true, false},   {{64, 256}, {64, 256}, true, false},
      {{512, 128}, {384, 128}, false, true}, {{512, 128}, {128, 512}},
      {{512, 128}, {512, 128}, true, false}, {{512, 384}, {512, 128}, true, false},
      {{70, 33}, {70, 200}, true, false},    {{37, 45}, {200, 45}, false, true},
      {{5, 77}, {77, 130}},                  {{3, 7, 130}, {3, 130, 150}},
      {{64, 512}, {512, 10}, false, false, DType::f32}, {{64, 99}, {99, 300}, false, false, DType::f32},
  };
}

// Each element of C is one primitive call's dot product over K in the same order, whether
// its part holds a block of rows or a block of columns: the two splits give the same
// bits, with B plain or pre-packed, on 1 and 2 threads.
TEST(HalfMatmulSplitTest, ColumnsGiveTheSameBitsAsRows) {
  if (!native_bf16()) GTEST_SKIP() << "no AVX512_BF16: bf16 matmuls run through f32";
  unsigned seed = 60;
  for (const MatmulCase& c : split_cases()) {
    SCOPED_TRACE(c.a.to_string() + (c.ta ? "^T" : "") + " x " + c.b.to_string() + (c.tb ? "^T" : ""));
    const LibraryCall call = matmul_call(c);
    const Tensor a = rnd(DType::bf16, c.a, seed), b = rnd(DType::bf16, c.b, seed + 1);
    seed += 2;
    const std::optional<PackedWeightLayout> layout = packed_weight_layout(call);
    std::vector<uint16_t> packed(layout ? layout->elements() : 0);
    if (layout) {
      pack_weight(static_cast<const uint16_t*>(b.raw_data()), c.tb, c.b[c.b.rank() - 1], *layout,
                  packed.data());
    }
    for (bool b_packed : {false, true}) {
      if (b_packed && !layout) continue;
      const void* b_data = b_packed ? packed.data() : b.raw_data();
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(threads) + " threads" + (b_packed ? ", B pre-packed" : ""));
        ThreadPool pool(threads);
        Tensor by_rows(call.result_type), by_columns(call.result_type);
        const auto run = [&](const char* split, Tensor& out) {
          ScopedSplitEnv env(split);
          auto k = make_onednn_matmul_kernel(call, {a.raw_data(), b_data}, out.raw_data(), b_packed);
          if (!k.ok() || !*k) return std::string("no kernel: ") + k.status().to_string();
          EXPECT_TRUE((*k)->run(pool).ok());
          return (*k)->describe();
        };
        const std::string rows = run("rows", by_rows), columns = run("columns", by_columns);
        if (b_packed && c.ta && c.a.dims.front() > 128) {
          // A transposed A read in place keeps its rows, where brgemm declines it, and only
          // brgemm reads a packed B: no kernel either way.
          EXPECT_EQ(rows.rfind("no kernel", 0), 0u) << rows;
          EXPECT_EQ(columns.rfind("no kernel", 0), 0u) << columns;
          continue;
        }
        EXPECT_EQ(rows.find("(columns split)"), std::string::npos) << rows;
        // Never cut by columns: a C of one 64-column block, a transposed A read in place.
        const bool keeps_rows = call.result_type.shape.dims.back() <= PackedWeightLayout::kColumnBlock ||
                                (c.ta && c.a.dims.front() > 128);
        EXPECT_EQ(columns.find("(columns split)") == std::string::npos, keeps_rows) << columns;
        if (!keeps_rows) {
          EXPECT_NE(columns.find("brg:avx512_core_bf16"), std::string::npos) << columns;
        }
        EXPECT_TRUE(by_columns == by_rows) << rows << " vs " << columns;
      }
    }
  }
}

// A plan of `batch` GEMMs [m, k] x [k, n] sharing B; `b` says how B is given.
enum class BGiven { kPlain, kTransposed, kPrePacked };
GemmPlan split_plan(int64_t batch, int64_t m, int64_t n, int64_t k, BGiven b,
                    bool trans_a = false) {
  GemmPlan plan = GemmPlan::single(m, n, k, trans_a, /*trans_b=*/b == BGiven::kTransposed);
  plan.b_packed = b == BGiven::kPrePacked;
  plan.a_offsets.assign(batch, 0);
  plan.b_offsets.assign(batch, 0);
  return plan;
}

// The rule: columns where rows are few (a single GEMM of at most 128 rows, or a batch of
// fewer entries than parts), C has a 64-column block per part, and each part can read
// its block of B in place (B transposed or pre-packed). WEFT_BF16_SPLIT overrides it,
// except for a C of one 64-column block or a transposed A read in place (K > 128).
TEST(HalfMatmulSplitTest, RuleAndOverride) {
  constexpr auto kRows = Bf16Split::kRows, kColumns = Bf16Split::kColumns;
  constexpr auto kPlain = BGiven::kPlain, kT = BGiven::kTransposed, kPacked = BGiven::kPrePacked;
  const auto rule = [](const GemmPlan& plan, int parts) {
    return bf16_split(plan, parts, std::nullopt);
  };
  EXPECT_EQ(rule(split_plan(1, 64, 512, 784, kT), 2), kColumns);        // mlp's x·Wᵀ
  EXPECT_EQ(rule(split_plan(1, 64, 512, 784, kPacked), 2), kColumns);
  EXPECT_EQ(rule(split_plan(1, 64, 784, 512, kPlain), 2), kRows);       // its dY·W
  EXPECT_EQ(rule(split_plan(1, 128, 256, 64, kT), 2), kColumns);
  EXPECT_EQ(rule(split_plan(1, 64, 256, 64, kT), 4), kColumns);
  EXPECT_EQ(rule(split_plan(1, 64, 255, 64, kT), 4), kRows);            // too narrow
  EXPECT_EQ(rule(split_plan(1, 129, 512, 64, kT), 2), kRows);           // rows enough
  EXPECT_EQ(rule(split_plan(1, 512, 512, 128, kT), 2), kRows);
  EXPECT_EQ(rule(split_plan(3, 64, 512, 64, kT), 4), kColumns);
  EXPECT_EQ(rule(split_plan(32, 64, 512, 64, kT), 2), kRows);
  EXPECT_EQ(rule(split_plan(1, 64, 512, 128, kT, /*trans_a=*/true), 2), kColumns);
  EXPECT_EQ(rule(split_plan(1, 64, 512, 128, kPlain, /*trans_a=*/true), 2), kRows);
  EXPECT_EQ(bf16_split(split_plan(1, 512, 512, 128, kPlain), 2, kColumns), kColumns);
  EXPECT_EQ(bf16_split(split_plan(1, 64, 512, 784, kT), 2, kRows), kRows);
  EXPECT_EQ(bf16_split(split_plan(1, 512, 64, 128, kT), 2, kColumns), kRows);  // one block
  EXPECT_EQ(bf16_split(split_plan(1, 64, 512, 129, kT, /*trans_a=*/true), 2, kColumns), kRows);
  EXPECT_EQ(bf16_split(split_plan(3, 64, 512, 512, kT, /*trans_a=*/true), 2, kColumns), kColumns);

  for (const char* value : {static_cast<const char*>(""), static_cast<const char*>(nullptr)}) {
    ScopedSplitEnv env(value);
    auto forced = bf16_split_from_env();
    ASSERT_TRUE(forced.ok());
    EXPECT_FALSE(forced->has_value());
  }
  {
    ScopedSplitEnv env("rows");
    EXPECT_EQ(bf16_split_from_env().value(), kRows);
  }
  {
    ScopedSplitEnv env("columns");
    EXPECT_EQ(bf16_split_from_env().value(), kColumns);
  }
}

// With WEFT_BF16_SPLIT unset, the rule cuts mlp's forward x·Wᵀ (64 rows) by columns and
// its input gradient dY·W (a plain B) by rows.
TEST(HalfMatmulSplitTest, TheRuleDecidesWhenTheSwitchIsUnset) {
  if (!native_bf16()) GTEST_SKIP() << "no AVX512_BF16: bf16 matmuls run through f32";
  ScopedSplitEnv env(nullptr);
  std::vector<uint16_t> a(64 * 784), b(784 * 512), c(64 * 784);
  const auto describe = [&](const MatmulCase& mc) {
    auto k = make_onednn_matmul_kernel(matmul_call(mc), {a.data(), b.data()}, c.data());
    return k.ok() && *k ? (*k)->describe() : "no kernel";
  };
  const std::string forward = describe({{64, 784}, {512, 784}, false, true});
  const std::string backward = describe({{64, 512}, {512, 784}});
  EXPECT_NE(forward.find("(columns split)"), std::string::npos) << forward;
  EXPECT_EQ(backward.find("(columns split)"), std::string::npos) << backward;
}

TEST(HalfMatmulSplitTest, UnknownSwitchValueIsAnError) {
  if (!native_bf16()) GTEST_SKIP() << "no AVX512_BF16: the switch is not read";
  ScopedSplitEnv env("cols");
  const std::string message =
      "WEFT_BF16_SPLIT=cols: expected rows or columns (or unset, for the rule that chooses "
      "per GEMM)";
  EXPECT_EQ(bf16_split_from_env().error().message, message);
  std::vector<uint16_t> a(64 * 256), b(256 * 256), c(64 * 256);
  auto k = make_onednn_matmul_kernel(matmul_call({{64, 256}, {256, 256}}), {a.data(), b.data()},
                                     c.data());
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().message, message);
}

}  // namespace matmul_bf16_test
}  // namespace
}  // namespace weft::cpu
