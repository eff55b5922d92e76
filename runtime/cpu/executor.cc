#include "runtime/cpu/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <new>

#include "runtime/binding.h"
#include "runtime/collective/bucket_plan.h"
#include "runtime/cpu/executor_bound.h"
#include "runtime/cpu/kernel.h"
#include "runtime/reference/interpreter.h"

namespace weft::cpu {

namespace {

using Buffer = std::unique_ptr<std::byte[], void (*)(std::byte*)>;

Buffer allocate(int64_t bytes) {
  const size_t size = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, size);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, size);
  return Buffer(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

class LibraryBound : public Executor::Bound {
 public:
  explicit LibraryBound(std::unique_ptr<BoundKernel> k) : kernel_(std::move(k)) {}
  Status run(ThreadPool& pool) override { return kernel_->run(pool); }
  std::string describe() const override { return kernel_->describe(); }
  BoundKernel* kernel() override { return kernel_.get(); }

 private:
  std::unique_ptr<BoundKernel> kernel_;
};

// A generated kernel: its rows split over the pool, at least ~16K elements per chunk so
// that small kernels run on the caller alone.
class GeneratedBound : public Executor::Bound {
 public:
  GeneratedBound(GeneratedFn fn, std::vector<void*> buffers, const GeneratedKernel& k,
                 std::vector<std::pair<void*, size_t>> clear)
      : fn_(fn), buffers_(std::move(buffers)), rows_(k.rows), name_(k.name),
        clear_(std::move(clear)) {
    grain_ = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, k.row_length));
  }
  Status run(ThreadPool& pool) override {
    for (const auto& [at, bytes] : clear_) std::memset(at, 0, bytes);
    void* const* buffers = buffers_.data();
    GeneratedFn fn = fn_;
    pool.parallel_for(rows_, grain_, [fn, buffers](int64_t begin, int64_t end) {
      fn(buffers, begin, end);
    });
    return Status::ok_status();
  }
  std::string describe() const override { return "generated " + name_; }

 private:
  GeneratedFn fn_;
  std::vector<void*> buffers_;
  int64_t rows_;
  int64_t grain_;
  std::string name_;
  std::vector<std::pair<void*, size_t>> clear_;  // Invocation::clear
};

class CopyBound : public Executor::Bound {
 public:
  CopyBound(const void* from, void* to, size_t bytes) : from_(from), to_(to), bytes_(bytes) {}
  Status run(ThreadPool&) override {
    std::memcpy(to_, from_, bytes_);
    return Status::ok_status();
  }
  std::string describe() const override { return "copy " + std::to_string(bytes_) + " bytes"; }

 private:
  const void* from_;
  void* to_;
  size_t bytes_;
};

// No CPU kernel: the reference interpreter runs a one-node graph of the invocation.
class FallbackBound : public Executor::Bound {
 public:
  FallbackBound(const Node& node, const std::vector<Type>& operand_types, const Type& result,
                std::vector<const void*> in, void* out)
      : graph_("fallback"), in_(std::move(in)), out_(out), result_bytes_(result.bytes()) {
    std::vector<ValueId> operands;
    for (size_t i = 0; i < operand_types.size(); ++i) {
      operands.push_back(graph_.add_input("in" + std::to_string(i), operand_types[i]));
      types_.push_back(operand_types[i]);
    }
    ValueId r = graph_.add_node(node.op, operands, node.attrs, node.loc, result);
    graph_.mutable_nodes().back().body = node.body;
    graph_.add_output(r);
  }
  Status run(ThreadPool&) override {
    std::vector<Tensor> args;
    args.reserve(in_.size());
    for (size_t i = 0; i < in_.size(); ++i) {
      args.emplace_back(types_[i]);
      std::memcpy(args.back().raw_data(), in_[i], types_[i].bytes());
    }
    WEFT_ASSIGN_OR_RETURN(reference::RunResult r, reference::run(graph_, std::move(args)));
    std::memcpy(out_, r.outputs[0].raw_data(), result_bytes_);
    return Status::ok_status();
  }
  std::string describe() const override {
    return "reference " + std::string(op_name(graph_.nodes()[0].op)) + " (no CPU kernel)";
  }

 private:
  Graph graph_;
  std::vector<Type> types_;
  std::vector<const void*> in_;
  void* out_;
  size_t result_bytes_;
};

using BoundPtr = std::unique_ptr<Executor::Bound>;

}  // namespace

Executor::~Executor() = default;

