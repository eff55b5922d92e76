// Convolutions through cuDNN's legacy API (cudnn_cnn.h, in every cuDNN 9): conv2d and its
// two gradients as the one call conv_plan.h plans. Everything is decided at bind time —
// the descriptors, FMA math (no TF32, so f32 results stay within the reference's
// tolerance), and the algorithm, from cuDNN's heuristics (no benchmarking: binding stays
// deterministic and fast) through choose_conv_algorithm — so run() is one cuDNN call on
// the executor's stream with Device::workspace, and never allocates.

#include <cudnn.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/conv_plan.h"
#include "runtime/cuda/device.h"

namespace weft::cuda {
namespace {

using Device = Executor::Device;

Status cudnn_status(cudnnStatus_t status, const std::string& call) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok_status();
  return Error{call + ": " + cudnnGetErrorString(status)};
}

// The descriptors of one convolution, destroyed with it.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }

  Status make(const ConvPlan& p) {
    const cudnnDataType_t type = p.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    WEFT_RETURN_IF_ERROR(
        cudnn_status(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor"));
    WEFT_RETURN_IF_ERROR(
        cudnn_status(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor"));
    WEFT_RETURN_IF_ERROR(
        cudnn_status(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor"));
    WEFT_RETURN_IF_ERROR(cudnn_status(cudnnCreateConvolutionDescriptor(&conv),
                                      "cudnnCreateConvolutionDescriptor"));
    WEFT_RETURN_IF_ERROR(cudnn_status(
        cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, p.x[0], p.x[1], p.x[2], p.x[3]),
        "cudnnSetTensor4dDescriptor (x)"));
    WEFT_RETURN_IF_ERROR(cudnn_status(
        cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, p.y[0], p.y[1], p.y[2], p.y[3]),
        "cudnnSetTensor4dDescriptor (y)"));
    WEFT_RETURN_IF_ERROR(cudnn_status(
        cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, p.w[0], p.w[1], p.w[2], p.w[3]),
        "cudnnSetFilter4dDescriptor"));
    WEFT_RETURN_IF_ERROR(cudnn_status(
        cudnnSetConvolution2dDescriptor(conv, p.pad[0], p.pad[1], p.stride[0], p.stride[1],
                                        p.dilation[0], p.dilation[1], CUDNN_CROSS_CORRELATION,
                                        type),
        "cudnnSetConvolution2dDescriptor"));
    WEFT_RETURN_IF_ERROR(cudnn_status(cudnnSetConvolutionGroupCount(conv, p.groups),
                                      "cudnnSetConvolutionGroupCount"));
    return cudnn_status(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH),
                        "cudnnSetConvolutionMathType");
  }
};

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "?";
  }
}

const char* algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "algo_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "algo_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "?";
  }
}

const char* algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "algo_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "algo_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "algo_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "fft_tiling";
    default: return "?";
  }
}

bool tensor_ops(cudnnMathType_t m) {
  return m != CUDNN_DEFAULT_MATH && m != CUDNN_FMA_MATH;
}

// One of cuDNN's heuristic results as choose_conv_algorithm sees it.
template <typename Perf>
ConvAlgorithm offered(const Perf& perf, bool approximate) {
  ConvAlgorithm a;
  a.algo = static_cast<int>(perf.algo);
  a.supported = perf.status == CUDNN_STATUS_SUCCESS;
  a.deterministic = perf.determinism == CUDNN_DETERMINISTIC;
  a.tensor_ops = tensor_ops(perf.mathType);
  a.approximate = approximate;
  a.workspace = perf.memory;
  return a;
}

