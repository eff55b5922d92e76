// The library invocations that run on CUDA kernels of weft's own (library_kernels.h,
// attention_kernels.h): movement ops, gather/scatter_add, one_hot, cross_entropy, the
// elementwise ops the generated kernels lack, the random ops, attention and
// attention_grad. Every plan is made here, at bind time.

#include <functional>
#include <utility>

#include "runtime/cuda/attention_kernels.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/library_kernels.h"
#include "runtime/cuda/library_plan.h"

namespace weft::cuda {
namespace {

using Device = Executor::Device;

ValueType value_type(DType d) {
  switch (d) {
    case DType::f64: return kF64;
    case DType::i32: return kI32;
    case DType::i64: return kI64;
    default: return kF32;
  }
}

std::string shape_list(const std::vector<Type>& types, const Type& result) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + types[i].to_string();
  return s + " -> " + result.to_string();
}

// A library invocation: its node (for errors), what describe() says, and how to enqueue.
class LibraryBound : public Executor::Bound {
 public:
  using Enqueue = std::function<cudaError_t(Device&, int)>;
  LibraryBound(const Node& node, std::string what, Enqueue enqueue, size_t workspace = 0)
      : node_(node), what_(std::move(what)), enqueue_(std::move(enqueue)),
        workspace_(workspace) {}
  Status run(Device& d, int index) override {
    return cuda_status(enqueue_(d, index), "CUDA kernel (" + what_ + ")");
  }
  std::string describe() const override { return "cuda " + what_; }
  size_t workspace_bytes() const override { return workspace_; }
  Error device_error(const DeviceError& e) const override {
    // The messages of the CPU backend and the reference interpreter for the same data.
    const std::string op(op_name(node_.op));
    if (e.code == kLabelOutOfRange) {
      return Error{op + ": label " + std::to_string(e.value) + " at position " +
                       std::to_string(e.position) + " is out of range for " +
                       std::to_string(classes_) + " classes",
                   node_.loc};
    }
    return Error{op + ": index " + std::to_string(e.value) + " at position " +
                     std::to_string(e.position) + " is out of range for axis " +
                     std::to_string(axis_) + " of size " + std::to_string(size_),
                 node_.loc};
  }
  void set_error_context(int64_t classes, int axis, int64_t size) {
    classes_ = classes;
    axis_ = axis;
    size_ = size;
  }

 private:
  Node node_;
  std::string what_;
  Enqueue enqueue_;
  size_t workspace_;
  int64_t classes_ = 0;
  int axis_ = 0;
  int64_t size_ = 0;
};

}  // namespace

