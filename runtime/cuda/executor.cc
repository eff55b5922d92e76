#include "runtime/cuda/executor.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/ab_switch.h"
#include "runtime/binding.h"
#include "runtime/cuda/architecture.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/nccl_communicator.h"

namespace weft::cuda {

Status cuda_status(cudaError_t error, const std::string& call) {
  if (error == cudaSuccess) return Status::ok_status();
  // Reported here, once: a failed call also leaves its error as the thread's last error,
  // which the next kernel launch's check (cudaGetLastError) would otherwise report
  // again, against an innocent kernel (a sticky error stays whatever is done here).
  cudaGetLastError();
  return Error{call + ": " + cudaGetErrorString(error)};
}

bool available() { return unavailable_reason().empty(); }

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // leave no error behind for later calls to report
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error);
  }
  if (count == 0) return "cudaGetDeviceCount: 0 devices";
  return "";
}

namespace {

// Loads the PTX module; a JIT error comes back with the compiler's log.
Status load_module(const std::string& ptx, cudaLibrary_t& library) {
  char log[4096] = {};
  cudaJitOption options[] = {cudaJitErrorLogBuffer, cudaJitErrorLogBufferSizeBytes};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(log)))};
  const cudaError_t error =
      cudaLibraryLoadData(&library, ptx.c_str(), options, values, 2, nullptr, nullptr, 0);
  if (error == cudaSuccess) return Status::ok_status();
  std::string message = std::string("cudaLibraryLoadData (the program's PTX): ") +
                        cudaGetErrorString(error);
  if (log[0] != '\0') message += ": " + std::string(log);
  return Error{message};
}

// Whether device `ordinal` can run this build's library kernels, the generated `ptx` and
// what `program` needs of its tensor cores (architecture.h), before anything is bound.
Status check_device_architecture(int ordinal, const std::string& ptx, const Program& program) {
  cudaDeviceProp prop{};
  WEFT_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties"));
  const DeviceArchitecture device{.ordinal = ordinal, .name = prop.name, .major = prop.major, .minor = prop.minor};
  WEFT_RETURN_IF_ERROR(check_architecture(device, ptx));
  return check_features(device, program);
}

// The bytes a step reduces (every bucket's).
int64_t reduced_bytes(const collective::BucketPlan& plan) {
  int64_t bytes = 0;
  for (const collective::Bucket& b : plan.buckets) bytes += b.bytes();
  return bytes;
}

// ExecutorOptions::accumulation's step input, where accumulation applies: an i64[] input.
Status check_step_input(const Program& program, const ExecutorOptions::Accumulation& a) {
  const bool scalar_i64 = a.step_input >= 0 && static_cast<size_t>(a.step_input) < program.inputs.size() &&
                          program.inputs[static_cast<size_t>(a.step_input)].type == Type{DType::i64, Shape{}};
  if (scalar_i64) return Status::ok_status();
  return Error{"cuda::Executor: gradient accumulation over " + std::to_string(a.steps) +
               " micro-batches needs the step number's input (ExecutorOptions::accumulation.step_input, "
               "an i64[]), but input " + std::to_string(a.step_input) + " of program @" + program.name +
               " is not one"};
}

// The executor runs where its NCCL communicator was started.
Status check_nccl_device(const NcclCommunicator& nccl, int device) {
  if (nccl.device() == device) return Status::ok_status();
  return Error{"cuda::Executor on CUDA device " + std::to_string(device) + " was given NCCL's communicator of device " +
               std::to_string(nccl.device()) + " (" + nccl.describe() + "): bind on the communicator's device"};
}

}  // namespace

Status device_allocate(void*& p, int64_t bytes, const std::string& what) {
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  WEFT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&p, size), "cudaMalloc (" + what + ", " +
                                                             std::to_string(size) + " bytes)"));
  return cuda_status(cudaMemset(p, 0, size), "cudaMemset (" + what + ")");
}

