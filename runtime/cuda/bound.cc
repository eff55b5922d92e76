// The bound invocations of the CUDA executor (device.h): generated kernels, cuBLAS
// matmuls, contractions, copies and the host fallback.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "runtime/cuda/device.h"
#include "runtime/cuda/nccl_communicator.h"
#include "runtime/reference/interpreter.h"

namespace weft::cuda {

namespace {

// A failed CUDA call while the executor is torn down: printed to stderr (a destructor
// neither throws nor stops half-way), the thread's last error cleared, and the rest
// still released.
void log_teardown_error(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "warning: cuda::Executor teardown: %s: %s\n", call, cudaGetErrorString(error));
  cudaGetLastError();
}

}  // namespace

Executor::Device::~Device() {
  log_teardown_error(cudaSetDevice(ordinal), "cudaSetDevice");
  // Every stream that may still read or write what is freed below is joined first: the
  // step's, the copy stream (prefetches no step took), and NCCL's communication stream —
  // a step that failed after starting a bucket's reduction returned before the compute
  // stream waited for it, and the reduction reads and writes the staging block.
  if (stream) log_teardown_error(cudaStreamSynchronize(stream), "cudaStreamSynchronize (the step's stream)");
  if (copy_stream) log_teardown_error(cudaStreamSynchronize(copy_stream), "cudaStreamSynchronize (the copy stream)");
  if (nccl && nccl->stream()) {
    log_teardown_error(cudaStreamSynchronize(nccl->stream()),
                       "cudaStreamSynchronize (NCCL's communication stream)");
  }
  for (void* p : {arena, inputs, snapshots, workspace, staging}) {
    if (p) cudaFree(p);
  }
  for (const PrefetchSlots& in : prefetched) {
    for (int s = 0; s < 2; ++s) {
      if (in.slot[s]) cudaFree(in.slot[s]);
      if (in.copied[s]) cudaEventDestroy(in.copied[s]);
      if (in.read[s]) cudaEventDestroy(in.read[s]);
    }
  }
  if (copy_stream) cudaStreamDestroy(copy_stream);
  for (const auto* events : {&staged, &reduced}) {
    for (cudaEvent_t e : *events) {
      if (e) cudaEventDestroy(e);
    }
  }
  if (error) cudaFreeHost(error);
  for (cudaGraphExec_t exec : {graph_exec, accumulate_graph_exec}) {
    if (exec) cudaGraphExecDestroy(exec);
  }
  for (cudaGraph_t g : {graph, accumulate_graph}) {
    if (g) cudaGraphDestroy(g);
  }
  if (cublas) cublasDestroy(cublas);
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cudnn) cudnnDestroy(cudnn);
  if (library) cudaLibraryUnload(library);
  if (stream) cudaStreamDestroy(stream);
}

Error Executor::Bound::device_error(const DeviceError& e) const {
  return Error{describe() + ": error code " + std::to_string(e.code) + " from the device"};
}

namespace {

using Device = Executor::Device;

// A generated kernel's launch: one pointer per buffer, 256-thread blocks, a grid-stride
// loop over n elements inside the kernel (the ABI the code generator emits).
class Launch {
 public:
  Launch(cudaKernel_t kernel, const GeneratedKernel& k, std::vector<void*> buffers,
         ClearRanges clear)
      : kernel_(kernel), name_(k.name), n_(k.rows * k.row_length), buffers_(std::move(buffers)),
        clear_(std::move(clear)) {
    blocks_ = static_cast<unsigned>(std::clamp<int64_t>((n_ + 255) / 256, 1, 65535));
  }
  Status run(cudaStream_t stream) {
    for (const auto& [at, bytes] : clear_) {
      WEFT_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(at, 0, bytes, stream),
                                       "cudaMemsetAsync (clear before " + name_ + ")"));
    }
    if (n_ == 0) return Status::ok_status();
    // cudaLaunchKernel reads each parameter's value through its address.
    std::vector<void*> args;
    args.reserve(buffers_.size());
    for (void*& p : buffers_) args.push_back(&p);
    return cuda_status(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(blocks_),
                                        dim3(256), args.data(), 0, stream),
                       "cudaLaunchKernel (" + name_ + ")");
  }
  std::string describe() const {
    return "generated " + name_ + " (" + std::to_string(n_ == 0 ? 0 : blocks_) +
           " blocks of 256)";
  }

 private:
  cudaKernel_t kernel_;
  std::string name_;
  int64_t n_;
  unsigned blocks_ = 1;
  std::vector<void*> buffers_;
  ClearRanges clear_;
};