StatusOr<BoundPtr> library_bound(LibraryKind kind, const Node& node,
                                 const std::vector<Type>& types, const Type& result,
                                 std::vector<const void*> in, void* out) {
  const std::string op(op_name(node.op));
  const std::string what = op + " " + shape_list(types, result);
  const int esize = static_cast<int>(dtype_size(result.dtype));
  switch (kind) {
    case LibraryKind::strided_copy: {
      WEFT_ASSIGN_OR_RETURN(std::vector<StridedMap> maps, plan_strided_copy(node, types, result));
      const uint64_t fill =
          node.op == Op::Pad ? dtype_bits(result.dtype, node.float_attr("value")) : 0;
      return BoundPtr(std::make_unique<LibraryBound>(
          node, what, [=](Device& d, int) {
            for (size_t k = 0; k < maps.size(); ++k) {
              const cudaError_t e = launch_strided_copy(in[k], out, maps[k], esize, fill, d.stream);
              if (e != cudaSuccess) return e;
            }
            return cudaSuccess;
          }));
    }
    case LibraryKind::gather: {
      const GatherGeometry g = plan_gather(node, types[0].shape, types[1].numel());
      const IndexType it = index_type(types[1].dtype);
      auto b = std::make_unique<LibraryBound>(node, what, [=](Device& d, int index) {
        return launch_gather(in[0], in[1], it, out, g, esize, d.device_error, index, d.stream);
      });
      b->set_error_context(0, *normalize_axis(node.int_attr("axis"), types[0].shape.rank()), g.dim);
      return BoundPtr(std::move(b));
    }
    case LibraryKind::scatter_add: {
      const GatherGeometry g = plan_gather(node, types[0].shape, types[1].numel());
      const IndexType it = index_type(types[1].dtype);
      const ValueType vt = value_type(result.dtype);
      const size_t bytes = result.bytes();
      auto b = std::make_unique<LibraryBound>(node, what, [=](Device& d, int index) {
        if (in[0] != out && bytes > 0) {
          const cudaError_t e =
              cudaMemcpyAsync(out, in[0], bytes, cudaMemcpyDeviceToDevice, d.stream);
          if (e != cudaSuccess) return e;
        }
        return launch_scatter_add(in[1], it, in[2], out, g, vt, d.device_error, index, d.stream);
      });
      b->set_error_context(0, *normalize_axis(node.int_attr("axis"), types[0].shape.rank()), g.dim);
      return BoundPtr(std::move(b));
    }
    case LibraryKind::one_hot: {
      const IndexType it = index_type(types[0].dtype);
      const int64_t n = types[0].numel(), depth = node.int_attr("depth");
      const uint64_t one = dtype_bits(result.dtype, 1.0);
      return BoundPtr(std::make_unique<LibraryBound>(node, what, [=](Device& d, int) {
        return launch_one_hot(in[0], it, n, depth, out, esize, one, d.stream);
      }));
    }
    case LibraryKind::cross_entropy: {
      const std::string& reduction = node.str_attr("reduction");
      const int mode = reduction == "mean" ? 0 : reduction == "sum" ? 1 : 2;
      const int64_t n = types[0].shape[0], c = types[0].shape[1];
      const ValueType vt = value_type(types[0].dtype);
      const IndexType it = index_type(types[1].dtype);
      auto b = std::make_unique<LibraryBound>(
          node, what,
          [=](Device& d, int index) {
            return launch_cross_entropy(in[0], vt, in[1], it, n, c, mode,
                                        static_cast<double*>(d.workspace), out, d.device_error,
                                        index, d.stream);
          },
          static_cast<size_t>(n) * sizeof(double));
      b->set_error_context(c, 0, 0);
      return BoundPtr(std::move(b));
    }
    case LibraryKind::mse: {
      const std::string& reduction = node.str_attr("reduction");
      const int mode = reduction == "mean" ? 0 : reduction == "sum" ? 1 : 2;
      const ValueType vt = value_type(types[0].dtype);
      const int64_t count = types[0].numel();
      return BoundPtr(std::make_unique<LibraryBound>(
          node, what,
          [=](Device& d, int) {
            return launch_mse(in[0], in[1], vt, count, mode, static_cast<double*>(d.workspace),
                              out, d.stream);
          },
          static_cast<size_t>(kMseBlocks) * sizeof(double)));
    }
    case LibraryKind::attention: {
      std::optional<AttentionPlan> plan = plan_attention(node, types);
      if (!plan) return Error{"internal: attention " + what + " has no kernel plan", node.loc};
      const uint8_t* mask = plan->masked ? static_cast<const uint8_t*>(in[3]) : nullptr;
      return BoundPtr(std::make_unique<LibraryBound>(node, what, [=, p = *plan](Device& d, int) {
        return launch_attention(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                                static_cast<const float*>(in[2]), mask, p.mask_map,
                                static_cast<float*>(out), p.shape, p.scale, p.causal, d.stream);
      }));
    }
    case LibraryKind::elementwise: {
      const ElementwiseOp eop = elementwise_op(node.op);
      const StridedMap am = broadcast_map(types[0].shape, result.shape);
      const StridedMap bm = types.size() > 1 ? broadcast_map(types[1].shape, result.shape) : am;
      const void* b = types.size() > 1 ? in[1] : nullptr;
      const ValueType vt = value_type(result.dtype);
      const int64_t count = result.numel();
      return BoundPtr(std::make_unique<LibraryBound>(node, what, [=](Device& d, int) {
        return launch_elementwise(eop, vt, in[0], am, b, bm, out, count, d.stream);
      }));
    }
    case LibraryKind::random: {
      const bool bernoulli = node.op == Op::RandomBernoulli;
      const double p = bernoulli ? node.float_attr("p") : 0.0;
      const uint64_t one = dtype_bits(result.dtype, 1.0);
      const ValueType vt = value_type(result.dtype);
      const int64_t count = result.numel();
      const auto* key = static_cast<const int64_t*>(in[0]);
      return BoundPtr(std::make_unique<LibraryBound>(node, what, [=](Device& d, int) {
        return launch_random(bernoulli, vt, key, out, count, p, esize, one, d.stream);
      }));
    }
    default:
      break;
  }
  WEFT_CHECK(false, std::string("library_bound: not a library kernel kind: ") +
                        library_kind_name(kind));
  return Error{"unreachable"};
}

StatusOr<BoundPtr> attention_grad_bound(const Node& node, const std::vector<Type>& types,
                                        std::vector<const void*> in, std::vector<void*> results) {
  StatusOr<AttentionPlan> planned = plan_attention_grad(node, types);
  if (!planned.ok()) {
    return Error{"internal: attention_grad has no kernel plan: " + planned.error().message,
                 node.loc};
  }
  if (results.size() != 3) {
    return Error{"internal: attention_grad bound with " + std::to_string(results.size()) +
                     " results",
                 node.loc};
  }
  const AttentionPlan p = *planned;
  const uint8_t* mask = p.masked ? static_cast<const uint8_t*>(in[5]) : nullptr;
  std::string what = "attention_grad ";
  for (size_t i = 0; i < types.size(); ++i) what += (i ? ", " : "") + types[i].to_string();
  return BoundPtr(std::make_unique<LibraryBound>(
      node, what,
      [=](Device& d, int) {
        const auto f = [&](size_t i) { return static_cast<const float*>(in[i]); };
        const auto r = [&](size_t i) { return static_cast<float*>(results[i]); };
        return launch_attention_backward(f(0), f(1), f(2), f(3), f(4), mask, p.mask_map, r(0),
                                         r(1), r(2), d.workspace, p.shape, p.scale, p.causal,
                                         d.stream);
      },
      attention_backward_workspace_bytes(p.shape)));
}

}  // namespace weft::cuda