namespace {

// Makes `ordinal` the current device, once it is known to exist, and checks that it runs
// this build's kernels, the generated `ptx` and what `program` needs of it.
Status select_device(int ordinal, const std::string& ptx, const Program& program) {
  if (const std::string why = unavailable_reason(); !why.empty()) {
    return Error{"no CUDA device: " + why};
  }
  int count = 0;
  WEFT_RETURN_IF_ERROR(cuda_status(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (ordinal < 0 || ordinal >= count) {
    return Error{"CUDA device " + std::to_string(ordinal) + " does not exist (" +
                 std::to_string(count) + " devices)"};
  }
  WEFT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(ordinal), "cudaSetDevice"));
  return check_device_architecture(ordinal, ptx, program);
}

// Whether the program fits the memory limit (the device's free memory when none is set)
// and, without a host fallback, runs every invocation on the device.
Status check_fits(const Program& program, const ExecutorOptions& options) {
  int64_t limit = options.max_memory;
  std::string limit_source = "the memory limit";
  if (limit <= 0) {
    size_t free = 0, total = 0;
    WEFT_RETURN_IF_ERROR(cuda_status(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"));
    limit = static_cast<int64_t>(free);
    limit_source = "free memory of CUDA device " + std::to_string(options.device);
  }
  WEFT_RETURN_IF_ERROR(check_memory(program, limit, limit_source));
  if (!options.allow_host_fallback) WEFT_RETURN_IF_ERROR(check_device_only(program));
  return Status::ok_status();
}

// The step's stream and handles: cuBLAS (and cuBLASLt where switched on), the input copy
// stream, NCCL's buckets.
Status open_device(Executor::Device& d, const Program& program, const ExecutorOptions& options) {
  d.ordinal = options.device;
  d.convolutions = options.convolutions;
  if (options.tf32) {  // a plan names tf32 only where the device has its tensor cores
    int major = 0, minor = 0;
    WEFT_RETURN_IF_ERROR(cuda_status(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d.ordinal), "cudaDeviceGetAttribute"));
    WEFT_RETURN_IF_ERROR(cuda_status(
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d.ordinal), "cudaDeviceGetAttribute"));
    d.tf32 = runs_tf32({.ordinal = d.ordinal, .major = major, .minor = minor});
  }
  WEFT_RETURN_IF_ERROR(cuda_status(cudaStreamCreate(&d.stream), "cudaStreamCreate"));
  WEFT_RETURN_IF_ERROR(cublas_status(cublasCreate(&d.cublas), "cublasCreate"));
  WEFT_RETURN_IF_ERROR(cublas_status(cublasSetStream(d.cublas, d.stream), "cublasSetStream"));
  WEFT_RETURN_IF_ERROR(
      cublas_status(cublasSetMathMode(d.cublas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode"));
  // Opt-in until measured on a GPU (tests/cuda/cublaslt_check.sh decides the default).
  if (switched_on("WEFT_CUBLASLT_EPILOGUE")) {
    WEFT_RETURN_IF_ERROR(cublas_status(cublasLtCreate(&d.cublaslt), "cublasLtCreate"));
  }
  if (options.input_prefetch) {
    WEFT_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&d.copy_stream, cudaStreamNonBlocking),
                                     "cudaStreamCreateWithFlags (the input copy stream)"));
    d.prefetched.resize(program.inputs.size());
  }
  if (options.nccl) {
    WEFT_RETURN_IF_ERROR(check_nccl_device(*options.nccl, options.device));
    d.nccl = options.nccl;
    WEFT_RETURN_IF_ERROR(plan_collectives(
        d, program, {options.first_all_reduce_bucket_bytes, options.all_reduce_bucket_bytes}));
  }
  return Status::ok_status();
}

// The arena and the inputs block, and each input's address in it.
Status allocate_blocks(Executor::Device& d, const Program& program, std::vector<void*>& input_ptr) {
  WEFT_RETURN_IF_ERROR(device_allocate(d.arena, program.arena_bytes, "arena of program @" + program.name));
  // Zeroed, like the arena: the alignment padding between inputs (which a merged update
  // computes on and never reads back) holds defined bytes from the start.
  WEFT_RETURN_IF_ERROR(
      device_allocate(d.inputs, program.inputs_bytes, "inputs block of program @" + program.name));
  for (int64_t at : program.input_offsets) {
    input_ptr.push_back(static_cast<std::byte*>(d.inputs) + at);
  }
  return Status::ok_status();
}

// The program's generated kernels, from its PTX.
StatusOr<std::vector<cudaKernel_t>> load_kernels(Executor::Device& d, const Program& program, const std::string& ptx,
                                                 const std::vector<std::string>& symbols) {
  std::vector<cudaKernel_t> kernels;
  if (program.kernels.empty()) return kernels;
  if (ptx.empty()) {
    return Error{"program @" + program.name + " has " + std::to_string(program.kernels.size()) +
                 " generated kernels but no PTX was given"};
  }
  WEFT_RETURN_IF_ERROR(load_module(ptx, d.library));
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    cudaKernel_t kernel = nullptr;
    WEFT_RETURN_IF_ERROR(cuda_status(
        cudaLibraryGetKernel(&kernel, d.library, symbols[k].c_str()),
        // The runtime compiles the PTX lazily: a module that does not compile is
        // reported here, as "device kernel image is invalid".
        "cudaLibraryGetKernel (" + program.kernels[k].name + ", symbol \"" + symbols[k] +
            "\" in the program's PTX)"));
    kernels.push_back(kernel);
  }
  return kernels;
}

