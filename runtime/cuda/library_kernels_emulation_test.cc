// The CUDA library's kernels (library_kernels_device.inc) run on the host without a GPU,
// each CUDA thread a fiber (cuda_emulation.h), on the grids their launches use
// (library_kernels.cu) and on smaller ones that make the grid-stride loops go round:
// cross_entropy (16-byte loads through lane_share: rows of every length modulo the vector
// width, rows starting off a 16-byte boundary, one-element rows, 4096 classes; f32 and
// f64; NaN, -inf and large logits; the mean, sum and none reductions; a label out of
// range), mse, the elementwise math, and the Philox random ops against the reference
// interpreter; the strided copy, gather, scatter_add and one_hot against loops written
// here. It checks the kernels' arithmetic, indexing and barriers as written, not nvcc's
// code nor the memory model (vector_check.sh and executor_test run them on a GPU).
#define WEFT_CUDA_EMULATION_STATIC_SHARED  // block_sum's `__shared__ double part[kThreads]`
#include "runtime/cuda/cuda_emulation.h"   // first: CUDA's built-ins for the kernels' source
#include "runtime/cuda/library_kernels_device.inc"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/cuda/test_util.h"
#include "runtime/tensor.h"

namespace weft::cuda {
namespace {

using emulation::run_grid;
using test_util::random_tensor;
using test_util::reference_node;

/// The blocks library_kernels.cu launches for `n` threads' worth of work.
unsigned launch_blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535));
}

/// `count` elements of T starting `offset` elements past a 16-byte boundary.
template <typename T>
class Placed {
 public:
  Placed(int64_t count, int64_t offset) : storage_(static_cast<size_t>(count + offset) + 16 / sizeof(T)) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(storage_.data());
    data_ = storage_.data() + ((16 - base % 16) % 16) / sizeof(T) + offset;
  }
  T* data() { return data_; }

 private:
  std::vector<T> storage_;
  T* data_ = nullptr;
};

template <typename T>
DType dtype_of() {
  return sizeof(T) == 8 ? DType::f64 : DType::f32;
}

/// Within `relative` of the larger magnitude (NaN where the reference has NaN).
void expect_near(double got, double want, double relative, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": " << got << ", want NaN";
    return;
  }
  EXPECT_LE(std::abs(got - want), relative * std::max({std::abs(want), std::abs(got), 1e-30}))
      << what << ": " << got << ", want " << want;
}

template <typename T>
double tolerance() {
  return sizeof(T) == 8 ? 1e-13 : 2e-7;
}

Node reduction_node(Op op, const std::string& reduction) {
  Node n;
  n.op = op;
  n.attrs["reduction"] = reduction;
  return n;
}

// ---- cross_entropy -----------------------------------------------------------------

struct CrossEntropyCase {
  int64_t n, c;
  int64_t offset;   ///< Elements from a 16-byte boundary to the first row.
  unsigned blocks;  ///< 0: the launch's.
  /// Rows 0 to 2 made special: a NaN in row 0; every class but the label -inf in row 1;
  /// row 2 shifted by 1000 (exp overflows without the max subtracted).
  bool special = false;
};

