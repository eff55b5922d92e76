#pragma once
// The CPU runtime: runs a Program (runtime/program.h) on the machine's cores.
//
//   // codegen::compile_for_cpu lowers a graph and JIT-compiles its kernels; an AOT
//   // binary passes the function pointers of its object code instead.
//   StatusOr<std::unique_ptr<Executor>> ex = Executor::create(program, kernel_fns);
//   (*ex)->set_input("x", batch);        // copies into the input's own buffer
//   Status s = (*ex)->run();             // one step: every invocation, then the updates
//   Tensor loss = (*ex)->output(0);
//
// Everything is decided in create(): the arena and the inputs block (every graph input
// at its Program::input_offsets entry, 64-byte aligned, the padding between them zeroed)
// are allocated, each invocation is bound to its pointers — a library
// kernel (runtime/cpu/kernel.h) with its descriptors and scratch, a generated kernel with
// its buffer table and row partition — so run() walks a flat array of bound kernels:
// no allocation, no hashing, no graph.
//
// Threads: one persistent ThreadPool (runtime/cpu/thread_pool.h) shared by every kernel;
// generated kernels split their rows over it, library kernels their loops and library
// calls. For a fixed thread count a step is bitwise reproducible.
//
// Fallback: an op with no CPU kernel for its dtypes (create() counts them in
// fallbacks()) runs through the reference interpreter for that one invocation; it is
// correct but allocates, and the Program dump lists it.
//
// Collectives: an `all_reduce` invocation runs through ExecutorOptions::communicator
// (runtime/collective/communicator.h), in place on its result's buffer (the operand is
// copied there first when the memory plan put them apart); with no communicator it is
// a one-process step, where all_reduce changes nothing. With more than one rank the
// invocations are bucketed by runtime/collective/bucket_plan.h: each copies its operand
// into its bucket's staging slice; the bucket's last member starts one collective call
// on the slice (Communicator::start_all_reduce: MPI_Iallreduce), and the step waits for
// it only before the first invocation that touches one of the bucket's results (for a
// training step, the optimizer update after the backward pass), or at the end of the
// step; then every result is copied out. Meanwhile the step goes on computing: after
// each invocation it lets the transport progress the reductions in flight
// (PendingReduction::test: MPI_Testall, or only a flag where MPI's progress thread
// drives them; runtime/collective/README.md, "Progress").
// all_reduce_us() adds up the time spent in those calls.
// With overlap_all_reduce off, each reduction is waited for as soon as it starts.
// An all_reduce with a predicate (its bool[] second operand) copies its operand and makes
// no call where the predicate is false (a bucket of them reads it when it would start).
// Under check-numerics, results of bucketed all_reduce invocations are not scanned
// (their operands were).
//
// Loops: a loop invocation (runtime/program.h) runs its body through an Executor of its
// own (its arena and carries apart from the root's, counted by its own memory check),
// whose invocations run on this executor's thread pool. Its code is bound once per slot
// in create() as runtime/loop_slots.h plans it: reading the loop's consts and that slot
// of each xs where they lie in this executor's buffers, writing each ys it can straight
// into its slot of the stacked result, and keeping a carry in a ys's slots where it can
// (chained: read in the previous slot; shifted: written into the next) — or, where
// binding per slot would take memory growing with the trip count (loop_slot_bindings),
// bound once, with each iteration's xs and ys copied. Per step the initial carries are
// copied into the body's inputs (a chained carry reads its operand in place, a shifted
// one is copied into its ys's first slot), and per iteration each ys not written in its
// slot is copied there, and each next carry back into the body's input unless the body
// wrote it there (codegen's carries_assigned) or it stays in a ys. Its line in describe()
// counts the calls and bytes it copies per iteration.
//
// Updates: after the last invocation each `assign`'s value is copied into its param or
// state buffer, so parameters and optimizer state persist in the executor between steps.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/collective/bucket_plan.h"
#include "runtime/collective/communicator.h"
#include "runtime/cpu/thread_pool.h"
#include "runtime/executor.h"
#include "runtime/loop_slots.h"
#include "runtime/program.h"
#include "runtime/tensor.h"