// An update whose value is itself an input (assign(%a, %b)) must read %b's old value
// even when %b is updated too: such values are snapshotted before any update lands.
Status allocate_snapshots(Executor::Device& d, const Program& program, std::vector<void*>& snapshots) {
  int64_t snapshot_bytes = 0;
  const std::vector<int64_t> snapshot_at = snapshot_layout(program, 256, &snapshot_bytes);
  if (snapshot_at.empty()) return Status::ok_status();
  d.snapshot_bytes = static_cast<size_t>(snapshot_bytes);
  WEFT_RETURN_IF_ERROR(device_allocate(d.snapshots, snapshot_bytes, "update snapshots"));
  for (int64_t at : snapshot_at) {
    snapshots.push_back(static_cast<std::byte*>(d.snapshots) + at);
  }
  return Status::ok_status();
}

// The shared workspace: the largest need of any invocation, and cuBLAS's (given its own
// workspace so that nothing is allocated while a step is captured or replayed).
Status allocate_workspace(Executor::Device& d, const std::vector<BoundPtr>& code) {
  size_t workspace = kCublasWorkspaceBytes;
  for (const BoundPtr& b : code) workspace = std::max(workspace, b->workspace_bytes());
  WEFT_RETURN_IF_ERROR(device_allocate(d.workspace, static_cast<int64_t>(workspace), "workspace"));
  d.workspace_bytes = workspace;
  return cublas_status(cublasSetWorkspace(d.cublas, d.workspace, workspace), "cublasSetWorkspace");
}

// The mapped host flag through which kernels report a device error.
Status map_error_flag(Executor::Device& d) {
  WEFT_RETURN_IF_ERROR(cuda_status(
      cudaHostAlloc(reinterpret_cast<void**>(&d.error), sizeof(DeviceError), cudaHostAllocMapped),
      "cudaHostAlloc (device error flag)"));
  *d.error = DeviceError{};
  return cuda_status(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d.device_error), d.error, 0),
                     "cudaHostGetDevicePointer (device error flag)");
}

}  // namespace

Executor::Executor() = default;
Executor::~Executor() = default;

void* Executor::resolve(const BufferRef& ref) const { return buffer_address(ref, device_->arena, input_ptr_); }

