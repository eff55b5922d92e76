// The executor's all_reduce buckets on every rank of `mpirun -np 2 bucket_check`: a
// compiled graph whose all_reduce invocations fall into different buckets, for
// data_parallel_test. Rank r feeds x1 = (r+1)(i+1), x2 = 2(r+1)+i, x3 = -(r+1)i and the
// graph computes
//   a1 = all_reduce(x1) {sum}         a bucket of its own, waited for by its reader
//   y  = a1 · a1
//   a2 = all_reduce(x2) {mean}        one bucket with a3, waited for by their sum
//   a3 = all_reduce(x3) {mean}
//   d  = all_reduce(x2) {sum}         read by nothing: never bucketed
//   out = y + (a2 + a3)               = 9(i+1)² + 3 + i - 1.5i on both ranks
// (the schedule moves every all_reduce of an input to the front: passes/schedule.h) and
// prints the all_reduce lines of the executor's description, then "rank R: out ...".
// Its communicator is chosen as the driver chooses one: the launch's world
// (collective::world_from_environment: MPI under mpirun), then the cpu backend's
// communicator for it (Backend::communicator_for).
#include <cstdio>
#include <sstream>
#include <string>

#include "codegen/cpu_backend.h"
#include "runtime/backend.h"
#include "runtime/collective/world.h"

namespace weft {
namespace {

// The communicator the cpu backend binds steps with on this rank of the launch.
StatusOr<std::shared_ptr<collective::Communicator>> cpu_communicator() {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<collective::Communicator> world,
                        collective::world_from_environment());
  WEFT_ASSIGN_OR_RETURN(const Backend* cpu, find_backend("cpu"));
  return cpu->communicator_for(std::move(world), collective::local_rank(),
                               std::chrono::seconds(300));
}

}  // namespace
}  // namespace weft

int main() {
  using namespace weft;
  StatusOr<std::shared_ptr<collective::Communicator>> world = cpu_communicator();
  if (!world.ok()) {
    std::fprintf(stderr, "bucket_check: %s\n", world.error().to_string().c_str());
    return 1;
  }
  const Type t{DType::f32, {4}};
  Graph g("buckets");
  ValueId x1 = g.add_input("x1", t), x2 = g.add_input("x2", t), x3 = g.add_input("x3", t);
  auto all_reduce = [&](ValueId x, const char* reduction, const char* name) {
    return g.add_node(Op::AllReduce, {x}, {{"reduction", std::string(reduction)}}, {}, t, name);
  };
  ValueId a1 = all_reduce(x1, "sum", "a1");
  ValueId y = g.add_node(Op::Mul, {a1, a1}, {}, {}, t, "y");
  ValueId a2 = all_reduce(x2, "mean", "a2");
  ValueId a3 = all_reduce(x3, "mean", "a3");
  all_reduce(x2, "sum", "d");
  ValueId s = g.add_node(Op::Add, {a2, a3}, {}, {}, t, "s");
  g.add_output(g.add_node(Op::Add, {y, s}, {}, {}, t, "out"));

  codegen::CpuOptions options;
  options.executor.communicator = *world;
  auto ex = codegen::compile_for_cpu(g, options);
  if (!ex.ok()) {
    std::fprintf(stderr, "bucket_check: %s\n", ex.error().to_string().c_str());
    return 1;
  }
  const int r = (*world)->rank();
  Tensor v1(t), v2(t), v3(t);
  for (int i = 0; i < 4; ++i) {
    v1.data<float>()[i] = static_cast<float>((r + 1) * (i + 1));
    v2.data<float>()[i] = static_cast<float>(2 * (r + 1) + i);
    v3.data<float>()[i] = static_cast<float>(-(r + 1) * i);
  }
  for (const auto& [name, value] : {std::pair{"x1", &v1}, {"x2", &v2}, {"x3", &v3}}) {
    Status set = (*ex)->set_input(name, *value);
    if (!set.ok()) return 1;
  }
  Status ran = (*ex)->run();
  if (!ran.ok()) {
    std::fprintf(stderr, "bucket_check: %s\n", ran.error().to_string().c_str());
    return 1;
  }
  if (r == 0) {
    std::istringstream lines((*ex)->describe());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("all_reduce") != std::string::npos) std::printf("%s\n", line.c_str());
    }
  }
  Tensor out = (*ex)->output(0);
  std::string line = "rank " + std::to_string(r) + ": out";
  for (int i = 0; i < 4; ++i) line += " " + std::to_string(out.data<float>()[i]);
  std::printf("%s\n", line.c_str());
  return 0;
}