namespace weft::cpu {

/// runtime/loop_slots.h's, which every executor binds a loop by.
using ::weft::loop_slot_bindings;

struct ExecutorOptions {
  int num_threads = 0;  ///< 0: default_num_threads() ($WEFT_NUM_THREADS or the cores).
  /// The most bytes the arena and the input buffers may take together; 0: the machine's
  /// MemAvailable (/proc/meminfo; no limit where it cannot be read). create() refuses a
  /// larger plan before allocating anything, naming its size and largest buffers.
  int64_t max_memory = 0;
  /// Start with set_check_numerics(true).
  bool check_numerics = false;
  /// What runs the program's all_reduce invocations; nullptr: collective::single_process().
  std::shared_ptr<collective::Communicator> communicator = nullptr;
  /// With more than one rank, all_reduce invocations of one dtype and reduction share a
  /// bucket — one collective call — of up to this many bytes (PyTorch DDP's default
  /// bucket size); 0: one call per invocation.
  int64_t all_reduce_bucket_bytes = int64_t{25} << 20;
  /// The first bucket of each dtype and reduction closes at this many bytes (PyTorch
  /// DDP's 1 MiB first bucket), so the first reduction starts early in the backward pass.
  int64_t first_all_reduce_bucket_bytes = int64_t{1} << 20;
  /// With more than one rank: a bucket's reduction runs while the step goes on and is
  /// waited for before the first invocation that needs its results (true), or is waited
  /// for as soon as it starts (false: blocking). Both give bitwise the same results.
  bool overlap_all_reduce = true;
  /// Loops write their ys in their slots and keep carries there where runtime/loop_slots.h
  /// allows (true), or copy every ys and carry per iteration (false: as before #31, for
  /// comparisons). Both give bitwise the same results.
  bool loop_slots = true;
};

/// The check create() makes: ok, or the error naming the Program's arena, input bytes,
/// the limit (and where it comes from) and the three largest buffers.
Status check_memory(const Program& program, const ExecutorOptions& options);

class Executor : public ProgramExecutor {
 public:
  /// Binds `program`. `generated[k]` is the compiled function of program.kernels[k].
  /// Errors: a library kernel that refuses its attributes.
  static StatusOr<std::unique_ptr<Executor>> create(Program program,
                                                    std::vector<GeneratedFn> generated,
                                                    ExecutorOptions options = {});
  ~Executor() override;

  const Program& program() const override { return program_; }
  ThreadPool& pool() { return *pool_; }

  /// Copies `value` into input `index`. Errors name the input and both types.
  Status set_input(int index, const Tensor& value) override;
  using ProgramExecutor::set_input;  // By name.
  /// A copy of input `index`'s current value (parameters after the last step's update).
  Tensor input(int index) const override;
  void* input_data(int index) { return input_ptr_[index]; }

  /// One step. A kernel's runtime error (a gather index out of range) stops the step
  /// and is returned with the op's location; the updates are then not applied.
  Status run() override;

  int num_outputs() const override { return static_cast<int>(program_.outputs.size()); }
  Tensor output(int index) const override;

  /// Per-invocation timing: while enabled, run() adds each invocation's wall time to a
  /// table that profile_report() prints (the top invocations, their share of the step,
  /// and the time of the invocations that write parameters/state in place: the update).
  /// With WEFT_PROFILE_CLOCK=thread in the environment when profiling is enabled, the
  /// calling thread's CPU time is added instead: with one thread (WEFT_NUM_THREADS=1)
  /// every kernel runs on that thread, so the figures hardly move when other processes
  /// load the machine (the wall time of a preempted kernel does).
  void set_profiling(bool on);
  std::string profile_report(int top = 25) const;
  /// Microseconds per profiled step of each invocation (program().code order); empty
  /// before a profiled step.
  std::vector<double> profile_us_per_step() const;

  /// check-numerics ([Reliability]): while enabled, run() checks every float input before
  /// the step and every invocation's results after it, and stops at the first NaN or
  /// infinity with the error of runtime/reference/numerics.h — the op and its source
  /// location; inside a generated kernel, the body node that produced it (found by
  /// running the body on the reference interpreter). The updates are then not applied.
  /// Inside a loop's body, the body's invocation that made it, with the iteration
  /// (", in iteration 2 of the loop at model.wir:4:3"; nested loops name each level).
  void set_check_numerics(bool on);
  bool checks_numerics() const { return check_numerics_; }

  /// Bytes of the one scratch block the library kernels share (convolutions' im2col
  /// columns, oneDNN's blocked layouts and scratchpads: BoundKernel::scratch_bytes), the
  /// largest kernel's need; and what the kernels would hold with a block each. Not
  /// counted by check_memory (it is not part of the Program's plan).
  int64_t scratch_bytes() const { return scratch_bytes_; }
  int64_t unshared_scratch_bytes() const { return unshared_scratch_bytes_; }

  /// Microseconds that run() has spent so far inside the communicator's calls for
  /// bucketed all_reduce invocations (starting, progressing and waiting for reductions):
  /// with overlap, the communication the steps did not hide; blocking, all of it.
  double all_reduce_us() const { return all_reduce_.ns / 1e3; }
  /// The collective calls that run() has made so far for bucketed all_reduce invocations,
  /// one per bucket reduced (a predicated bucket whose predicate was false made none),
  /// and the elements they reduced.
  int64_t all_reduce_calls() const { return all_reduce_.calls; }
  int64_t all_reduce_elements() const { return all_reduce_.elements; }

  /// What the buckets add up as the steps run (all_reduce_us, _calls, _elements).
  struct AllReduceTally {
    double ns = 0;
    int64_t calls = 0;
    int64_t elements = 0;
  };

  /// Invocations that run through the reference interpreter (no CPU kernel).
  int fallbacks() const override { return fallbacks_; }