StatusOr<std::unique_ptr<Executor>> Executor::create(Program program, std::string ptx,
                                                     std::vector<std::string> symbols,
                                                     ExecutorOptions options) {
  WEFT_RETURN_IF_ERROR(select_device(options.device, ptx, program));
  WEFT_CHECK(symbols.size() == program.kernels.size(),
             "cuda::Executor::create: one symbol per generated kernel");
  check_layout(program, "cuda::Executor::create");
  // Refuse a plan that cannot fit before allocating anything.
  WEFT_RETURN_IF_ERROR(check_fits(program, options));

  std::unique_ptr<Executor> ex(new Executor());
  ex->device_ = std::make_unique<Device>();
  Device& d = *ex->device_;
  WEFT_RETURN_IF_ERROR(open_device(d, program, options));
  WEFT_RETURN_IF_ERROR(allocate_blocks(d, program, ex->input_ptr_));
  WEFT_ASSIGN_OR_RETURN(const std::vector<cudaKernel_t> kernels, load_kernels(d, program, ptx, symbols));

  Binder binder(d, program, kernels);
  WEFT_ASSIGN_OR_RETURN(ex->code_,
                        binder.bind(program, d.arena, ex->input_ptr_, nullptr));
  ex->fallbacks_ = binder.fallbacks;
  ex->body_sites_ = std::move(binder.sites);
  ex->schedule_ = schedule_step(program, d.buckets);
  if (d.nccl && options.accumulation.steps > 1 && has_predicated_bucket(d.buckets)) {
    WEFT_RETURN_IF_ERROR(check_step_input(program, options.accumulation));
    ex->accumulation_ = options.accumulation;
    ex->accumulate_schedule_ = schedule_step(program, d.buckets, StepVariant::accumulate);
  }
  WEFT_RETURN_IF_ERROR(allocate_snapshots(d, program, ex->snapshots_));
  WEFT_RETURN_IF_ERROR(allocate_workspace(d, ex->code_));
  WEFT_RETURN_IF_ERROR(map_error_flag(d));
  ex->program_ = std::move(program);
  const bool on_host = std::any_of(ex->code_.begin(), ex->code_.end(),
                                   [](const BoundPtr& b) { return b->on_host(); });
  if (options.cuda_graph && !on_host) WEFT_RETURN_IF_ERROR(ex->capture_graph());
  return ex;
}

bool Executor::uses_cuda_graph() const { return device_->graph_exec != nullptr; }

StatusOr<std::vector<double>> Executor::profile_step() {
  Device& d = *device_;
  WEFT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(d.ordinal), "cudaSetDevice"));
  *d.error = DeviceError{};
  std::vector<cudaEvent_t> events(code_.size() + 1, nullptr);
  Status s;
  for (cudaEvent_t& e : events) {
    if (s.ok()) s = cuda_status(cudaEventCreate(&e), "cudaEventCreate (profile)");
  }
  // A bucket's start and wait count toward the invocation after them.
  if (s.ok()) {
    s = enqueue_step([&](size_t i) {
      return cuda_status(cudaEventRecord(events[i], d.stream), "cudaEventRecord (profile)");
    });
  }
  const Status synced = cuda_status(cudaStreamSynchronize(d.stream), "cudaStreamSynchronize (profile)");
  std::vector<double> ms(code_.size(), 0.0);
  for (size_t i = 0; i < code_.size() && s.ok() && synced.ok(); ++i) {
    float t = 0;
    s = cuda_status(cudaEventElapsedTime(&t, events[i], events[i + 1]), "cudaEventElapsedTime");
    ms[i] = t;
  }
  for (cudaEvent_t e : events) {
    if (e) cudaEventDestroy(e);
  }
  WEFT_RETURN_IF_ERROR(s);
  WEFT_RETURN_IF_ERROR(synced);
  return ms;
}

int64_t Executor::device_bytes() const {
  const Device& d = *device_;
  size_t bytes = static_cast<size_t>(std::max<int64_t>(program_.arena_bytes, 1)) +
                 static_cast<size_t>(std::max<int64_t>(program_.inputs_bytes, 1)) +
                 d.workspace_bytes + d.snapshot_bytes + d.prefetch_bytes;
  for (const BoundPtr& b : code_) bytes += b->owned_bytes();
  return static_cast<int64_t>(bytes);
}

StepVariant Executor::next_variant() const {
  if (accumulate_schedule_.empty()) return StepVariant::reduce;
  return variant_of_step(next_step_, accumulation_.steps);
}