class GeneratedBound : public Executor::Bound {
 public:
  explicit GeneratedBound(Launch launch) : launch_(std::move(launch)) {}
  Status run(Device& d, int) override { return launch_.run(d.stream); }
  std::string describe() const override { return launch_.describe(); }

 private:
  Launch launch_;
};

// No CUDA kernel: the reference interpreter runs a one-node graph of the invocation on
// the host, between a synchronized stream and a copy of its result back.
class HostOp {
 public:
  HostOp(const Node& node, std::vector<Type> operand_types, const Type& result,
         std::vector<const void*> in, void* out)
      : graph_("fallback"), types_(std::move(operand_types)), in_(std::move(in)), out_(out),
        result_bytes_(result.bytes()) {
    std::vector<ValueId> operands;
    for (size_t i = 0; i < types_.size(); ++i) {
      operands.push_back(graph_.add_input("in" + std::to_string(i), types_[i]));
    }
    ValueId r = graph_.add_node(node.op, operands, node.attrs, node.loc, result);
    graph_.mutable_nodes().back().body = node.body;
    graph_.add_output(r);
  }
  Status run(cudaStream_t stream) {
    const std::string what = "reference " + op();
    WEFT_RETURN_IF_ERROR(
        cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize (before " + what + ")"));
    std::vector<Tensor> args;
    args.reserve(in_.size());
    for (size_t i = 0; i < in_.size(); ++i) {
      args.emplace_back(types_[i]);
      WEFT_RETURN_IF_ERROR(cuda_status(
          cudaMemcpy(args.back().raw_data(), in_[i], types_[i].bytes(), cudaMemcpyDeviceToHost),
          "cudaMemcpy (operand " + std::to_string(i) + " of " + what + ")"));
    }
    WEFT_ASSIGN_OR_RETURN(reference::RunResult r, reference::run(graph_, std::move(args)));
    // Synchronous: the host result dies with this call.
    return cuda_status(
        cudaMemcpy(out_, r.outputs[0].raw_data(), result_bytes_, cudaMemcpyHostToDevice),
        "cudaMemcpy (result of " + what + ")");
  }
  std::string describe() const {
    return "reference " + std::string(op_name(graph_.nodes()[0].op)) + " (no CUDA kernel)";
  }

 private:
  std::string op() const { return std::string(op_name(graph_.nodes()[0].op)); }

  Graph graph_;
  std::vector<Type> types_;
  std::vector<const void*> in_;
  void* out_;
  size_t result_bytes_;
};

class FallbackBound : public Executor::Bound {
 public:
  explicit FallbackBound(HostOp op) : op_(std::move(op)) {}
  Status run(Device& d, int) override { return op_.run(d.stream); }
  std::string describe() const override { return op_.describe(); }
  bool on_host() const override { return true; }

 private:
  HostOp op_;
};

// A matmul planned for cuBLAS (plan.h, gemm.cc).
struct Gemm {
  MatmulPlan plan;
  DType dtype;
  const void* a;
  const void* b;
  void* c;
  size_t c_bytes;

  Status run(Device& d) const {
    return run_matmul(d.cublas, d.stream, plan, dtype, a, b, c, c_bytes);
  }
  std::string describe() const { return "cublas " + plan.describe(dtype); }
};

class MatmulBound : public Executor::Bound {
 public:
  explicit MatmulBound(Gemm gemm) : gemm_(std::move(gemm)) {}
  Status run(Device& d, int) override { return gemm_.run(d); }
  std::string describe() const override { return gemm_.describe(); }

 private:
  Gemm gemm_;
};

// A contraction: the GEMM into C (cuBLAS, or the reference interpreter for what cuBLAS
// does not run), then the epilogue kernel.
class ContractionBound : public Executor::Bound {
 public:
  ContractionBound(std::optional<Gemm> gemm, std::optional<HostOp> host, Launch epilogue)
      : gemm_(std::move(gemm)), host_(std::move(host)), epilogue_(std::move(epilogue)) {}
  Status run(Device& d, int) override {
    WEFT_RETURN_IF_ERROR(gemm_ ? gemm_->run(d) : host_->run(d.stream));
    return epilogue_.run(d.stream);
  }
  std::string describe() const override {
    return (gemm_ ? gemm_->describe() : host_->describe()) + " + " + epilogue_.describe();
  }
  bool on_host() const override { return !gemm_; }

