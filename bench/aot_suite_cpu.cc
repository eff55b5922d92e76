// The CPU AOT libraries of bench/aot (cpu preset) for bench/weft_aot_worker.cc.
#include "bench/aot/conv_autoenc.h"
#include "bench/aot/convnet.h"
#include "bench/aot/feedback_fixed.h"
#include "bench/aot/gated_routing.h"
#include "bench/aot/gru_seq.h"
#include "bench/aot/iterative_refine.h"
#include "bench/aot/lstm_seq.h"
#include "bench/aot/mlp.h"
#include "bench/aot/mlp_bf16.h"
#include "bench/aot/residual_tower.h"
#include "bench/aot/residual_tower_bf16.h"
#include "bench/aot/transformer.h"
#include "bench/aot/transformer_bf16.h"
#include "bench/aot/transformer_fa.h"
#include "bench/aot_suite.h"
#include "runtime/cpu/executor.h"

namespace weft::bench {

const std::vector<AotModel>& aot_models() {
  static const std::vector<AotModel> models = {
      {"transformer", &weft_aot::Transformer::table, 1024, false, &weft_aot::TransformerBf16::table,
       &weft_aot::TransformerFa::table},
      {"mlp", &weft_aot::Mlp::table, 0, false, &weft_aot::MlpBf16::table},
      {"residual_tower", &weft_aot::ResidualTower::table, 0, false, &weft_aot::ResidualTowerBf16::table},
      {"feedback_fixed", &weft_aot::FeedbackFixed::table},
      {"gated_routing", &weft_aot::GatedRouting::table},
      {"iterative_refine", &weft_aot::IterativeRefine::table},
      {"gru_seq", &weft_aot::GruSeq::table},
      {"conv_autoenc", &weft_aot::ConvAutoenc::table, 0, /*target_is_input=*/true},
      {"lstm_seq", &weft_aot::LstmSeq::table},
      {"convnet", &weft_aot::Convnet::table},
  };
  return models;
}

const char* aot_preset() { return "cpu"; }

const char* aot_libraries() { return "the AOT libraries of bench/aot"; }

std::string aot_config(const aot::ModelTable& table, ProgramExecutor& step) {
  auto* cpu_executor = dynamic_cast<cpu::Executor*>(&step);
  return "aot " + table.backend +
         (cpu_executor ? ", " + std::to_string(cpu_executor->pool().num_threads()) + " threads"
                       : "");
}

std::optional<int64_t> aot_device_bytes(ProgramExecutor&) { return std::nullopt; }

}  // namespace weft::bench