Status Executor::capture_graph() {
  Device& d = *device_;
  // Each variant is one capture of the same bound invocations: both graphs use the one
  // arena, staging block and events, and run() replays one of them at a time.
  auto capture = [&](StepVariant variant, cudaGraph_t& graph, cudaGraphExec_t& exec) -> Status {
    const std::string what = std::string(variant == StepVariant::reduce ? "the step" : "the accumulating step") +
                             " of program @" + program_.name;
    WEFT_RETURN_IF_ERROR(cuda_status(cudaStreamBeginCapture(d.stream, cudaStreamCaptureModeThreadLocal),
                                     "cudaStreamBeginCapture (" + what + ")"));
    const Status enqueued = enqueue_step(nullptr, variant);
    const cudaError_t ended = cudaStreamEndCapture(d.stream, &graph);
    WEFT_RETURN_IF_ERROR(enqueued);
    WEFT_RETURN_IF_ERROR(cuda_status(ended, "cudaStreamEndCapture (" + what + ")"));
    return cuda_status(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate (" + what + ")");
  };
  WEFT_RETURN_IF_ERROR(capture(StepVariant::reduce, d.graph, d.graph_exec));
  if (accumulate_schedule_.empty()) return Status::ok_status();
  return capture(StepVariant::accumulate, d.accumulate_graph, d.accumulate_graph_exec);
}

Status Executor::set_input(int index, const Tensor& value) {
  WEFT_RETURN_IF_ERROR(check_input(index, value));
  WEFT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device_->ordinal), "cudaSetDevice"));
  // The host keeps the step number too: it picks the next step's variant.
  if (index == accumulation_.step_input) next_step_ = value.data<int64_t>()[0];
  const std::string what = "input %" + program_.inputs[index].name;
  WEFT_ASSIGN_OR_RETURN(const bool prefetched, take_prefetched(*device_, index, value, input_ptr_[index], what));
  if (prefetched) return Status::ok_status();
  // Ordered on the step's stream, before the next run(), without waiting for the
  // previous one: from pageable memory the call returns once `value` is staged; from
  // pinned memory (the data Loader's buffers) at once, the DMA reading `value` until
  // run() synchronizes, so the caller leaves it unchanged until then.
  return cuda_status(cudaMemcpyAsync(input_ptr_[index], value.raw_data(), value.bytes(),
                                     cudaMemcpyHostToDevice, device_->stream),
                     "cudaMemcpyAsync (" + what + ")");
}

namespace {

Tensor copy_to_host(int device, const void* from, const Type& type, const std::string& what) {
  Tensor t(type);
  Status s = cuda_status(cudaSetDevice(device), "cudaSetDevice");
  if (s.ok()) {
    s = cuda_status(cudaMemcpy(t.raw_data(), from, t.bytes(), cudaMemcpyDeviceToHost),
                    "cudaMemcpy (" + what + ")");
  }
  WEFT_CHECK(s.ok(), "cuda::Executor: " + s.to_string());
  return t;
}

}  // namespace

Tensor Executor::input(int index) const {
  return copy_to_host(device_->ordinal, input_ptr_[index], program_.inputs[index].type,
                      "input %" + program_.inputs[index].name);
}

Tensor Executor::output(int index) const {
  const BufferRef& ref = program_.outputs[index];
  return copy_to_host(device_->ordinal, resolve(ref), ref.type,
                      "output " + std::to_string(index));
}

Error Executor::invocation_error(Error e, size_t i) const {
  if (e.loc.file.empty()) e.loc = program_.code[i].node.loc;
  e.message += " (invocation #" + std::to_string(i) + ", %" + program_.code[i].label +
               " of program @" + program_.name + ")";
  return e;
}

Status Executor::enqueue_step(const std::function<Status(size_t)>& before, StepVariant variant) {
  Device& d = *device_;
  const bool accumulating = variant == StepVariant::accumulate && !accumulate_schedule_.empty();
  for (const StepAction& a : accumulating ? accumulate_schedule_ : schedule_) {
    switch (a.kind) {
      case StepAction::Kind::invoke: {
        if (before) WEFT_RETURN_IF_ERROR(before(a.index));
        Status s = code_[a.index]->run(d, static_cast<int>(a.index));
        if (!s.ok()) return invocation_error(s.error(), a.index);
        break;
      }
      case StepAction::Kind::start_bucket: WEFT_RETURN_IF_ERROR(start_bucket(d, a.index, false)); break;
      case StepAction::Kind::start_bucket_unpredicated: WEFT_RETURN_IF_ERROR(start_bucket(d, a.index, true)); break;
      case StepAction::Kind::wait_bucket: WEFT_RETURN_IF_ERROR(wait_bucket(d, a.index)); break;
    }
  }
  if (before) WEFT_RETURN_IF_ERROR(before(code_.size()));
  return apply_updates();
}

