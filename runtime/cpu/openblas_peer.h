#pragma once
// OpenBLAS as a benchmark peer, without the machine-wide handicap.
//
// The development and CI machines set OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE=512
// (a workaround for older OpenBLAS builds on newer CPUs). OpenBLAS reads both when it is
// loaded, before main, and then runs its AVX2 kernels on CPUs with AVX-512; PyTorch 1.13's
// torch.mm calls OpenBLAS, so a PyTorch peer started with them is handicapped as well
// (1.8× on the suite's transformer). Whatever weft is measured against runs without both,
// in its own process only: tests, CI and weft's own processes keep them.
//
//   - A process started as a peer (bench/suite.cc's run.py): bench/process.h's
//     peer_unset() adds kOpenblasHandicap to the variables it is started without.
//   - A Python peer started by hand: bench/pytorch/peer_env.py, imported before torch.
//   - A benchmark that links OpenBLAS itself (gemm_bench, bench/gemm_libraries): OpenBLAS
//     has read its environment before main runs, so main starts with
//
//       int main(int argc, char** argv) {
//         weft::cpu::restart_without_openblas_handicap(argv);  // returns when neither is set
//         std::printf("OpenBLAS core: %s\n", openblas_get_corename());
//
// Header-only, no OpenBLAS dependency: the corename comes from OpenBLAS's own
// openblas_get_corename() where it is linked.

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::cpu {

/// The environment variables a peer runs without.
inline constexpr std::array<const char*, 2> kOpenblasHandicap = {"OPENBLAS_CORETYPE",
                                                                  "OPENBLAS_L2_SIZE"};

/// True when any of kOpenblasHandicap is set in this process's environment.
inline bool openblas_handicap_set() {
  for (const char* var : kOpenblasHandicap) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

/// For a program that links OpenBLAS: when any of kOpenblasHandicap is set, removes them
/// all and executes `exe` (this program, by default) again with the same `argv`, so that
/// OpenBLAS loads without them; returns when none is set. Exits with status 127 when the
/// new program cannot be started. Call it first thing in main, before any thread starts.
inline void restart_without_openblas_handicap(char** argv, const char* exe = "/proc/self/exe") {
  if (!openblas_handicap_set()) return;
  for (const char* var : kOpenblasHandicap) unsetenv(var);
  std::fflush(nullptr);
  execv(exe, argv);
  std::fprintf(stderr, "cannot restart %s without %s and %s: %s\n", exe, kOpenblasHandicap[0],
               kOpenblasHandicap[1], std::strerror(errno));
  std::_Exit(127);
}

}  // namespace weft::cpu