 private:
  std::optional<Gemm> gemm_;
  std::optional<HostOp> host_;
  Launch epilogue_;
};

// A copy invocation, or a one-process all_reduce (whose sum or mean over one rank is its
// operand).
class CopyBound : public Executor::Bound {
 public:
  CopyBound(const void* from, void* to, size_t bytes, std::string what)
      : from_(from), to_(to), bytes_(bytes), what_(std::move(what)) {}
  Status run(Device& d, int) override {
    if (from_ == to_ || bytes_ == 0) return Status::ok_status();
    return cuda_status(cudaMemcpyAsync(to_, from_, bytes_, cudaMemcpyDeviceToDevice, d.stream),
                       "cudaMemcpyAsync (" + what_ + ")");
  }
  std::string describe() const override {
    return what_ + " " + std::to_string(bytes_) + " bytes" + (from_ == to_ ? " (in place)" : "");
  }

 private:
  const void* from_;
  void* to_;
  size_t bytes_;
  std::string what_;
};

// See constant_bound (device.h).
class ConstantBound : public Executor::Bound {
 public:
  ConstantBound(void* value, void* to, size_t bytes, std::string op)
      : value_(value), to_(to), bytes_(bytes), op_(std::move(op)) {}
  ~ConstantBound() override { cudaFree(value_); }
  Status run(Device& d, int) override {
    return cuda_status(cudaMemcpyAsync(to_, value_, bytes_, cudaMemcpyDeviceToDevice, d.stream),
                       "cudaMemcpyAsync (constant " + op_ + ")");
  }
  std::string describe() const override {
    return "constant " + op_ + " " + std::to_string(bytes_) + " bytes (computed once)";
  }
  size_t owned_bytes() const override { return bytes_; }

 private:
  void* value_;
  void* to_;
  size_t bytes_;
  std::string op_;
};

}  // namespace

StatusOr<BoundPtr> constant_bound(const Node& node, const Type& result, void* out) {
  Graph g("constant");
  const ValueId r = g.add_node(node.op, {}, node.attrs, node.loc, result);
  g.add_output(r);
  WEFT_ASSIGN_OR_RETURN(reference::RunResult value, reference::run(g, {}));
  const std::string op(op_name(node.op));
  const size_t bytes = result.bytes();
  void* device = nullptr;
  WEFT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&device, std::max<size_t>(bytes, 1)),
                                   "cudaMalloc (constant " + op + ")"));
  Status copied = cuda_status(
      cudaMemcpy(device, value.outputs[0].raw_data(), bytes, cudaMemcpyHostToDevice),
      "cudaMemcpy (constant " + op + ")");
  if (!copied.ok()) {
    cudaFree(device);
    return copied.error();
  }
  return BoundPtr(std::make_unique<ConstantBound>(device, out, bytes, op));
}

BoundPtr generated_bound(cudaKernel_t kernel, const GeneratedKernel& k, std::vector<void*> buffers,
                         ClearRanges clear) {
  return std::make_unique<GeneratedBound>(Launch(kernel, k, std::move(buffers), std::move(clear)));
}

BoundPtr matmul_bound(MatmulPlan plan, DType dtype, const void* a, const void* b, void* c,
                      size_t c_bytes) {
  return std::make_unique<MatmulBound>(Gemm{std::move(plan), dtype, a, b, c, c_bytes});
}

BoundPtr fallback_bound(const Node& node, std::vector<Type> operand_types, const Type& result,
                        std::vector<const void*> in, void* out) {
  return std::make_unique<FallbackBound>(
      HostOp(node, std::move(operand_types), result, std::move(in), out));
}

BoundPtr contraction_bound(const Node& node, std::optional<MatmulPlan> plan, const Type& a_type,
                           const Type& b_type, const Type& c_type, const void* a, const void* b,
                           void* c, cudaKernel_t kernel, const GeneratedKernel& k,
                           std::vector<void*> buffers) {
  Launch epilogue(kernel, k, std::move(buffers), {});
  if (plan) {
    return std::make_unique<ContractionBound>(
        Gemm{std::move(*plan), a_type.dtype, a, b, c, c_type.bytes()}, std::nullopt,
        std::move(epilogue));
  }
  return std::make_unique<ContractionBound>(
      std::nullopt, HostOp(node, {a_type, b_type}, c_type, {a, b}, c), std::move(epilogue));
}

BoundPtr copy_bound(const void* from, void* to, size_t bytes, std::string what) {
  return std::make_unique<CopyBound>(from, to, bytes, std::move(what));
}

}  // namespace weft::cuda