/// cross_entropy_rows, then sum_doubles for the mean and the sum, as
/// launch_cross_entropy runs them, against the reference interpreter in every mode.
template <typename T>
void check_cross_entropy(const CrossEntropyCase& k) {
  SCOPED_TRACE("n " + std::to_string(k.n) + " c " + std::to_string(k.c) + " offset " +
               std::to_string(k.offset) + (sizeof(T) == 8 ? " f64" : " f32"));
  Tensor logits = random_tensor(Type{dtype_of<T>(), Shape{k.n, k.c}}, static_cast<uint32_t>(k.n * 31 + k.c));
  for (int64_t i = 0; i < logits.numel(); ++i) logits.set_double(i, 6 * logits.get_double(i));
  Tensor labels(Type{DType::i64, Shape{k.n}});
  for (int64_t r = 0; r < k.n; ++r) labels.data<int64_t>()[r] = (r * 7 + 3) % k.c;
  if (k.special) {
    logits.set_double(k.c / 2, std::nan(""));
    for (int64_t j = 0; j < k.c; ++j) {
      if (j != labels.data<int64_t>()[1]) logits.set_double(k.c + j, -INFINITY);
      logits.set_double(2 * k.c + j, logits.get_double(2 * k.c + j) + 1000);
    }
  }
  Placed<T> placed(k.n * k.c, k.offset);
  std::memcpy(placed.data(), logits.data<T>(), sizeof(T) * static_cast<size_t>(k.n * k.c));
  const unsigned blocks = k.blocks != 0 ? k.blocks : launch_blocks(k.n * 32);
  std::vector<double> row_loss(static_cast<size_t>(k.n), -1.0);
  std::vector<T> none(static_cast<size_t>(k.n), T(-1));
  DeviceError error;
  run_grid(blocks, kThreads, [&] {
    cross_entropy_rows<T>(placed.data(), labels.data<int64_t>(), kIndexI64, k.n, k.c, row_loss.data(),
                          none.data(), &error, /*invocation=*/3);
  });
  EXPECT_EQ(error.code, kNoError);
  const Tensor want_none = reference_node(reduction_node(Op::CrossEntropy, "none"), {logits, labels},
                                          Type{dtype_of<T>(), Shape{k.n}});
  for (int64_t r = 0; r < k.n; ++r) {
    expect_near(none[r], want_none.get_double(r), tolerance<T>(), "row " + std::to_string(r));
    expect_near(row_loss[r], want_none.get_double(r), tolerance<T>(), "row_loss " + std::to_string(r));
  }
  for (const char* mode : {"mean", "sum"}) {
    const double scale = std::string(mode) == "mean" ? 1.0 / static_cast<double>(k.n) : 1.0;
    T out = T(-1);
    run_grid(1, kThreads, [&] { sum_doubles<T>(row_loss.data(), k.n, scale, &out); });
    const Tensor want = reference_node(reduction_node(Op::CrossEntropy, mode), {logits, labels},
                                       Type{dtype_of<T>(), Shape{}});
    expect_near(out, want.get_double(0), tolerance<T>(), mode);
  }
}

TEST(LibraryKernelsEmulated, CrossEntropyMatchesTheReference) {
  const CrossEntropyCase cases[] = {
      // Row lengths around the vector widths (4 floats, 2 doubles), from an aligned start
      // and from every element offset: heads, whole vectors and tails.
      {3, 1, 0, 0}, {3, 1, 1, 0}, {4, 2, 0, 0}, {4, 3, 1, 0}, {3, 4, 0, 0}, {3, 5, 2, 0},
      {2, 7, 3, 0}, {2, 8, 1, 0}, {3, 31, 0, 0}, {3, 33, 1, 0}, {2, 129, 3, 0},
      // Past 32 vectors a row: each lane reads several (4096 classes: 1024 float4s).
      {3, 4096, 0, 0}, {2, 4099, 1, 0}, {2, 1001, 2, 0},
      // More rows than a block has warps, on the launch's grid and on one block (each warp
      // taking several rows).
      {70, 33, 0, 0}, {70, 33, 1, 1}, {9, 130, 3, 1},
      // NaN, -inf and large logits, on the vector path and past it.
      {3, 37, 1, 0, true}, {4, 4096, 0, 0, true},
  };
  for (const CrossEntropyCase& k : cases) {
    check_cross_entropy<float>(k);
    check_cross_entropy<double>(k);
  }
}

// A label out of range: the error records the invocation, the label and the row; the
// row's loss is 0, the other rows are computed. i32 labels.
TEST(LibraryKernelsEmulated, CrossEntropyReportsALabelOutOfRange) {
  const int64_t n = 4, c = 5;
  std::vector<float> logits(n * c);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 3);
  const int32_t labels[n] = {0, 7, 2, 4};
  std::vector<double> row_loss(n, -1.0);
  DeviceError error;
  run_grid(launch_blocks(n * 32), kThreads, [&] {
    cross_entropy_rows<float>(logits.data(), labels, kIndexI32, n, c, row_loss.data(), nullptr, &error,
                              /*invocation=*/11);
  });
  EXPECT_EQ(error.code, kLabelOutOfRange);
  EXPECT_EQ(error.invocation, 11);
  EXPECT_EQ(error.value, 7);
  EXPECT_EQ(error.position, 1);
  EXPECT_EQ(row_loss[1], 0.0);
  for (int64_t r : {0, 2, 3}) {
    const float* row = logits.data() + r * c;
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, double{row[j]});
    for (int64_t j = 0; j < c; ++j) sum += std::exp(row[j] - m);
    expect_near(row_loss[r], m + std::log(sum) - row[labels[r]], 1e-13, "row " + std::to_string(r));
  }
}

// ---- mse -------------------------------------------------------------------------------

