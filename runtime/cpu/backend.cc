// Registers the "cpu" backend (runtime/backend.h): a Program bound by cpu::Executor, with
// every optional feature (zero-copy inputs, check-numerics, profiles, MPI ranks).
#include "runtime/cpu/backend.h"

#include "runtime/backend.h"
#include "runtime/cpu/executor.h"

namespace weft::cpu {

ExecutorOptions executor_options(const BindOptions& options) {
  return {.num_threads = options.num_threads,
          .max_memory = options.max_memory,
          .communicator = options.communicator,
          .all_reduce_bucket_bytes = options.all_reduce_bucket_bytes,
          .first_all_reduce_bucket_bytes = options.first_all_reduce_bucket_bytes};
}

namespace {

StatusOr<std::unique_ptr<ProgramExecutor>> bind(Program program, DeviceCode code,
                                                 const BindOptions& options) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex, Executor::create(std::move(program), std::move(code.host_kernels),
                                                                       executor_options(options)));
  return std::unique_ptr<ProgramExecutor>(std::move(ex));
}

// Every hook receives an executor bind() made.
Executor& cpu(ProgramExecutor& ex) { return static_cast<Executor&>(ex); }

const bool registered = register_backend({
    .name = "cpu",
    .bind = bind,
    .host_input_data = [](ProgramExecutor& ex, int index) { return cpu(ex).input_data(index); },
    .set_check_numerics = [](ProgramExecutor& ex, bool on) { cpu(ex).set_check_numerics(on); },
    .set_profiling = [](ProgramExecutor& ex, bool on) { cpu(ex).set_profiling(on); },
    .profile_report =
        [](const ProgramExecutor& ex, int top) {
          return static_cast<const Executor&>(ex).profile_report(top);
        },
    .multi_rank = true,
});

}  // namespace
}  // namespace weft::cpu
