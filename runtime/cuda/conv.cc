// Convolutions through cuDNN's legacy API (cudnn_cnn.h, in every cuDNN 9): conv over 1-3
// spatial dims and its two gradients as the one call conv_plan.h plans. Everything is decided at bind time —
// the descriptors, the math (ConvPlan::math: FMA for f32 and f64, so f32 results stay
// within the reference's tolerance; tensor ops with an f32 compute type for f16 and
// bf16; cuDNN's default math, which allows TF32, for f32 with ExecutorOptions::tf32),
// and the algorithm, measured by cuDNN on the bound buffers (like PyTorch's
// cudnn.benchmark; the heuristics where the search fails) through choose_conv_algorithm,
// which keeps the fastest one the policy allows (ConvPolicy) — so run() is one cuDNN call on the
// executor's stream with Device::workspace, and never allocates. Under the exact and
// deterministic policies every step of one executor computes the same bits; two
// processes may measure differently and pick different algorithms, whose results differ
// in the last bits.

#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
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
    const cudnnDataType_t type = data_type(p.dtype);
    // The convolution's compute type: f32 for the halves (their products accumulate in
    // f32), else the data type.
    const cudnnDataType_t compute = p.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    WEFT_RETURN_IF_ERROR(
        cudnn_status(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor"));
    WEFT_RETURN_IF_ERROR(
        cudnn_status(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor"));
    WEFT_RETURN_IF_ERROR(
        cudnn_status(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor"));
    WEFT_RETURN_IF_ERROR(cudnn_status(cudnnCreateConvolutionDescriptor(&conv),
                                      "cudnnCreateConvolutionDescriptor"));
    if (p.rank == 4) {
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
                                          compute),
          "cudnnSetConvolution2dDescriptor"));
    } else {  // NCDHW: the Nd calls, packed (the Ex form derives the strides from NCHW).
      WEFT_RETURN_IF_ERROR(cudnn_status(
          cudnnSetTensorNdDescriptorEx(x, CUDNN_TENSOR_NCHW, type, p.rank, p.x),
          "cudnnSetTensorNdDescriptorEx (x)"));
      WEFT_RETURN_IF_ERROR(cudnn_status(
          cudnnSetTensorNdDescriptorEx(y, CUDNN_TENSOR_NCHW, type, p.rank, p.y),
          "cudnnSetTensorNdDescriptorEx (y)"));
      WEFT_RETURN_IF_ERROR(cudnn_status(
          cudnnSetFilterNdDescriptor(w, type, CUDNN_TENSOR_NCHW, p.rank, p.w),
          "cudnnSetFilterNdDescriptor"));
      WEFT_RETURN_IF_ERROR(cudnn_status(
          cudnnSetConvolutionNdDescriptor(conv, p.rank - 2, p.pad, p.stride, p.dilation,
                                          CUDNN_CROSS_CORRELATION, compute),
          "cudnnSetConvolutionNdDescriptor"));
    }
    WEFT_RETURN_IF_ERROR(cudnn_status(cudnnSetConvolutionGroupCount(conv, p.groups),
                                      "cudnnSetConvolutionGroupCount"));
    return cudnn_status(cudnnSetConvolutionMathType(conv, math_type(p.math)),
                        "cudnnSetConvolutionMathType");
  }

  static cudnnDataType_t data_type(DType d) {
    switch (d) {
      case DType::f64: return CUDNN_DATA_DOUBLE;
      case DType::f16: return CUDNN_DATA_HALF;
      case DType::bf16: return CUDNN_DATA_BFLOAT16;
      default: return CUDNN_DATA_FLOAT;
    }
  }

  static cudnnMathType_t math_type(ContractionMath m) {
    switch (m) {
      case ContractionMath::tensor_f32: return CUDNN_TENSOR_OP_MATH;
      case ContractionMath::tf32: return CUDNN_DEFAULT_MATH;  // allows TF32 (Ampere on)
      case ContractionMath::pedantic: break;
    }
    return CUDNN_FMA_MATH;
  }
};

// The buffers of one convolution in their roles (the result's role is `out`).
struct Buffers {
  const void* x;
  const void* w;
  const void* y;
  void* out;
};

// cuDNN's measured search (cudnnFind*AlgorithmEx) gets this much scratch at bind time; the
// heuristics' workspace limit is choose_conv_algorithm's.
constexpr size_t kFindWorkspaceBytes = size_t{256} << 20;

// What differs between cuDNN's three calls at bind time: the perf and algorithm types,
// the heuristics and workspace queries (each with its own argument order), which
// algorithms are FFT or Winograd, and the algorithms' names.
struct Forward {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr const char* kHeuristics = "cudnnGetConvolutionForwardAlgorithm_v7";
  static cudnnStatus_t max_count(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionForwardAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t heuristics(cudnnHandle_t h, const Descriptors& d, int n, int* got,
                                  Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, n, got, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descriptors& d, Algo a, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, a, bytes);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const Descriptors& d, const Buffers& b, int n,
                            int* got, Perf* perf, void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionForwardAlgorithmEx(h, d.x, b.x, d.w, b.w, d.conv, d.y, b.out, n,
                                                  got, perf, ws, ws_bytes);
  }
  static const char* name(Algo a) {
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
};

struct BackwardData {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr const char* kHeuristics = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
  static cudnnStatus_t max_count(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t heuristics(cudnnHandle_t h, const Descriptors& d, int n, int* got,
                                  Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, n, got, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descriptors& d, Algo a, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, a, bytes);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const Descriptors& d, const Buffers& b, int n,
                            int* got, Perf* perf, void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, b.w, d.y, b.y, d.conv, d.x, b.out,
                                                       n, got, perf, ws, ws_bytes);
  }
  static const char* name(Algo a) {
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
};

struct BackwardFilter {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr const char* kHeuristics = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
  static cudnnStatus_t max_count(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t heuristics(cudnnHandle_t h, const Descriptors& d, int n, int* got,
                                  Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, n, got, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descriptors& d, Algo a, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, a, bytes);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const Descriptors& d, const Buffers& b, int n,
                            int* got, Perf* perf, void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, b.x, d.y, b.y, d.conv, d.w,
                                                         b.out, n, got, perf, ws, ws_bytes);
  }
  static const char* name(Algo a) {
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
};

// FFT and Winograd transform the data: not the reference's f32 sums of products.
bool approximate(const char* name) {
  const std::string n(name);
  return n.rfind("fft", 0) == 0 || n.rfind("winograd", 0) == 0;
}

// The algorithm fixed at bind time.
struct Algorithm {
  int algo = 0;
  size_t workspace = 0;
  std::string name;
  bool nondeterministic = false;  ///< Only when cuDNN offers no deterministic one.
  float ms = -1;  ///< Its time in cuDNN's search; -1 when the heuristics chose.
  /// The fastest the search measured when the policy passed it over: its name, time and
  /// why ("algo_0 0.210 ms, nondeterministic"); empty otherwise.
  std::string passed_over;
};

// Call's algorithm for `plan`, once, at bind time: cuDNN runs every algorithm on the
// bound buffers and orders them by measured time (cudnnFind*AlgorithmEx, the results are
// overwritten later by the step itself), or, where that fails, its heuristics; then
// choose_conv_algorithm (conv_plan.h) takes one by `policy`. The workspace is asked again
// for the choice.
template <typename Call>
StatusOr<Algorithm> choose(cudnnHandle_t h, const ConvPlan& plan, const Descriptors& d,
                           const Buffers& buffers, ConvPolicy policy) {
  constexpr size_t limit = kConvWorkspaceLimit;
  int count = 0, returned = 0;
  WEFT_RETURN_IF_ERROR(cudnn_status(Call::max_count(h, &count), "cudnnGet*AlgorithmMaxCount"));
  std::vector<typename Call::Perf> perf(static_cast<size_t>(std::max(count, 1)));
  void* scratch = nullptr;
  bool found = false;
  if (cudaMalloc(&scratch, kFindWorkspaceBytes) == cudaSuccess) {
    found = Call::find(h, d, buffers, count, &returned, perf.data(), scratch,
                       kFindWorkspaceBytes) == CUDNN_STATUS_SUCCESS;
    cudaFree(scratch);
  }
  cudaGetLastError();  // a failed search or allocation leaves the heuristics to decide
  if (!found) {
    WEFT_RETURN_IF_ERROR(cudnn_status(Call::heuristics(h, d, count, &returned, perf.data()),
                                      Call::kHeuristics));
  }
  std::vector<ConvAlgorithm> offered;
  for (int i = 0; i < returned; ++i) {
    ConvAlgorithm a;
    a.algo = static_cast<int>(perf[i].algo);
    a.supported = perf[i].status == CUDNN_STATUS_SUCCESS;
    a.deterministic = perf[i].determinism == CUDNN_DETERMINISTIC;
    a.tensor_ops = perf[i].mathType != CUDNN_DEFAULT_MATH && perf[i].mathType != CUDNN_FMA_MATH;
    a.approximate = approximate(Call::name(perf[i].algo));
    a.workspace = perf[i].memory;
    offered.push_back(a);
  }
  const bool tensor_ops = plan.math != ContractionMath::pedantic;
  const int chosen = choose_conv_algorithm(offered, limit, policy, tensor_ops);
  if (chosen < 0) {
    return Error{std::string("cuDNN offers no ") + (tensor_ops ? "usable" : "FMA-math") +
                 " algorithm for the convolution " + plan.describe() + " (" +
                 std::to_string(returned) + " offered)"};
  }
  // The chosen algorithm runs in the math type it was measured with (cuDNN may offer a
  // tensor-op algorithm and an FMA one for the same enum value).
  if (tensor_ops) {
    WEFT_RETURN_IF_ERROR(cudnn_status(cudnnSetConvolutionMathType(d.conv, perf[chosen].mathType),
                                      "cudnnSetConvolutionMathType"));
  }
  Algorithm out;
  const auto algo = static_cast<typename Call::Algo>(offered[chosen].algo);
  out.algo = offered[chosen].algo;
  out.name = Call::name(algo);
  out.nondeterministic = !offered[chosen].deterministic;
  if (found) {
    out.ms = perf[chosen].time;
    // The search's order is by time: the first usable one is the fastest.
    const int fastest = choose_conv_algorithm(offered, SIZE_MAX, ConvPolicy::fastest, tensor_ops);
    if (fastest >= 0 && fastest != chosen) {
      const ConvAlgorithm& f = offered[fastest];
      char ms[32];
      std::snprintf(ms, sizeof ms, " %.3f ms", perf[fastest].time);
      out.passed_over = std::string(Call::name(static_cast<typename Call::Algo>(f.algo))) + ms +
                        (f.deterministic ? "" : ", nondeterministic") +
                        (f.approximate ? ", FFT/Winograd" : "") +
                        (f.workspace > limit ? ", " + std::to_string(f.workspace) +
                                                   " bytes of workspace, over the limit"
                                             : std::string());
    }
  }
  WEFT_RETURN_IF_ERROR(cudnn_status(Call::workspace(h, d, algo, &out.workspace),
                                    "cudnnGet*WorkspaceSize (" + out.name + ")"));
  return out;
}

class ConvolutionBound : public Executor::Bound {
 public:
  ConvolutionBound(std::string op, ConvPlan plan, const void* x, const void* w, const void* y,
                   void* out, size_t out_bytes)
      : op_(std::move(op)), plan_(std::move(plan)), x_(x), w_(w), y_(y), out_(out),
        out_bytes_(out_bytes) {}

  Status bind(cudnnHandle_t h, ConvPolicy policy, FreeArena free) {
    if (plan_.zero_fill) return Status::ok_status();
    WEFT_RETURN_IF_ERROR(desc_.make(plan_));
    const Buffers b{x_, w_, y_, out_};
    // Speed first, under every policy: the workspace goes to the arena's free bytes when
    // it fits there, else to the shared block. (Keeping every policy but `fastest` to
    // what the arena had free was tried on an H100, 2026-11-26: convnet's step went from
    // 6.9 to 12.3 ms for 213 MiB less, already below PyTorch's; bench/RESULTS.md.)
    StatusOr<Algorithm> a =
        plan_.call == ConvCall::forward ? choose<Forward>(h, plan_, desc_, b, policy)
        : plan_.call == ConvCall::backward_data
            ? choose<BackwardData>(h, plan_, desc_, b, policy)
            : choose<BackwardFilter>(h, plan_, desc_, b, policy);
    if (!a.ok()) return a.error();
    algo_ = std::move(*a);
    if (algo_.workspace > 0 && algo_.workspace <= free.bytes) own_workspace_ = free.at;
    return Status::ok_status();
  }

  Status run(Device& d, int /*index*/) override {
    if (plan_.zero_fill) {
      return cuda_status(cudaMemsetAsync(out_, 0, out_bytes_, d.stream),
                         "cudaMemsetAsync (empty " + op_ + ")");
    }
    const size_t workspace = algo_.workspace;
    if (!own_workspace_ && d.workspace_bytes < workspace) {
      return Error{"internal: " + op_ + " needs " + std::to_string(workspace) +
                   " bytes of workspace, the device has " + std::to_string(d.workspace_bytes)};
    }
    // alpha 1, beta 0: the result is overwritten. Scaling factors are double for double
    // data, float otherwise.
    const double one_d = 1, zero_d = 0;
    const float one_f = 1, zero_f = 0;
    const bool f64 = plan_.dtype == DType::f64;
    const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
    void* ws = !workspace ? nullptr : own_workspace_ ? own_workspace_ : d.workspace;
    switch (plan_.call) {
      case ConvCall::forward:
        return cudnn_status(
            cudnnConvolutionForward(d.cudnn, one, desc_.x, x_, desc_.w, w_, desc_.conv,
                                    static_cast<cudnnConvolutionFwdAlgo_t>(algo_.algo), ws,
                                    workspace, zero, desc_.y, out_),
            "cudnnConvolutionForward (" + op_ + ")");
      case ConvCall::backward_data:
        return cudnn_status(
            cudnnConvolutionBackwardData(d.cudnn, one, desc_.w, w_, desc_.y, y_, desc_.conv,
                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(algo_.algo),
                                         ws, workspace, zero, desc_.x, out_),
            "cudnnConvolutionBackwardData (" + op_ + ")");
      case ConvCall::backward_filter:
        return cudnn_status(
            cudnnConvolutionBackwardFilter(
                d.cudnn, one, desc_.x, x_, desc_.y, y_, desc_.conv,
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo_.algo), ws, workspace, zero,
                desc_.w, out_),
            "cudnnConvolutionBackwardFilter (" + op_ + ")");
    }
    return Status::ok_status();
  }

  std::string describe() const override {
    std::string s = "cudnn " + op_ + " " + plan_.describe();
    if (!plan_.zero_fill) {
      char ms[32] = "";
      if (algo_.ms >= 0) std::snprintf(ms, sizeof ms, " %.3f ms", algo_.ms);
      s += " (" + algo_.name + ms + (algo_.nondeterministic ? ", nondeterministic" : "") + ", " +
           std::to_string(algo_.workspace) + " bytes of workspace" +
           (own_workspace_ ? " in the arena's free bytes" : "");
      if (!algo_.passed_over.empty()) s += "; passed over " + algo_.passed_over;
      s += ")";
    }
    return s;
  }

  size_t workspace_bytes() const override { return own_workspace_ ? 0 : algo_.workspace; }

 private:
  std::string op_;
  ConvPlan plan_;
  const void* x_;  ///< The operands in their roles (the result's role is nullptr).
  const void* w_;
  const void* y_;
  void* out_;
  size_t out_bytes_;
  Descriptors desc_;
  Algorithm algo_;
  void* own_workspace_ = nullptr;  ///< In the arena's free bytes at this call, or null.
};

}  // namespace

StatusOr<BoundPtr> convolution_bound(Device& d, const Node& node,
                                     const std::vector<Type>& operand_types, const Type& result,
                                     std::vector<const void*> in, void* out, FreeArena free) {
  WEFT_ASSIGN_OR_RETURN(ConvPlan plan, plan_convolution(node, operand_types, result));
  plan.math = contraction_math(plan.dtype, d.tf32);
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
  WEFT_RETURN_IF_ERROR(bound->bind(d.cudnn, d.convolutions, free));
  return BoundPtr(std::move(bound));
}

}  // namespace weft::cuda