/// squared_error's block partial sums, then sum_doubles, as launch_mse runs them (on
/// `blocks` blocks, or the launch's), against the reference interpreter.
template <typename T>
void check_mse(int64_t count, unsigned blocks) {
  SCOPED_TRACE("count " + std::to_string(count) + " blocks " + std::to_string(blocks));
  const Type type{dtype_of<T>(), Shape{count}};
  const Tensor a = random_tensor(type, 5), b = random_tensor(type, 6);
  // The launch's grid: these counts stay under its kMseBlocks (library_kernels.h).
  if (blocks == 0) blocks = launch_blocks(count);
  std::vector<double> partial(blocks, -1.0);
  std::vector<T> none(static_cast<size_t>(count), T(-1));
  run_grid(blocks, kThreads,
           [&] { squared_error<T>(a.data<T>(), b.data<T>(), count, nullptr, none.data()); });
  const Tensor want_none = reference_node(reduction_node(Op::Mse, "none"), {a, b}, type);
  for (int64_t e = 0; e < count; ++e) {
    expect_near(none[e], want_none.get_double(e), tolerance<T>(), "element " + std::to_string(e));
  }
  run_grid(blocks, kThreads, [&] { squared_error<T>(a.data<T>(), b.data<T>(), count, partial.data(), nullptr); });
  for (const char* mode : {"mean", "sum"}) {
    const double scale = std::string(mode) == "mean" ? 1.0 / static_cast<double>(count) : 1.0;
    T out = T(-1);
    run_grid(1, kThreads, [&] { sum_doubles<T>(partial.data(), blocks, scale, &out); });
    const Tensor want = reference_node(reduction_node(Op::Mse, mode), {a, b}, Type{dtype_of<T>(), Shape{}});
    expect_near(out, want.get_double(0), tolerance<T>(), mode);
  }
}

TEST(LibraryKernelsEmulated, MseMatchesTheReference) {
  for (const auto& [count, blocks] : std::vector<std::pair<int64_t, unsigned>>{{1, 0}, {300, 0}, {1000, 0}, {3001, 2}}) {
    check_mse<float>(count, blocks);
    check_mse<double>(count, blocks);
  }
}

// ---- elementwise -----------------------------------------------------------------------

/// The map of a contiguous [rows, cols] operand, or of a [cols] one broadcast over the rows.
StridedMap matrix_map(int64_t rows, int64_t cols, bool broadcast_rows) {
  StridedMap m;
  m.rank = 2;
  m.count = rows * cols;
  m.dims[0] = m.hi[0] = rows;
  m.dims[1] = m.hi[1] = cols;
  m.out_strides[0] = cols;
  m.out_strides[1] = 1;
  m.in_strides[0] = broadcast_rows ? 0 : cols;
  m.in_strides[1] = 1;
  return m;
}

struct MathCase {
  ElementwiseOp op;
  const char* name;
  double (*f)(double, double);
  bool positive;  ///< Operand a in (0, 2] (log).
};

template <typename T>
void check_elementwise(const MathCase& k) {
  SCOPED_TRACE(std::string(k.name) + (sizeof(T) == 8 ? " f64" : " f32"));
  const int64_t rows = 5, cols = 211;
  const Tensor ra = random_tensor(Type{dtype_of<T>(), Shape{rows, cols}}, 7);
  const Tensor rb = random_tensor(Type{dtype_of<T>(), Shape{cols}}, 8);
  std::vector<T> a(rows * cols), b(cols), out(rows * cols, T(-7));
  for (int64_t e = 0; e < rows * cols; ++e) a[e] = static_cast<T>(k.positive ? 1 + ra.get_double(e) : 3 * ra.get_double(e));
  for (int64_t j = 0; j < cols; ++j) b[j] = static_cast<T>(2 * rb.get_double(j));
  const StridedMap am = matrix_map(rows, cols, false), bm = matrix_map(rows, cols, true);
  run_grid(2, kThreads, [&] { elementwise<T>(k.op, a.data(), am, b.data(), bm, out.data(), rows * cols); });
  for (int64_t e = 0; e < rows * cols; ++e) {
    const double want = k.f(static_cast<double>(a[e]), static_cast<double>(b[e % cols]));
    const double tol = sizeof(T) == 8 ? 1e-14 : 1e-6;
    if (std::abs(want) < 1e-6) {
      EXPECT_LE(std::abs(out[e] - want), tol) << "element " << e;
    } else {
      expect_near(out[e], want, tol, "element " + std::to_string(e));
    }
  }
}

