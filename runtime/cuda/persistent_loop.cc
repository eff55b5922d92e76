#include "runtime/cuda/persistent_loop.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/binding.h"
#include "runtime/cuda/recurrent_kernel.h"
#include "runtime/cuda/recurrent_plan.h"

namespace weft::cuda {
namespace {

using Device = Executor::Device;

struct PersistentLoopBound : Executor::Bound {
  ~PersistentLoopBound() override {
    for (void* p : {arena_, inputs_, arrays_, barrier_}) {
      if (p != nullptr) cudaFree(p);
    }
  }

  Status run(Device& d, int) override {
    for (const LoopCopy& c : plan_.before) WEFT_RETURN_IF_ERROR(copy(d, c, "initial carry"));
    WEFT_RETURN_IF_ERROR(
        cuda_status(launch_recurrent(device_view_, barrier_, launch_, d.stream), "launch_recurrent (loop over @" + name_ + ")"));
    for (const LoopCopy& c : plan_.after) WEFT_RETURN_IF_ERROR(copy(d, c, "last carry"));
    return Status::ok_status();
  }

  std::string describe() const override {
    return "persistent loop " + std::to_string(plan_.program.length) + "x over @" + name_ + " (" +
           std::to_string(plan_.body_invocations) + " invocations as " + std::to_string(plan_.program.phases.size()) +
           " phases, " + std::to_string(plan_.copy_phases) + " of them copies; one launch of " +
           std::to_string(launch_.blocks) + " blocks x " + std::to_string(launch_.threads) + " threads, " +
           std::to_string(launch_.shared_bytes) + " shared bytes" + matmul_math() + ")";
  }
  /// "; 2 bf16 matmuls on tensor cores (…)" when the body has low-precision matmuls.
  std::string matmul_math() const {
    const std::string math = describe_matmul_math(plan_.program.view(), launch_);
    return math.empty() ? "" : "; " + math;
  }
  size_t owned_bytes() const override { return owned_; }

  static Status copy(Device& d, const LoopCopy& c, const char* what) {
    if (c.to == c.from || c.bytes == 0) return Status::ok_status();
    return cuda_status(cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyDeviceToDevice, d.stream),
                       std::string("cudaMemcpyAsync (persistent loop: ") + what + ")");
  }

  // The program's arrays and its launch's placements (matmul_placements, worked out
  // here once) in one device block, each 16-byte aligned; device_view_ points into it.
  Status copy_arrays(const std::string& what) {
    const RecurrentProgram& p = plan_.program;
    const std::vector<MatmulPlacement> table = matmul_placements(p.view(), launch_);
    const auto align = [](size_t n) { return (n + 15) / 16 * 16; };
    const size_t buffers = align(p.buffers.size() * sizeof(StepAddress));
    const size_t phases = align(p.phases.size() * sizeof(RecurrentPhase));
    const size_t maps = align(p.maps.size() * sizeof(ElementMap));
    const size_t instrs = align(p.instrs.size() * sizeof(CellInstr));
    const size_t placements = align(table.size() * sizeof(MatmulPlacement));
    const size_t total = buffers + phases + maps + instrs + placements;
    WEFT_RETURN_IF_ERROR(device_allocate(arrays_, static_cast<int64_t>(total), "program of " + what));
    owned_ += std::max<size_t>(total, 1);
    auto* at = static_cast<std::byte*>(arrays_);
    const auto put = [&](const void* host, size_t bytes, size_t room) -> StatusOr<void*> {
      void* device = at;
      if (bytes > 0) {
        WEFT_RETURN_IF_ERROR(cuda_status(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice),
                                         "cudaMemcpy (program of " + what + ")"));
      }
      at += room;
      return device;
    };
    device_view_ = p.view();
    WEFT_ASSIGN_OR_RETURN(void* b, put(p.buffers.data(), p.buffers.size() * sizeof(StepAddress), buffers));
    WEFT_ASSIGN_OR_RETURN(void* ph, put(p.phases.data(), p.phases.size() * sizeof(RecurrentPhase), phases));
    WEFT_ASSIGN_OR_RETURN(void* m, put(p.maps.data(), p.maps.size() * sizeof(ElementMap), maps));
    WEFT_ASSIGN_OR_RETURN(void* in, put(p.instrs.data(), p.instrs.size() * sizeof(CellInstr), instrs));
    WEFT_ASSIGN_OR_RETURN(void* pl, put(table.data(), table.size() * sizeof(MatmulPlacement), placements));
    device_view_.buffers = static_cast<const StepAddress*>(b);
    device_view_.phases = static_cast<const RecurrentPhase*>(ph);
    device_view_.maps = static_cast<const ElementMap*>(m);
    device_view_.instrs = static_cast<const CellInstr*>(in);
    device_view_ = with_placements(device_view_, static_cast<const MatmulPlacement*>(pl), launch_.blocks,
                                   launch_.shared_bytes);
    return Status::ok_status();
  }

  std::string name_;
  void* arena_ = nullptr;    // the body's arena
  void* inputs_ = nullptr;   // the body's inputs block
  void* arrays_ = nullptr;   // the program's arrays (device_view_ points into it)
  void* barrier_ = nullptr;  // the grid barrier, zeroed once, then the split-K scratch
  size_t owned_ = 0;
  RecurrentPlan plan_;  // host arrays: the launch plan reads them, describe() counts them
  RecurrentProgramView device_view_;
  RecurrentLaunch launch_;
};

}  // namespace

StatusOr<PersistentLoop> persistent_loop_bound(Device& d, const Program& root, const Invocation& inv,
                                               const std::vector<const void*>& in, const std::vector<void*>& results) {
  Program body = root.bodies[static_cast<size_t>(inv.body)];
  check_layout(body, "cuda::Executor (persistent loop body)");
  auto loop = std::make_unique<PersistentLoopBound>();
  PersistentLoopBound& l = *loop;
  l.name_ = body.name;
  const std::string what = "persistent loop body @" + body.name;
  WEFT_RETURN_IF_ERROR(device_allocate(l.arena_, body.arena_bytes, "arena of " + what));
  WEFT_RETURN_IF_ERROR(device_allocate(l.inputs_, body.inputs_bytes, "inputs block of " + what));
  l.owned_ = static_cast<size_t>(loop_body_bytes(body));  // device_memory.h
  PersistentLoop out;
  StatusOr<RecurrentPlan> plan = plan_recurrent_loop(root, inv, {in, results, l.arena_, l.inputs_});
  if (!plan.ok()) {
    out.refusal = plan.error().message;
    return out;
  }
  l.plan_ = std::move(*plan);
  StatusOr<RecurrentLaunch> launch = plan_recurrent_launch(l.plan_.program.view(), d.ordinal);
  if (!launch.ok()) {
    out.refusal = launch.error().message;
    return out;
  }
  l.launch_ = *launch;
  WEFT_RETURN_IF_ERROR(l.copy_arrays(what));
  // The barrier's counter, then the split-K scratch its launch chose (recurrent_kernel.h).
  const size_t barrier_bytes = recurrent_barrier_bytes() + l.launch_.workspace_bytes;
  WEFT_RETURN_IF_ERROR(device_allocate(l.barrier_, static_cast<int64_t>(barrier_bytes), "barrier of " + what));
  l.owned_ += std::max<size_t>(barrier_bytes, 1);
  out.bound = std::move(loop);
  return out;
}

}  // namespace weft::cuda