Status Executor::run_body(ThreadPool& pool, int64_t slot) {
  const auto& code = slot >= 0 && !slots_.empty() ? slots_[static_cast<size_t>(slot)] : code_;
  if (check_numerics_) return run_body_checking_numerics(pool, code, slot);
  for (const std::unique_ptr<Bound>& b : code) WEFT_RETURN_IF_ERROR(b->run(pool));
  return Status::ok_status();
}

void Executor::set_check_numerics(bool on) {
  check_numerics_ = on;
  for (auto& b : code_) b->set_check_numerics(on);
  for (auto& slot : slots_) {
    for (auto& b : slot) b->set_check_numerics(on);
  }
}

const void* Executor::output_data(int index, int64_t slot) const {
  const BufferRef& ref = program_.outputs[static_cast<size_t>(index)];
  if (slot >= 0 && !slot_bindings_.empty()) {
    const LoopSlotBinding& s = slot_bindings_[static_cast<size_t>(slot)];
    if (const void* p = s.outputs[static_cast<size_t>(index)]) return p;
    if (ref.space == Space::input) {
      if (const void* p = s.inputs[static_cast<size_t>(ref.input)]) return p;
    }
  }
  return resolve(ref);
}

void* Executor::resolve(const BufferRef& ref) const { return buffer_address(ref, arena_.get(), input_ptr_); }

const void* Executor::address(size_t index, bool result, size_t position) const {
  const Invocation& inv = program_.code[index];
  const void* own = resolve(result ? inv.results[position] : inv.operands[position]);
  if (checked_patches_ == nullptr) return own;
  return patched_address(*checked_patches_, {index, result, position}, own);
}

// Binds a Program's invocations to one set of buffers (the arena, an address per input),
// one Bound each: create_bound runs it on the executor's own buffers, or once per slot of
// a loop's body. It counts the fallbacks of the bindings it is told to.
class Executor::Binder {
 public:
  /// `plan`: the buckets (none with one rank); `staging`: their staging block;
  /// `tally`: where the buckets add up their time in the communicator and count the
  /// reductions they start.
  Binder(const Program& program, const std::vector<GeneratedFn>& generated, const ExecutorOptions& options,
         std::shared_ptr<collective::Communicator> comm, const collective::BucketPlan& plan, std::byte* staging,
         AllReduceTally* tally)
      : program_(program), generated_(generated), options_(options), comm_(std::move(comm)), plan_(plan),
        staging_(staging), tally_(tally) {}

  /// Every invocation bound to `arena` and `inputs`, then `patches` (a loop body's slot,
  /// runtime/loop_slots.h); `count`: add its fallbacks to fallbacks() (the executor's own
  /// code, or a loop body's first slot).
  StatusOr<std::vector<BoundPtr>> bind(std::byte* arena, const std::vector<void*>& inputs, bool count,
                                       const std::vector<SlotPatch>& patches = {});
  int fallbacks() const { return fallbacks_; }
  /// Whether some all_reduce invocation was bound into a bucket.
  bool bucketed() const { return bucketed_; }

 private:
  StatusOr<BoundPtr> bind_invocation(size_t index, InvocationBuffers b, bool count);
  StatusOr<BoundPtr> bind_contraction(const Invocation& inv, InvocationBuffers b);
  StatusOr<BoundPtr> bind_loop(const Invocation& inv, const InvocationBuffers& b, bool count);
  StatusOr<BoundPtr> bind_library(size_t index, const Invocation& inv, const InvocationBuffers& b, bool count);

  const Program& program_;
  const std::vector<GeneratedFn>& generated_;
  /// The plan's buckets bound to `arena` and `inputs` (their members' results).
  BoundBuckets bind_buckets(std::byte* arena, const std::vector<void*>& inputs) const;

  const ExecutorOptions& options_;
  std::shared_ptr<collective::Communicator> comm_;
  const collective::BucketPlan& plan_;
  std::byte* staging_;
  AllReduceTally* tally_;
  BoundBuckets buckets_;  ///< Of the binding in progress.
  int fallbacks_ = 0;
  bool bucketed_ = false;
};

StatusOr<std::vector<BoundPtr>> Executor::Binder::bind(std::byte* arena, const std::vector<void*>& inputs,
                                                       bool count, const std::vector<SlotPatch>& patches) {
  std::vector<BoundPtr> code;
  buckets_ = bind_buckets(arena, inputs);
  for (size_t index = 0; index < program_.code.size(); ++index) {
    InvocationBuffers b = resolve_buffers(program_.code[index],
                                          [&](const BufferRef& r) { return buffer_address(r, arena, inputs); });
    apply_slot_patches(patches, index, b);
    WEFT_ASSIGN_OR_RETURN(BoundPtr bound, bind_invocation(index, std::move(b), count));
    code.push_back(with_bucket_sync(std::move(bound), index, program_.code.size(), buckets_));
  }
  return code;
}

