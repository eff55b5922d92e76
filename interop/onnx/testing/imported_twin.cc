// compile_twins: a suite model exported as ONNX, imported back, both compiled; the
// histogram of a compiled step.
#include "interop/onnx/testing/imported_twin.h"

#include <random>

#include "bench/timed_run.h"
#include "frontend/init_params.h"
#include "interop/onnx/exporter.h"
#include "interop/onnx/importer.h"

namespace weft::onnx_io {

StatusOr<Twins> compile_twins(const std::string& name, const std::string& dir, const std::string& backend) {
  WEFT_ASSIGN_OR_RETURN(bench::BenchModel m, bench::make_bench_model(name, bench::Preset::cpu));
  WEFT_ASSIGN_OR_RETURN(Model forward, m.net->build(m.inputs, {.training = false}));
  WEFT_ASSIGN_OR_RETURN(auto values, initialize_parameter_map(forward, /*seed=*/1));
  WEFT_ASSIGN_OR_RETURN(onnx::ModelProto proto, export_model(forward, values));
  const std::string path = dir + "/" + name + ".onnx";
  WEFT_RETURN_IF_ERROR(write_onnx_model(path, proto));
  WEFT_ASSIGN_OR_RETURN(FlowPtr imported, FlowBuilder::from(OnnxModel(path)).build());
  const TrainOptions options{.seed = 1, .backend = backend};
  WEFT_ASSIGN_OR_RETURN(Trainer a, Trainer::compile(m.net, m.inputs, m.loss, OptimizerSpec::adam(m.lr), options));
  WEFT_ASSIGN_OR_RETURN(Trainer b, Trainer::compile(imported, m.inputs, m.loss, OptimizerSpec::adam(m.lr), options));
  return Twins{std::move(m), std::move(a), std::move(b)};
}

std::map<std::string, int64_t> step_histogram(const Program& p) {
  static const char* const kKinds[] = {"library", "generated", "copy", "contraction", "loop"};
  std::map<std::string, int64_t> h;
  h["kernels"] = static_cast<int64_t>(p.kernels.size());
  h["invocations"] = static_cast<int64_t>(p.code.size());
  for (const Invocation& inv : p.code) {
    std::string key = kKinds[static_cast<int>(inv.kind)];
    if (inv.kind == Invocation::Kind::library || inv.kind == Invocation::Kind::contraction) {
      key += ":" + std::string(op_name(inv.node.op));
    }
    ++h[key];
  }
  return h;
}

std::vector<Tensor> random_batch(const bench::BenchModel& m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> batch;
  for (const InputSpec& in : m.inputs) batch.push_back(bench::random_tensor(in.type, m.token_range, rng));
  batch.push_back(m.target_is_input ? batch[0] : bench::random_tensor(m.target, m.token_range, rng));
  return batch;
}

}  // namespace weft::onnx_io
