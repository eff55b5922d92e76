// weft_aot_compile: a graph, compiled ahead of time into an object file holding its
// kernels and a C++ source holding its Program — the generator step of [AOT] builds,
// run by Bazel in the host configuration.
//
//   weft_aot_compile --graph=STEP.wir --name=NAME --object=OUT.o --source=OUT.cc [--cpu=CPU]
//
// The graph goes through the cpu backend's pipeline (codegen::cpu_pipeline) and
// lower_to_program, exactly as `weftc run --backend=cpu` does, so the AOT and JIT paths
// run the same Program. OUT.cc defines NAME_program() and NAME_kernels()
// (codegen/program_source.h); OUT.o defines the kernels for CPU (default "native").
#include <cstdio>
#include <string>

#include "codegen/kernel_compiler.h"
#include "codegen/lower.h"
#include "codegen/program_source.h"
#include "ir/text.h"
#include "formats/file_io.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "weft_aot_compile: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace weft;
  std::string graph_path, name, object_path, source_path, cpu = "native";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) { return a.substr(std::string(flag).size()); };
    if (a.rfind("--graph=", 0) == 0) graph_path = value("--graph=");
    else if (a.rfind("--name=", 0) == 0) name = value("--name=");
    else if (a.rfind("--object=", 0) == 0) object_path = value("--object=");
    else if (a.rfind("--source=", 0) == 0) source_path = value("--source=");
    else if (a.rfind("--cpu=", 0) == 0) cpu = value("--cpu=");
    else return fail("unknown argument '" + a + "'; usage: weft_aot_compile --graph=G.wir "
                     "--name=NAME --object=OUT.o --source=OUT.cc [--cpu=CPU]");
  }
  if (graph_path.empty() || name.empty() || object_path.empty() || source_path.empty()) {
    return fail("--graph, --name, --object and --source are required");
  }
  StatusOr<Graph> g = read_graph_file(graph_path);
  if (!g.ok()) return fail(g.error().to_string());
  if (Status s = default_pipeline().run(*g).status(); !s.ok()) return fail(s.to_string());
  StatusOr<codegen::Lowering> lowered = codegen::lower_to_program(std::move(*g));
  if (!lowered.ok()) return fail(lowered.error().to_string());
  const Program& program = lowered->program;
  std::vector<codegen::KernelCompiler::ObjectKernel> kernels;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    kernels.push_back({codegen::kernel_symbol(name, static_cast<int>(k)), &program.kernels[k].body,
                       program.kernels[k].kind});
  }
  StatusOr<std::string> object = codegen::KernelCompiler::global().compile_object(kernels, cpu);
  if (!object.ok()) return fail(object.error().to_string());
  if (Status s = write_file_atomically(object_path, *object); !s.ok()) return fail(s.to_string());
  if (Status s = write_file_atomically(source_path, codegen::program_to_cpp(program, name));
      !s.ok()) {
    return fail(s.to_string());
  }
  std::printf("%s: %zu invocations, %zu kernels, arena %lld bytes\n", name.c_str(),
              program.code.size(), program.kernels.size(),
              static_cast<long long>(program.arena_bytes));
  return 0;
}