BoundBuckets Executor::Binder::bind_buckets(std::byte* arena, const std::vector<void*>& inputs) const {
  BoundBuckets buckets;
  for (const collective::Bucket& k : plan_.buckets) {
    std::vector<void*> results;
    for (const collective::BucketMember& m : k.members) results.push_back(buffer_address(m.result, arena, inputs));
    const bool* predicate =
        k.predicate ? static_cast<const bool*>(buffer_address(*k.predicate, arena, inputs)) : nullptr;
    buckets.push_back(make_bound_bucket(k, comm_, staging_ + k.staging_offset, predicate,
                                                    std::move(results), options_.overlap_all_reduce, tally_,
                                                    bucket_in_flight(program_, k)));
  }
  return buckets;
}

StatusOr<BoundPtr> Executor::Binder::bind_invocation(size_t index, InvocationBuffers b, bool count) {
  const Invocation& inv = program_.code[index];
  switch (inv.kind) {
    case Invocation::Kind::generated:
      return BoundPtr(std::make_unique<GeneratedBound>(generated_[inv.kernel], b.kernel_args(),
                                                       program_.kernels[inv.kernel], std::move(b.clear)));
    case Invocation::Kind::contraction:
      return bind_contraction(inv, std::move(b));
    case Invocation::Kind::copy:
      return BoundPtr(std::make_unique<CopyBound>(b.in[0], b.out(), inv.results[0].type.bytes()));
    case Invocation::Kind::loop:
      return bind_loop(inv, b, count);
    case Invocation::Kind::library:
      return bind_library(index, inv, b, count);
  }
  WEFT_CHECK(false, "cpu::Executor: an invocation of unknown kind");
  return BoundPtr();
}

// A GEMM with a generated epilogue (gemm_epilogue.cc).
StatusOr<BoundPtr> Executor::Binder::bind_contraction(const Invocation& inv, InvocationBuffers b) {
  void* c = b.results[static_cast<size_t>(inv.gemm_result)];
  std::vector<void*> buffers = b.epilogue_args(inv.gemm_result);
  const GeneratedKernel& k = program_.kernels[inv.kernel];
  LibraryCall gemm{inv.node, {b.types[0], b.types[1]}, inv.results[inv.gemm_result].type};
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<BoundKernel> bound,
                        make_gemm_epilogue_kernel(gemm, b.in[0], b.in[1], c, generated_[inv.kernel],
                                                  std::move(buffers), k.rows, k.row_length, k.name));
  if (!bound) {
    return Error{"program @" + program_.name + ": no CPU kernel runs " + std::string(op_name(inv.node.op)) +
                     " on " + b.types[0].to_string() + " and " + b.types[1].to_string() + " with an epilogue",
                 inv.node.loc};
  }
  return BoundPtr(std::make_unique<LibraryBound>(std::move(bound)));
}

// A loop: its body bound as an executor of its own (executor.h, "Loops"). The body shares
// this Program's kernels and bodies; its invocations run on this executor's pool (its own
// has no workers).
StatusOr<BoundPtr> Executor::Binder::bind_loop(const Invocation& inv, const InvocationBuffers& b, bool count) {
  Program body = program_.bodies[static_cast<size_t>(inv.body)];
  body.kernels = program_.kernels;
  body.bodies = program_.bodies;
  ExecutorOptions body_options = options_;
  body_options.num_threads = 1;
  LoopSlots plan = options_.loop_slots ? plan_loop_slots(body, inv, b.in, b.results) : no_loop_slots(body, inv);
  std::vector<LoopSlotBinding> slots;
  for (int64_t i = 0, n = loop_slot_bindings(inv, body); i < n; ++i) {
    slots.push_back(bind_loop_slot(plan, body, inv, b.in, b.results, i));
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Executor> bound,
                        create_bound(std::move(body), generated_, body_options, std::move(slots)));
  if (count) fallbacks_ += bound->fallbacks();
  return make_loop_bound(std::move(bound), inv, b.in, b.results, std::move(plan));
}

