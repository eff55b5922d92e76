// weft_kernel_object: compiles kernel bodies ahead of time into one object file — the
// build-time step of AOT training binaries (issue [AOT]); Bazel runs it as a genrule
// tool in the host configuration.
//
//   weft_kernel_object --out=kernels.o [--cpu=native] SYMBOL=BODY.wir ...
//
// Each BODY.wir holds one kernel body (codegen/kernel_compiler.h): a graph of elementwise
// ops whose inputs are the kernel's operands. The object defines each SYMBOL with the
// Program ABI `void SYMBOL(void* const* buffers, int64_t row_begin, int64_t row_end)`;
// `SYMBOL.rows` lines on standard output give each kernel's row count and row length.
#include <cstdio>
#include <string>
#include <vector>

#include "codegen/kernel_compiler.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "formats/file_io.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "weft_kernel_object: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace weft;
  std::string out, cpu = "native";
  std::vector<std::pair<std::string, std::string>> specs;  // symbol, path
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--out=", 0) == 0) out = a.substr(6);
    else if (a.rfind("--cpu=", 0) == 0) cpu = a.substr(6);
    else if (a.find('=') != std::string::npos && a[0] != '-') {
      specs.emplace_back(a.substr(0, a.find('=')), a.substr(a.find('=') + 1));
    } else {
      return fail("unknown argument '" + a +
                  "'; usage: weft_kernel_object --out=K.o [--cpu=CPU] SYMBOL=BODY.wir ...");
    }
  }
  if (out.empty()) return fail("--out=PATH is required");
  std::vector<Graph> bodies;
  bodies.reserve(specs.size());
  for (const auto& [symbol, path] : specs) {
    StatusOr<Graph> g = read_graph_file(path);
    if (!g.ok()) return fail(g.error().to_string());
    InferTypesPass infer;
    if (StatusOr<bool> typed = infer.run(*g); !typed.ok()) return fail(typed.error().to_string());
    bodies.push_back(std::move(*g));
  }
  std::vector<codegen::KernelCompiler::ObjectKernel> kernels;
  for (size_t i = 0; i < specs.size(); ++i) {
    const FusedKind kind = codegen::standalone_kind(bodies[i]);
    kernels.push_back({specs[i].first, &bodies[i], kind});
    const codegen::RowLayout layout = codegen::row_layout(bodies[i], kind);
    std::printf("%s.rows %lld %lld\n", specs[i].first.c_str(),
                static_cast<long long>(layout.rows), static_cast<long long>(layout.row_length));
  }
  StatusOr<std::string> object = codegen::KernelCompiler::global().compile_object(kernels, cpu);
  if (!object.ok()) return fail(object.error().to_string());
  Status written = write_file_atomically(out, *object);
  if (!written.ok()) return fail(written.error().to_string());
  return 0;
}