  /// A loop's body: runs every invocation on `pool` (no updates: a body has none), as
  /// bound for slot `slot` (runtime/loop_slots.h) when the executor was bound per slot,
  /// else as bound once.
  Status run_body(ThreadPool& pool, int64_t slot = -1);
  /// Where output `index` lives (a loop copies its body's outputs from there): for a body
  /// bound per slot, as slot `slot` binds it (an output that is a const or an xs input
  /// lies in the parent's buffer, one written in its slot there).
  const void* output_data(int index, int64_t slot = -1) const;
  /// One line per invocation: its kind and what it runs ("onednn sgemm 128x256x784").
  std::string describe() const override;

  struct Bound;  ///< A bound invocation (executor.cc).

 private:
  Executor() = default;
  /// create, and for a loop's body instead one copy of the code per slot, bound as
  /// `slots[i]` says (runtime/loop_slots.h: inputs and sites in the parent's buffers).
  static StatusOr<std::unique_ptr<Executor>> create_bound(Program program, std::vector<GeneratedFn> generated,
                                                          ExecutorOptions options,
                                                          std::vector<LoopSlotBinding> slots);
  class Binder;  ///< Binds invocations to one set of buffers (executor.cc).
  // The steps of create_bound, in order (executor.cc).
  /// The arena and the inputs block, zeroed; input_ptr_. Errors: an allocation that fails.
  Status allocate_blocks(const Program& program);
  /// bucket_plan_ and its staging block, with more than one rank and buckets enabled.
  Status plan_buckets(const Program& program, const ExecutorOptions& options,
                      const collective::Communicator& comm);
  /// code_ bound to this executor's buffers, or, for a loop body, one code in slots_ per
  /// entry of `slots`.
  Status bind_code(Binder& binder, std::vector<LoopSlotBinding> slots);
  /// The block the update snapshots are copied into (runtime/binding.h, snapshot_layout).
  void allocate_snapshots(const Program& program);
  /// One scratch block for every library kernel, as large as the largest need.
  void share_scratch();

  /// The input addresses slot `slot`'s code is bound to: input_ptr_, with the inputs read
  /// in the parent's buffers (slot_bindings_[slot].inputs) in their place.
  std::vector<void*> slot_input_ptrs(size_t slot) const;
  void* resolve(const BufferRef& ref) const;
  /// Operand (or result) `position` of invocation `index`, as the code being checked is
  /// bound (checked_patches_).
  const void* address(size_t index, bool result, size_t position) const;
  void apply_updates();
  Status run_invocation(size_t index);  ///< code_[index] on the pool.
  Status run_checking_numerics();                  // executor_checks.cc
  /// A loop body's `code` (bound for `slot`) run on `pool`, each invocation checked.
  Status run_body_checking_numerics(ThreadPool& pool, const std::vector<std::unique_ptr<Bound>>& code,
                                    int64_t slot);
  /// Copies of the operands of invocation `index` when its results may need explaining
  /// (a generated kernel may write over an operand in place).
  std::vector<Tensor> operands_to_explain(size_t index) const;
  Status check_invocation_numerics(size_t index, std::vector<Tensor> operands);

  Program program_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<std::byte[], void (*)(std::byte*)> arena_{nullptr, nullptr};
  std::unique_ptr<std::byte[], void (*)(std::byte*)> inputs_block_{nullptr, nullptr};
  std::vector<void*> input_ptr_;
  std::vector<std::unique_ptr<Bound>> code_;
  /// A loop body's code bound once per slot (create_bound); empty otherwise.
  std::vector<std::vector<std::unique_ptr<Bound>>> slots_;
  /// How each slot of a loop body is bound (create_bound's slots).
  std::vector<LoopSlotBinding> slot_bindings_;
  /// The patches of the slot whose code is being checked (run_body_checking_numerics).
  const std::vector<SlotPatch>* checked_patches_ = nullptr;
  /// Copies of the update values that are inputs (runtime/binding.h, snapshot_layout).
  std::unique_ptr<std::byte[], void (*)(std::byte*)> snapshot_block_{nullptr, nullptr};
  std::vector<std::byte*> snapshots_;
  std::unique_ptr<std::byte[], void (*)(std::byte*)> scratch_{nullptr, nullptr};
  int64_t scratch_bytes_ = 0;
  int64_t unshared_scratch_bytes_ = 0;
  int fallbacks_ = 0;
  bool profiling_ = false;
  bool check_numerics_ = false;
  bool bucketed_all_reduce_ = false;  ///< Some all_reduce results are written by a bucket.
  collective::BucketPlan bucket_plan_;  ///< Empty with one rank (runtime/collective/bucket_plan.h).
  std::unique_ptr<std::byte[], void (*)(std::byte*)> staging_{nullptr, nullptr};  ///< The buckets' slices.
  AllReduceTally all_reduce_;  ///< all_reduce_us(), _calls(), _elements().
  int64_t profiled_steps_ = 0;
  /// The profile's clock in nanoseconds: steady wall time, or the thread's CPU time.
  double profile_clock_ns() const;
  bool profile_thread_clock_ = false;
  std::vector<double> profile_ns_;  ///< Per invocation, then the updates, summed over steps.
};

}  // namespace weft::cpu
