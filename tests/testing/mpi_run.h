#pragma once
// Launching a test program under Open MPI from a test (data_parallel_test,
// aot_data_parallel_test, communicator_mpi_test, the examples' test): the environment it
// needs here and one retry on its known shutdown race.

#include <cstdio>
#include <string>

#include "tests/testing/subprocess.h"

namespace weft::testing {

// Open MPI refuses root without these; shared memory and loopback only, no daemons
// looked for on other hosts. Under `tools/sanitize asan` the ranks also unwind every
// allocation's stack fully (ASAN_OPTIONS fast_unwind_on_malloc=0; ignored by programs
// built without ASan): Open MPI unloads its plugins before LeakSanitizer reports, so
// only frames below them, in libmpi and libopen-pal, can match
// tools/lsan_suppressions.txt, and the default frame-pointer unwinder stops inside the
// plugins.
inline const std::string kMpiEnv =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
    "OMPI_MCA_rmaps_base_oversubscribe=1 ASAN_OPTIONS=\"$ASAN_OPTIONS:fast_unwind_on_malloc=0\" ";
inline const std::string kMpirun = kMpiEnv + "mpirun -np 2 ";

// Open MPI 4.x sometimes reports a rank that exited cleanly as "rank 1 with PID 0 ...
// exiting improperly" (a race in its runtime's shutdown, open-mpi/ompi#7833 and #9389;
// about 1 launch in 80 here). Only that message earns one more try.
inline CommandResult run_mpi(const std::string& command) {
  CommandResult r = run_command(command);
  if (r.exit_code != 0 && r.out.find("with PID 0 on") != std::string::npos &&
      r.out.find("exiting improperly") != std::string::npos) {
    std::printf("Open MPI's shutdown race; running again: %s\n", command.c_str());
    r = run_command(command);
  }
  return r;
}

}  // namespace weft::testing
