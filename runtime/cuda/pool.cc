// Pooling invocations bound to pool.cu's kernels: the window planned once here
// (conv_plan.h's plan_pooling), one launch per step (f16/bf16: widened into the shared
// workspace, the f32 kernel, rounded back; pool.h's launch_pool_half). pool_kernels.h says why these are
// hand-written rather than cuDNN's.

#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/conv_plan.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/pool.h"

namespace weft::cuda {
namespace {

class PoolingBound : public Executor::Bound {
 public:
  PoolingBound(std::string op, PoolOp pool, DType dtype, PoolWindow window, const void* a,
               const void* b, void* out)
      : op_(std::move(op)), pool_(pool), dtype_(dtype), window_(window), a_(a), b_(b),
        out_(out) {}

  Status run(Executor::Device& d, int /*index*/) override {
    if (half()) {  // widened into the shared workspace, the f32 kernel, rounded
      return cuda_status(launch_pool_half(pool_, dtype_ == DType::bf16, window_, a_, b_, out_,
                                          d.workspace, d.stream),
                         "launch_pool_half (" + op_ + ")");
    }
    return cuda_status(launch_pool(pool_, dtype_ == DType::f64, window_, a_, b_, out_, d.stream),
                       "launch_pool (" + op_ + ")");
  }

  size_t workspace_bytes() const override {
    return half() ? pool_half_workspace_bytes(window_, pool_) : 0;
  }

  std::string describe() const override {
    const PoolWindow& g = window_;
    return "pool " + op_ + " " + std::string(dtype_name(dtype_)) + " " + std::to_string(g.planes) + " planes " +
           std::to_string(g.h) + "x" + std::to_string(g.w) + " -> " + std::to_string(g.oh) + "x" +
           std::to_string(g.ow) + " window " + std::to_string(g.kh) + "x" + std::to_string(g.kw) +
           " stride " + std::to_string(g.sh) + "x" + std::to_string(g.sw) + " pad " +
           std::to_string(g.ph) + "x" + std::to_string(g.pw) + " (" +
           std::to_string(pool_result_count(g, pool_)) + " threads" +
           (half() ? ", computed in f32 in the workspace" : "") + ")";
  }

 private:
  bool half() const { return is_half(dtype_); }

  std::string op_;
  PoolOp pool_;
  DType dtype_;
  PoolWindow window_;
  const void* a_;
  const void* b_;
  void* out_;
};

}  // namespace

StatusOr<BoundPtr> pooling_bound(const Node& node, const std::vector<Type>& operand_types,
                                 const Type& result, std::vector<const void*> in, void* out) {
  WEFT_ASSIGN_OR_RETURN(PoolWindow window, plan_pooling(node, operand_types, result));
  return BoundPtr(std::make_unique<PoolingBound>(
      std::string(op_name(node.op)), pool_op(node.op), result.dtype, window,
      in[0], in.size() > 1 ? in[1] : nullptr, out));
}

}  // namespace weft::cuda