// A library kernel (kernel.h); an all_reduce through the communicator, alone or as a
// member of its bucket; the reference interpreter where no CPU kernel runs the op.
StatusOr<BoundPtr> Executor::Binder::bind_library(size_t index, const Invocation& inv, const InvocationBuffers& b,
                                                  bool count) {
  if (inv.node.op == Op::AllReduce) {
    if (const int k = plan_.bucket_of.empty() ? -1 : plan_.bucket_of[index]; k >= 0) {
      bucketed_ = true;
      const std::vector<collective::BucketMember>& members = plan_.buckets[static_cast<size_t>(k)].members;
      const size_t member = static_cast<size_t>(
          std::find_if(members.begin(), members.end(), [&](const auto& m) { return m.invocation == index; }) -
          members.begin());
      return BoundPtr(make_bucket_member_bound(buckets_[static_cast<size_t>(k)], member, b.in[0],
                                                          inv.node.loc));
    }
    WEFT_ASSIGN_OR_RETURN(collective::Reduction reduction, collective::parse_reduction(inv.node.str_attr("reduction")));
    const bool* predicate = b.in.size() > 1 ? static_cast<const bool*>(b.in[1]) : nullptr;
    return BoundPtr(make_all_reduce_bound(comm_, reduction, b.in[0], predicate, b.out(),
                                                     inv.results[0].type, inv.node.loc));
  }
  LibraryCall call{inv.node, b.types, inv.results[0].type};
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<BoundKernel> k, make_library_kernel(call, b.in, b.out()));
  if (k) return BoundPtr(std::make_unique<LibraryBound>(std::move(k)));
  if (count) ++fallbacks_;
  return BoundPtr(std::make_unique<FallbackBound>(inv.node, b.types, inv.results[0].type, b.in, b.out()));
}

StatusOr<std::unique_ptr<Executor>> Executor::create(Program program,
                                                     std::vector<GeneratedFn> generated,
                                                     ExecutorOptions options) {
  return create_bound(std::move(program), std::move(generated), std::move(options), {});
}

StatusOr<std::unique_ptr<Executor>> Executor::create_bound(Program program, std::vector<GeneratedFn> generated,
                                                           ExecutorOptions options,
                                                           std::vector<LoopSlotBinding> slots) {
  WEFT_CHECK(generated.size() == program.kernels.size(),
             "Executor::create: one function per generated kernel");
  check_layout(program, "cpu::Executor::create");
  if (std::string problem = thread_count_problem(options.num_threads); !problem.empty()) return Error(problem);
  WEFT_RETURN_IF_ERROR(check_memory(program, options));
  std::unique_ptr<Executor> ex(new Executor());
  ex->check_numerics_ = options.check_numerics;
  ex->pool_ = std::make_unique<ThreadPool>(options.num_threads);
  WEFT_RETURN_IF_ERROR(ex->allocate_blocks(program));
  std::shared_ptr<collective::Communicator> comm =
      options.communicator ? options.communicator : collective::single_process();
  WEFT_RETURN_IF_ERROR(ex->plan_buckets(program, options, *comm));
  Binder binder(program, generated, options, std::move(comm), ex->bucket_plan_, ex->staging_.get(),
                &ex->all_reduce_);
  WEFT_RETURN_IF_ERROR(ex->bind_code(binder, std::move(slots)));
  ex->fallbacks_ = binder.fallbacks();
  ex->bucketed_all_reduce_ = binder.bucketed();
  ex->allocate_snapshots(program);
  ex->share_scratch();
  ex->program_ = std::move(program);
  return ex;
}

Status Executor::plan_buckets(const Program& program, const ExecutorOptions& options,
                              const collective::Communicator& comm) {
  // One rank, or one call per invocation: no buckets.
  if (comm.world_size() <= 1 || options.all_reduce_bucket_bytes <= 0) return Status::ok_status();
  WEFT_ASSIGN_OR_RETURN(bucket_plan_,
                        collective::plan_buckets(program, {options.first_all_reduce_bucket_bytes,
                                                           options.all_reduce_bucket_bytes}));
  staging_ = allocate(bucket_plan_.staging_bytes);
  return Status::ok_status();
}

Status Executor::allocate_blocks(const Program& program) {
  try {
    arena_ = allocate(program.arena_bytes);
    // Zeroed, like the arena: the alignment padding between inputs (which a merged update
    // computes on and never reads back) holds defined bytes from the start.
    inputs_block_ = allocate(program.inputs_bytes);
  } catch (const std::bad_alloc&) {
    return Error{"cannot allocate the arena of program @" + program.name + " (" +
                 std::to_string(program.arena_bytes) + " bytes) and its inputs (" +
                 std::to_string(program.inputs_bytes) + " bytes)"};
  }
  for (int64_t at : program.input_offsets) input_ptr_.push_back(inputs_block_.get() + at);
  return Status::ok_status();
}

std::vector<void*> Executor::slot_input_ptrs(size_t slot) const {
  std::vector<void*> inputs = input_ptr_;
  const std::vector<const void*>& in = slot_bindings_[slot].inputs;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] != nullptr) inputs[k] = const_cast<void*>(in[k]);
  }
  return inputs;
}

