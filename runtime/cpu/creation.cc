// Creation kernels: full, iota, and the counter-based random ops random_uniform and
// random_bernoulli. Each element of a random op is its own Philox block (runtime/philox.h),
// so elements are split over the pool freely and the bits equal the reference's.

#include <cstring>

#include "runtime/cpu/kernels_internal.h"
#include "runtime/philox.h"
#include "runtime/tensor.h"

namespace weft::cpu {

uint64_t dtype_bits(DType dtype, double value) {
  const Tensor t = Tensor::scalar(dtype, value);
  uint64_t bits = 0;
  std::memcpy(&bits, t.raw_data(), dtype_size(dtype));
  return bits;
}

namespace {

constexpr int64_t kGrainElements = 16384;
constexpr int64_t kRandomGrain = 2048;  // Ten Philox rounds per element.

template <typename E>
KernelOr make_full(const LibraryCall& call, void* out) {
  const E value = static_cast<E>(dtype_bits(call.result_type.dtype, call.node.float_attr("value")));
  E* y = static_cast<E*>(out);
  const int64_t n = call.result_type.numel();
  return make_fn_kernel("full " + call.result_type.to_string(), [=](ThreadPool& pool) -> Status {
    parallel_fill(pool, y, n, value);
    return Status::ok_status();
  });
}

// iota {axis}: the result is [outer, dim, inner] and row (o, j) holds j, converted to the
// dtype once per j at bind time.
template <typename E>
KernelOr make_iota(const LibraryCall& call, void* out) {
  const Shape& shape = call.result_type.shape;
  const int axis = normalize_axis(call.node.int_attr("axis"), shape.rank());
  if (axis < 0) return std::unique_ptr<BoundKernel>();
  const int64_t dim = shape.dims[axis];
  int64_t inner = 1;
  for (int d = axis + 1; d < shape.rank(); ++d) inner *= shape.dims[d];
  std::vector<E> values(static_cast<size_t>(dim));
  for (int64_t j = 0; j < dim; ++j) {
    values[j] = static_cast<E>(dtype_bits(call.result_type.dtype, static_cast<double>(j)));
  }
  const int64_t rows = inner == 0 ? 0 : shape.numel() / inner;
  E* y = static_cast<E*>(out);
  return make_fn_kernel("iota " + call.result_type.to_string(),
                        [=, values = std::move(values)](ThreadPool& pool) -> Status {
    pool.parallel_for(rows, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(inner, 1)),
                      [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        std::fill(y + r * inner, y + (r + 1) * inner, values[r % dim]);
      }
    });
    return Status::ok_status();
  });
}

// The random ops' key operand, i64[2] = (seed, offset), read when the kernel runs.
std::pair<int64_t, int64_t> read_key(const void* key) {
  const int64_t* k = static_cast<const int64_t*>(key);
  return {k[0], k[1]};
}

template <typename T, typename Convert>
std::unique_ptr<BoundKernel> random_kernel(const LibraryCall& call, const void* key, void* out,
                                           Convert convert) {
  T* y = static_cast<T*>(out);
  const int64_t n = call.result_type.numel();
  return make_fn_kernel(std::string(op_name(call.node.op)) + " " + call.result_type.to_string(),
                        [=](ThreadPool& pool) -> Status {
    const auto [seed, offset] = read_key(key);
    pool.parallel_for(n, kRandomGrain, [&, seed = seed, offset = offset](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        y[i] = convert(philox::element_block(seed, offset, static_cast<uint64_t>(i)));
      }
    });
    return Status::ok_status();
  });
}

KernelOr make_random_uniform(const LibraryCall& call, const void* key, void* out) {
  switch (call.result_type.dtype) {
    case DType::f32:
      return random_kernel<float>(call, key, out, [](const philox::Block& b) { return philox::uniform_f32(b); });
    case DType::f64:
      return random_kernel<double>(call, key, out, [](const philox::Block& b) { return philox::uniform_f64(b); });
    case DType::f16:
      return random_kernel<uint16_t>(call, key, out, [](const philox::Block& b) {
        return float_to_f16(philox::uniform_f16_value(b));
      });
    case DType::bf16:
      return random_kernel<uint16_t>(call, key, out, [](const philox::Block& b) {
        return float_to_bf16(philox::uniform_bf16_value(b));
      });
    default: return std::unique_ptr<BoundKernel>();
  }
}

// random_bernoulli {p}: 1 where the element's f32 uniform is below p, in any dtype.
template <typename E>
KernelOr make_random_bernoulli(const LibraryCall& call, const void* key, void* out) {
  const E one = static_cast<E>(dtype_bits(call.result_type.dtype, 1.0));
  const E zero = static_cast<E>(dtype_bits(call.result_type.dtype, 0.0));
  const double p = call.node.float_attr("p");
  return random_kernel<E>(call, key, out, [=](const philox::Block& b) {
    return static_cast<double>(philox::uniform_f32(b)) < p ? one : zero;
  });
}

}  // namespace

KernelOr make_creation_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                              void* out) {
  const Op op = call.node.op;
  const size_t esize = dtype_size(call.result_type.dtype);
  if (call.result_type.shape != Shape(call.node.ints_attr("shape"))) {
    return std::unique_ptr<BoundKernel>();  // The reference reports the mismatch.
  }
  switch (op) {
    case Op::Full:
      return dispatch_size(esize, [&](auto e) { return make_full<decltype(e)>(call, out); });
    case Op::Iota:
      return dispatch_size(esize, [&](auto e) { return make_iota<decltype(e)>(call, out); });
    case Op::RandomUniform:
    case Op::RandomBernoulli:
      if (call.operand_types[0] != Type{DType::i64, Shape{2}}) return std::unique_ptr<BoundKernel>();
      if (op == Op::RandomUniform) return make_random_uniform(call, in[0], out);
      return dispatch_size(esize, [&](auto e) {
        return make_random_bernoulli<decltype(e)>(call, in[0], out);
      });
    default: return std::unique_ptr<BoundKernel>();
  }
}

}  // namespace weft::cpu
