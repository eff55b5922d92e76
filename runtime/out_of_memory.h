#pragma once
// The command-line tools' guard against running out of memory where no check can name
// what failed (#28: under an address-space limit, `ulimit -v`, weftc and the training
// driver died with an uncaught std::bad_alloc, or a thread that could not start). They
// run their work through run_guarded:
//
//   int main(int argc, char** argv) {
//     return weft::run_guarded("weftc", [&] { return main_impl(argc, argv); });
//   }
//
// Before the work starts it checks that the address-space limit, if one is set, leaves
// kAddressSpaceHeadroom free after the process's libraries are mapped, and refuses with
// the limit in the message otherwise. Under a limit it also makes threads share glibc's
// one malloc arena: each thread arena reserves 64 MiB of address space (128 MiB while it
// is being aligned), which the limit counts though nothing is committed, so two pool
// threads cost more than the whole step of a small model, and a library whose allocation
// then fails inside a JIT compiler (oneDNN's) crashes instead of throwing. An allocation
// or thread creation that still fails ends the run with one clear error and exit status
// 1, not an abort. (A limit so low that
// the dynamic loader cannot map the libraries, or their static initializers cannot
// allocate, fails before main, in the loader's or the library's words.)

#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <system_error>

namespace weft {

/// What a tool needs beyond its mapped libraries to start its work: thread stacks, the
/// first kernels' compilation, small arenas. Larger needs are checked where they arise
/// (an arena's allocation names its size).
inline constexpr uint64_t kAddressSpaceHeadroom = uint64_t{256} << 20;

/// Whether `bytes` of address space can still be reserved (nothing is committed).
inline bool address_space_free(uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  munmap(p, bytes);
  return true;
}

/// `work()`'s exit status; 1 with `program: error: ...` on `err` when the address-space
/// limit leaves too little room to start, or when work() throws std::bad_alloc or fails
/// to start a thread.
template <typename F>
int run_guarded(const char* program, F&& work, std::FILE* err = stderr) {
  rlimit limit{};
  const bool limited = getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  if (limited) mallopt(M_ARENA_MAX, 1);  // before work() starts any thread
  if (limited && !address_space_free(kAddressSpaceHeadroom)) {
    std::fprintf(err,
                 "%s: error: the address-space limit (ulimit -v: %llu MiB) leaves less than %llu MiB free "
                 "once weft's libraries are loaded; raise the limit\n",
                 program, static_cast<unsigned long long>(limit.rlim_cur >> 20),
                 static_cast<unsigned long long>(kAddressSpaceHeadroom >> 20));
    return 1;
  }
  const char* reason = nullptr;
  try {
    return work();
  } catch (const std::bad_alloc&) {
    reason = "an allocation failed";
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::resource_unavailable_try_again) throw;
    reason = "a thread could not be started";
  }
  std::fprintf(err,
               "%s: error: out of memory: %s. The machine's free memory or the process's "
               "address-space limit (ulimit -v) is too small for this run\n",
               program, reason);
  return 1;
}

}  // namespace weft