Status Executor::bind_code(Binder& binder, std::vector<LoopSlotBinding> slots) {
  // A loop's body is bound once per slot instead (runtime/loop_slots.h), with the slot's
  // inputs read and its ys written in place in the parent's buffers: no copies per
  // iteration. The first slot's binding counts the fallbacks.
  if (slots.empty()) {
    WEFT_ASSIGN_OR_RETURN(code_, binder.bind(arena_.get(), input_ptr_, /*count=*/true));
  }
  slot_bindings_ = std::move(slots);
  for (size_t slot = 0; slot < slot_bindings_.size(); ++slot) {
    WEFT_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Bound>> code,
                          binder.bind(arena_.get(), slot_input_ptrs(slot), /*count=*/slot == 0,
                                      slot_bindings_[slot].patches));
    slots_.push_back(std::move(code));
  }
  return Status::ok_status();
}

void Executor::allocate_snapshots(const Program& program) {
  // An update whose value is itself an input (assign(%a, %b)) must read %b's old value
  // even when %b is updated too: such values are snapshotted before any update lands.
  int64_t snapshot_bytes = 0;
  const std::vector<int64_t> snapshot_at = snapshot_layout(program, 64, &snapshot_bytes);
  if (snapshot_at.empty()) return;
  snapshot_block_ = allocate(snapshot_bytes);
  for (int64_t at : snapshot_at) snapshots_.push_back(snapshot_block_.get() + at);
}

void Executor::share_scratch() {
  // One scratch block for every library kernel (invocations run one at a time), as
  // large as the largest need; not zeroed, so its pages are touched only when used.
  std::vector<std::vector<std::unique_ptr<Bound>>*> all = {&code_};
  for (auto& slot : slots_) all.push_back(&slot);
  for (auto* code : all) {
    for (auto& bound : *code) {
      if (BoundKernel* k = bound->kernel()) {
        scratch_bytes_ = std::max(scratch_bytes_, k->scratch_bytes());
        unshared_scratch_bytes_ += (k->scratch_bytes() + 63) / 64 * 64;
      }
    }
  }
  if (scratch_bytes_ > 0) {
    void* p = std::aligned_alloc(64, static_cast<size_t>((scratch_bytes_ + 63) / 64 * 64));
    if (p == nullptr) throw std::bad_alloc();
    scratch_ = Buffer(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
  }
  for (auto* code : all) {
    for (auto& bound : *code) {
      if (BoundKernel* k = bound->kernel(); k && k->scratch_bytes() > 0) k->set_scratch(scratch_.get());
    }
  }
}

Status Executor::set_input(int index, const Tensor& value) {
  WEFT_RETURN_IF_ERROR(check_input(index, value));
  std::memcpy(input_ptr_[index], value.raw_data(), value.bytes());
  return Status::ok_status();
}

Tensor Executor::input(int index) const {
  Tensor t(program_.inputs[index].type);
  std::memcpy(t.raw_data(), input_ptr_[index], t.bytes());
  return t;
}

Status Executor::run() {
  if (check_numerics_) return run_checking_numerics();
  if (profiling_) {
    for (size_t i = 0; i < code_.size(); ++i) {
      const double start = profile_clock_ns();
      WEFT_RETURN_IF_ERROR(code_[i]->run(*pool_));
      profile_ns_[i] += profile_clock_ns() - start;
    }
    ++profiled_steps_;
  } else {
    for (const std::unique_ptr<Bound>& b : code_) WEFT_RETURN_IF_ERROR(b->run(*pool_));
  }
  apply_updates();
  return Status::ok_status();
}

Status Executor::run_invocation(size_t index) { return code_[index]->run(*pool_); }

void Executor::apply_updates() {
  size_t next = 0;
  for (const Update& u : program_.updates) {
    if (u.from.space != Space::input) continue;
    std::memcpy(snapshots_[next++], resolve(u.from), u.from.type.bytes());
  }
  next = 0;
  for (const Update& u : program_.updates) {
    const void* from = u.from.space == Space::input ? snapshots_[next++] : resolve(u.from);
    std::memcpy(input_ptr_[u.input], from, program_.inputs[u.input].type.bytes());
  }
}

Tensor Executor::output(int index) const {
  const BufferRef& ref = program_.outputs[index];
  Tensor t(ref.type);
  std::memcpy(t.raw_data(), resolve(ref), t.bytes());
  return t;
}

std::string Executor::describe() const {
  std::string out;
  for (size_t i = 0; i < code_.size(); ++i) {
    out += std::to_string(i) + "  " + code_[i]->describe() + "\n";
  }
  return out;
}

}  // namespace weft::cpu