TEST(LibraryKernelsEmulated, ElementwiseMathMatchesLibm) {
  const MathCase cases[] = {
      {kPow, "pow", [](double a, double b) { return std::pow(a, b); }, true},
      {kExp, "exp", [](double a, double) { return std::exp(a); }, false},
      {kLog, "log", [](double a, double) { return std::log(a); }, true},
      {kLog1p, "log1p", [](double a, double) { return std::log1p(a); }, true},
      {kTanh, "tanh", [](double a, double) { return std::tanh(a); }, false},
      {kSin, "sin", [](double a, double) { return std::sin(a); }, false},
      {kCos, "cos", [](double a, double) { return std::cos(a); }, false},
      {kErf, "erf", [](double a, double) { return std::erf(a); }, false},
      {kSigmoid, "sigmoid", [](double a, double) { return 1 / (1 + std::exp(-a)); }, false},
  };
  for (const MathCase& k : cases) {
    check_elementwise<float>(k);
    check_elementwise<double>(k);
  }
}

// ---- random ----------------------------------------------------------------------------

TEST(LibraryKernelsEmulated, RandomOpsAreTheReferencesStreams) {
  Tensor key(Type{DType::i64, Shape{2}});
  key.data<int64_t>()[0] = 1234567;
  key.data<int64_t>()[1] = 89;
  const int64_t count = 700;
  Node uniform;
  uniform.op = Op::RandomUniform;
  uniform.attrs["shape"] = IntList{count};
  for (DType dtype : {DType::f32, DType::f64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    uniform.attrs["dtype"] = dtype;
    const Tensor want = reference_node(uniform, {key}, Type{dtype, Shape{count}});
    std::vector<double> got(count);
    if (dtype == DType::f32) {
      std::vector<float> out(count, -1.0f);
      run_grid(1, kThreads, [&] { random_uniform<float>(key.data<int64_t>(), out.data(), count); });
      std::copy(out.begin(), out.end(), got.begin());
    } else {
      run_grid(1, kThreads, [&] { random_uniform<double>(key.data<int64_t>(), got.data(), count); });
    }
    for (int64_t e = 0; e < count; ++e) ASSERT_EQ(got[e], want.get_double(e)) << "element " << e;
  }
  Node bernoulli;
  bernoulli.op = Op::RandomBernoulli;
  bernoulli.attrs["shape"] = IntList{count};
  bernoulli.attrs["p"] = 0.3;
  bernoulli.attrs["dtype"] = DType::f32;
  const Tensor want = reference_node(bernoulli, {key}, Type{DType::f32, Shape{count}});
  std::vector<uint32_t> bits(count, 7);
  const float one = 1.0f;
  uint32_t one_bits;
  std::memcpy(&one_bits, &one, sizeof(one));
  run_grid(2, kThreads, [&] { random_bernoulli<uint32_t>(key.data<int64_t>(), bits.data(), count, 0.3, one_bits); });
  for (int64_t e = 0; e < count; ++e) {
    float got;
    std::memcpy(&got, &bits[e], sizeof(got));
    ASSERT_EQ(got, want.get_double(e)) << "element " << e;
  }
}

// ---- movement and indexing ---------------------------------------------------------------

/// pad(transpose(in)): in [r, c] to out [c + 2, r + 1], row 0, row c + 1 and column r
/// the fill. One map, as a transpose and a pad make it.
template <typename W>
void check_strided_copy(int64_t r, int64_t c, unsigned blocks) {
  SCOPED_TRACE(std::to_string(sizeof(W)) + "-byte elements");
  std::vector<W> in(r * c);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<W>(i * 37 + 1);
  StridedMap m;
  m.rank = 2;
  m.dims[0] = c + 2;
  m.dims[1] = r + 1;
  m.count = (c + 2) * (r + 1);
  m.out_strides[0] = r + 1;
  m.out_strides[1] = 1;
  m.in_strides[0] = 1;
  m.in_strides[1] = c;
  m.lo[0] = 1;
  m.hi[0] = c + 1;
  m.lo[1] = 0;
  m.hi[1] = r;
  const W fill = static_cast<W>(0xA5);
  std::vector<W> out(m.count, W(3));
  run_grid(blocks, kThreads, [&] { strided_copy<W>(in.data(), out.data(), m, fill); });
  for (int64_t i = 0; i < c + 2; ++i) {
    for (int64_t j = 0; j < r + 1; ++j) {
      const W want = i >= 1 && i <= c && j < r ? in[j * c + (i - 1)] : fill;
      ASSERT_EQ(out[i * (r + 1) + j], want) << i << ", " << j;
    }
  }
}

TEST(LibraryKernelsEmulated, StridedCopyTransposesAndPads) {
  check_strided_copy<uint8_t>(5, 7, launch_blocks(8 * 6));
  check_strided_copy<uint16_t>(9, 4, 1);
  check_strided_copy<uint32_t>(37, 40, 2);  // 1,596 elements on 512 threads
  check_strided_copy<uint64_t>(3, 3, 1);
}

/// x [outer, dim, inner], idx [n] with a repeat and, with `bad`, one index out of range.
struct GatherCase {
  GatherGeometry g{.outer = 2, .dim = 5, .n = 6, .inner = 3};
  std::vector<int64_t> idx = {4, 0, 0, 2, 1, 4};
};

TEST(LibraryKernelsEmulated, GatherMatchesLoops) {
  for (bool bad : {false, true}) {
    SCOPED_TRACE(bad ? "an index out of range" : "in range");
    GatherCase k;
    if (bad) k.idx[3] = 5;
    const std::vector<int32_t> idx32(k.idx.begin(), k.idx.end());
    const GatherGeometry& g = k.g;
    std::vector<uint64_t> x(g.outer * g.dim * g.inner);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 1000 + i;
    std::vector<uint64_t> out(g.outer * g.n * g.inner, 9);
    DeviceError error;
    run_grid(1, kThreads, [&] { gather<uint64_t>(x.data(), idx32.data(), kIndexI32, out.data(), g, &error, 4); });
    for (int64_t o = 0; o < g.outer; ++o) {
      for (int64_t j = 0; j < g.n; ++j) {
        for (int64_t i = 0; i < g.inner; ++i) {
          const int64_t at = k.idx[j];
          const uint64_t want = at < g.dim ? x[(o * g.dim + at) * g.inner + i] : 0;
          ASSERT_EQ(out[(o * g.n + j) * g.inner + i], want) << o << ", " << j << ", " << i;
        }
      }
    }
    EXPECT_EQ(error.code, bad ? kIndexOutOfRange : kNoError);
    if (bad) {
      EXPECT_EQ(error.invocation, 4);
      EXPECT_EQ(error.value, 5);
      EXPECT_EQ(error.position, 3);
    }
  }
}

/// scatter_add over a repeated index (the atomics add both), values whose sums are exact
/// in any order.
template <typename T>
void check_scatter_add(bool bad) {
  SCOPED_TRACE(std::string(sizeof(T) == 8 ? "8" : "4") + "-byte " +
               (std::is_floating_point_v<T> ? "float" : "int") + (bad ? ", an index out of range" : ""));
  GatherCase k;
  if (bad) k.idx[1] = -1;
  const GatherGeometry& g = k.g;
  std::vector<T> src(g.outer * g.n * g.inner), out(g.outer * g.dim * g.inner), want;
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(static_cast<int>(i % 9) - 4);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(i);
  want = out;
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t j = 0; j < g.n; ++j) {
      if (k.idx[j] < 0) continue;
      for (int64_t i = 0; i < g.inner; ++i) want[(o * g.dim + k.idx[j]) * g.inner + i] += src[(o * g.n + j) * g.inner + i];
    }
  }
  DeviceError error;
  run_grid(1, kThreads, [&] { scatter_add<T>(k.idx.data(), kIndexI64, src.data(), out.data(), g, &error, 2); });
  EXPECT_EQ(out, want);
  EXPECT_EQ(error.code, bad ? kIndexOutOfRange : kNoError);
  if (bad) {
    EXPECT_EQ(error.value, -1);
    EXPECT_EQ(error.position, 1);
  }
}

TEST(LibraryKernelsEmulated, ScatterAddMatchesLoops) {
  for (bool bad : {false, true}) {
    check_scatter_add<float>(bad);
    check_scatter_add<double>(bad);
    check_scatter_add<int32_t>(bad);
    check_scatter_add<int64_t>(bad);
  }
}

// one_hot writes `one` at the indices in range and leaves the rest (launch_one_hot zeroes
// the result first); u8 indices.
TEST(LibraryKernelsEmulated, OneHotWritesTheIndicesInRange) {
  const uint8_t idx[] = {2, 0, 9, 3, 3, 255, 1};
  const int64_t n = 7, depth = 4;
  std::vector<uint16_t> out(n * depth, 0);
  run_grid(1, kThreads, [&] { one_hot<uint16_t>(idx, kIndexU8, n, depth, out.data(), 0x3c00); });
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < depth; ++i) {
      ASSERT_EQ(out[j * depth + i], idx[j] == i ? 0x3c00 : 0) << j << ", " << i;
    }
  }
}

}  // namespace
}  // namespace weft::cuda