// The algorithm for `plan`'s call: cuDNN's heuristics (cudnnGet*Algorithm_v7), then
// choose_conv_algorithm; the workspace is asked again for the choice (the heuristics'
// figure is an estimate). `algo`, its `name`, `workspace` and whether the algorithm is
// `nondeterministic` (only when cuDNN offers no deterministic one) are set on success.
Status choose(cudnnHandle_t h, const ConvPlan& plan, const Descriptors& d, int& algo,
              size_t& workspace, std::string& name, bool& nondeterministic) {
  std::vector<ConvAlgorithm> candidates;
  int count = 0, returned = 0;
  switch (plan.call) {
    case ConvCall::forward: {
      WEFT_RETURN_IF_ERROR(cudnn_status(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count),
                                        "cudnnGetConvolutionForwardAlgorithmMaxCount"));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(count, 1));
      WEFT_RETURN_IF_ERROR(cudnn_status(
          cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, count, &returned,
                                                 perf.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7"));
      for (int i = 0; i < returned; ++i) {
        const cudnnConvolutionFwdAlgo_t a = perf[i].algo;
        candidates.push_back(offered(
            perf[i], a == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
                         a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
                         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
                         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED));
      }
      break;
    }
    case ConvCall::backward_data: {
      WEFT_RETURN_IF_ERROR(
          cudnn_status(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count),
                       "cudnnGetConvolutionBackwardDataAlgorithmMaxCount"));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::max(count, 1));
      WEFT_RETURN_IF_ERROR(cudnn_status(
          cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, count, &returned,
                                                      perf.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
      for (int i = 0; i < returned; ++i) {
        const cudnnConvolutionBwdDataAlgo_t a = perf[i].algo;
        candidates.push_back(offered(
            perf[i], a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
                         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
                         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
                         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED));
      }
      break;
    }
    case ConvCall::backward_filter: {
      WEFT_RETURN_IF_ERROR(
          cudnn_status(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count),
                       "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount"));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(std::max(count, 1));
      WEFT_RETURN_IF_ERROR(cudnn_status(
          cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, count,
                                                        &returned, perf.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
      for (int i = 0; i < returned; ++i) {
        const cudnnConvolutionBwdFilterAlgo_t a = perf[i].algo;
        candidates.push_back(offered(
            perf[i], a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
                         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
                         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED));
      }
      break;
    }
  }
  const int chosen = choose_conv_algorithm(candidates);
  if (chosen >= 0 && !candidates[chosen].deterministic) nondeterministic = true;
  if (chosen < 0) {
    return Error{"cuDNN offers no FMA-math algorithm for the convolution " + plan.describe() +
                 " (" + std::to_string(returned) + " offered)"};
  }
  algo = candidates[chosen].algo;
  switch (plan.call) {
    case ConvCall::forward:
      name = algo_name(static_cast<cudnnConvolutionFwdAlgo_t>(algo));
      return cudnn_status(
          cudnnGetConvolutionForwardWorkspaceSize(
              h, d.x, d.w, d.conv, d.y, static_cast<cudnnConvolutionFwdAlgo_t>(algo), &workspace),
          "cudnnGetConvolutionForwardWorkspaceSize");
    case ConvCall::backward_data:
      name = algo_name(static_cast<cudnnConvolutionBwdDataAlgo_t>(algo));
      return cudnn_status(cudnnGetConvolutionBackwardDataWorkspaceSize(
                              h, d.w, d.y, d.conv, d.x,
                              static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &workspace),
                          "cudnnGetConvolutionBackwardDataWorkspaceSize");
    case ConvCall::backward_filter:
      name = algo_name(static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo));
      return cudnn_status(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                              h, d.x, d.y, d.conv, d.w,
                              static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &workspace),
                          "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  }
  return Status::ok_status();
}

class ConvolutionBound : public Executor::Bound {
 public:
  ConvolutionBound(std::string op, ConvPlan plan, const void* x, const void* w, const void* y,
                   void* out, size_t out_bytes)
      : op_(std::move(op)), plan_(std::move(plan)), x_(x), w_(w), y_(y), out_(out),
        out_bytes_(out_bytes) {}

  Status bind(cudnnHandle_t h) {
    if (plan_.zero_fill) return Status::ok_status();
    WEFT_RETURN_IF_ERROR(desc_.make(plan_));
    return choose(h, plan_, desc_, algo_, workspace_, algo_name_, nondeterministic_);
  }

  Status run(Device& d, int /*index*/) override {
    if (plan_.zero_fill) {
      return cuda_status(cudaMemsetAsync(out_, 0, out_bytes_, d.stream),
                         "cudaMemsetAsync (empty " + op_ + ")");
    }
    if (d.workspace_bytes < workspace_) {
      return Error{"internal: " + op_ + " needs " + std::to_string(workspace_) +
                   " bytes of workspace, the device has " + std::to_string(d.workspace_bytes)};
    }
    // alpha 1, beta 0: the result is overwritten. Scaling factors are double for double
    // data, float otherwise.
    const double one_d = 1, zero_d = 0;
    const float one_f = 1, zero_f = 0;
    const bool f64 = plan_.dtype == DType::f64;
    const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
    void* ws = workspace_ ? d.workspace : nullptr;
    switch (plan_.call) {
      case ConvCall::forward:
        return cudnn_status(
            cudnnConvolutionForward(d.cudnn, one, desc_.x, x_, desc_.w, w_, desc_.conv,
                                    static_cast<cudnnConvolutionFwdAlgo_t>(algo_), ws,
                                    workspace_, zero, desc_.y, out_),
            "cudnnConvolutionForward (" + op_ + ")");
      case ConvCall::backward_data:
        return cudnn_status(
            cudnnConvolutionBackwardData(d.cudnn, one, desc_.w, w_, desc_.y, y_, desc_.conv,
                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(algo_), ws,
                                         workspace_, zero, desc_.x, out_),
            "cudnnConvolutionBackwardData (" + op_ + ")");
      case ConvCall::backward_filter:
        return cudnn_status(
            cudnnConvolutionBackwardFilter(d.cudnn, one, desc_.x, x_, desc_.y, y_, desc_.conv,
                                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo_),
                                           ws, workspace_, zero, desc_.w, out_),
            "cudnnConvolutionBackwardFilter (" + op_ + ")");
    }
    return Status::ok_status();
  }

  std::string describe() const override {
    std::string s = "cudnn " + op_ + " " + plan_.describe();
    if (!plan_.zero_fill) {
      s += " (" + algo_name_ + (nondeterministic_ ? ", nondeterministic" : "") + ", " +
           std::to_string(workspace_) + " bytes of workspace)";
    }
    return s;
  }

  size_t workspace_bytes() const override { return workspace_; }

 private:
  std::string op_;
  ConvPlan plan_;
  const void* x_;  ///< The operands in their roles (the result's role is nullptr).
  const void* w_;
  const void* y_;
  void* out_;
  size_t out_bytes_;
  Descriptors desc_;
  int algo_ = 0;
  size_t workspace_ = 0;
  std::string algo_name_;
  bool nondeterministic_ = false;
};

}  // namespace

StatusOr<BoundPtr> convolution_bound(Device& d, const Node& node,
                                     const std::vector<Type>& operand_types, const Type& result,
                                     std::vector<const void*> in, void* out) {
  WEFT_ASSIGN_OR_RETURN(ConvPlan plan, plan_convolution(node, operand_types, result));
  if (!d.cudnn) {
    WEFT_RETURN_IF_ERROR(cudnn_status(cudnnCreate(&d.cudnn), "cudnnCreate"));
    WEFT_RETURN_IF_ERROR(cudnn_status(cudnnSetStream(d.cudnn, d.stream), "cudnnSetStream"));
  }
  const auto at = [&](ConvBuffer b) -> const void* {
    return b == ConvBuffer::operand0 ? in[0] : b == ConvBuffer::operand1 ? in[1] : nullptr;
  };
  auto bound = std::make_unique<ConvolutionBound>(std::string(op_name(node.op)), plan,
                                                  at(plan.x_at), at(plan.w_at), at(plan.y_at),
                                                  out, result.bytes());
  WEFT_RETURN_IF_ERROR(bound->bind(d.cudnn));
  return BoundPtr(std::move(bound));
}

}  // namespace weft::cuda