Status Executor::run() {
  Device& d = *device_;
  WEFT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(d.ordinal), "cudaSetDevice"));
  *d.error = DeviceError{};  // the previous step has finished: run() synchronizes
  // With NCCL reductions in the step, a peer that died or hangs stalls them on the GPU:
  // the communicator's watchdog aborts NCCL and exits after --collective-timeout.
  const int64_t reduced = d.nccl ? reduced_bytes(d.buckets) : 0;
  if (reduced > 0) d.nccl->watch_step(reduced);
  const StepVariant variant = next_variant();
  cudaGraphExec_t graph = variant == StepVariant::accumulate ? d.accumulate_graph_exec : d.graph_exec;
  Status s = graph != nullptr ? cuda_status(cudaGraphLaunch(graph, d.stream),
                                            "cudaGraphLaunch (the step of program @" + program_.name + ")")
                              : enqueue_step(nullptr, variant);
  // Leave nothing in flight, also after an error (then s is the one to report).
  const Status synced =
      cuda_status(cudaStreamSynchronize(d.stream),
                  "cudaStreamSynchronize (end of the step of program @" + program_.name + ")");
  if (reduced > 0) d.nccl->end_step();
  WEFT_RETURN_IF_ERROR(s);
  WEFT_RETURN_IF_ERROR(synced);
  const DeviceError found = *d.error;
  if (found.code == kNoError || found.invocation < 0) return Status::ok_status();
  const size_t at = static_cast<size_t>(found.invocation);
  if (at < code_.size()) return invocation_error(code_[at]->device_error(found), at);
  if (at - code_.size() < body_sites_.size()) {  // inside a loop's body
    const BodySite& site = body_sites_[at - code_.size()];
    Error e = site.bound->device_error(found);
    if (e.loc.file.empty()) e.loc = site.loc;
    return invocation_error(std::move(e), site.root);
  }
  return Status::ok_status();
}

Status Executor::apply_updates() {
  cudaStream_t stream = device_->stream;
  size_t next = 0;
  for (const Update& u : program_.updates) {
    if (u.from.space != Space::input) continue;
    WEFT_RETURN_IF_ERROR(cuda_status(
        cudaMemcpyAsync(snapshots_[next++], resolve(u.from), u.from.type.bytes(),
                        cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync (snapshot of an update's value)"));
  }
  next = 0;
  for (const Update& u : program_.updates) {
    const void* from = u.from.space == Space::input ? snapshots_[next++] : resolve(u.from);
    if (from == input_ptr_[u.input]) continue;
    WEFT_RETURN_IF_ERROR(cuda_status(
        cudaMemcpyAsync(input_ptr_[u.input], from, program_.inputs[u.input].type.bytes(),
                        cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync (update of %" + program_.inputs[u.input].name + ")"));
  }
  return Status::ok_status();
}

std::string Executor::describe() const {
  std::string out;
  for (size_t i = 0; i < code_.size(); ++i) {
    out += std::to_string(i) + "  " + code_[i]->describe() + "\n";
  }
  if (device_->nccl) out += collective::describe(device_->buckets) + "(" + device_->nccl->describe() + ")\n";
  if (!accumulate_schedule_.empty()) {
    // The accumulating variant's bucket starts (its invocations are the step's).
    std::vector<StepAction> starts;
    for (const StepAction& a : accumulate_schedule_) {
      if (a.kind == StepAction::Kind::start_bucket_unpredicated) starts.push_back(a);
    }
    out += "gradient accumulation over " + std::to_string(accumulation_.steps) +
           " micro-batches: two captured steps; a window's last micro-batch reduces every bucket, the others:\n" +
           cuda::describe(starts, program_, device_->buckets);
  }
  return out;
}

}  // namespace weft::cuda
