#pragma once
// A Program (runtime/program.h) as C++ source, for ahead-of-time builds ([AOT]): the
// generated file defines
//
//   weft::Program NAME_program();                  // the Program, data only
//   std::vector<weft::GeneratedFn> NAME_kernels(); // its kernels' addresses
//
// and declares each kernel `extern "C" void NAME_kI(void* const*, int64_t, int64_t)`,
// defined by the object file KernelCompiler::compile_object emits for the same Program
// (kernel_symbol gives the names). The Program is written as the constant tables of
// runtime/program_tables.h (arrays of plain structs, string literals) that
// NAME_program() hands to assemble_program(), so the file is data: GCC compiles a
// transformer's step in about a second at -O2, where code building the same Program
// statement by statement took minutes. Linked with runtime/cpu and
// //runtime:program_tables alone — no MLIR, no LLVM —
// `cpu::Executor::create(NAME_program(), NAME_kernels())` runs the step.
// Kernel bodies are not embedded (the object file is their compiled form).

#include <string>

#include "runtime/program.h"

namespace weft::codegen {

/// `s` as a C++ string literal: quotes and backslashes escaped, a newline as \n and every
/// other control character in octal (a raw one may not stand in C++ source; the `.wir`
/// quoting of ir/attribute.cc leaves them). Shared by the generated Program sources and
/// tools/aot's generated model text.
std::string cpp_quoted(const std::string& s);

/// The symbol of kernel `index` of the Program generated under `name`.
std::string kernel_symbol(const std::string& name, int index);

/// The C++ source described above. `name` must be a C identifier. Without
/// `host_kernels` the kernel declarations and NAME_kernels() are left out: a CUDA
/// Program's kernels are PTX (codegen/cuda_backend.h), not host functions.
std::string program_to_cpp(const Program& program, const std::string& name,
                           bool host_kernels = true);

}  // namespace weft::codegen
