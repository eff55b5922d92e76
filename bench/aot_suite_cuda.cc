// The CUDA AOT libraries of bench/aot (paper preset, NAME_cuda and NAME_cuda_bf16) for
// bench/weft_aot_worker.cc: //bench:weft_aot_cuda_worker, which `bench:suite --device=cuda`
// runs (--precision=bf16: every model's bf16 library; --fuse-attention: the transformer's
// transformer_cuda_fa).
#include "bench/aot/conv_autoenc_cuda.h"
#include "bench/aot/conv_autoenc_cuda_bf16.h"
#include "bench/aot/convnet_cuda.h"
#include "bench/aot/convnet_cuda_bf16.h"
#include "bench/aot/feedback_fixed_cuda.h"
#include "bench/aot/feedback_fixed_cuda_bf16.h"
#include "bench/aot/gated_routing_cuda.h"
#include "bench/aot/gated_routing_cuda_bf16.h"
#include "bench/aot/gru_seq_cuda.h"
#include "bench/aot/gru_seq_cuda_bf16.h"
#include "bench/aot/iterative_refine_cuda.h"
#include "bench/aot/iterative_refine_cuda_bf16.h"
#include "bench/aot/lstm_seq_cuda.h"
#include "bench/aot/lstm_seq_cuda_bf16.h"
#include "bench/aot/mlp_cuda.h"
#include "bench/aot/mlp_cuda_bf16.h"
#include "bench/aot/residual_tower_cuda.h"
#include "bench/aot/residual_tower_cuda_bf16.h"
#include "bench/aot/transformer_cuda.h"
#include "bench/aot/transformer_cuda_bf16.h"
#include "bench/aot/transformer_cuda_fa.h"
#include "bench/aot_suite.h"
#include "runtime/cuda/executor.h"

namespace weft::bench {

const std::vector<AotModel>& aot_models() {
  // The paper preset's vocabulary is 8192 (the cpu preset's 1024).
  static const std::vector<AotModel> models = {
      {"transformer", &weft_aot::TransformerCuda::table, 8192, false, &weft_aot::TransformerCudaBf16::table,
       &weft_aot::TransformerCudaFa::table},
      {"mlp", &weft_aot::MlpCuda::table, 0, false, &weft_aot::MlpCudaBf16::table},
      {"residual_tower", &weft_aot::ResidualTowerCuda::table, 0, false, &weft_aot::ResidualTowerCudaBf16::table},
      {"feedback_fixed", &weft_aot::FeedbackFixedCuda::table, 0, false, &weft_aot::FeedbackFixedCudaBf16::table},
      {"gated_routing", &weft_aot::GatedRoutingCuda::table, 0, false, &weft_aot::GatedRoutingCudaBf16::table},
      {"iterative_refine", &weft_aot::IterativeRefineCuda::table, 0, false,
       &weft_aot::IterativeRefineCudaBf16::table},
      {"gru_seq", &weft_aot::GruSeqCuda::table, 0, false, &weft_aot::GruSeqCudaBf16::table},
      {"conv_autoenc", &weft_aot::ConvAutoencCuda::table, 0, /*target_is_input=*/true,
       &weft_aot::ConvAutoencCudaBf16::table},
      {"lstm_seq", &weft_aot::LstmSeqCuda::table, 0, false, &weft_aot::LstmSeqCudaBf16::table},
      {"convnet", &weft_aot::ConvnetCuda::table, 0, false, &weft_aot::ConvnetCudaBf16::table},
  };
  return models;
}

const char* aot_preset() { return "paper"; }

const char* aot_libraries() { return "the AOT CUDA libraries of bench/aot"; }

std::string aot_config(const aot::ModelTable& table, ProgramExecutor& step) {
  auto* cuda_executor = dynamic_cast<cuda::Executor*>(&step);
  return "aot " + table.backend +
         (cuda_executor && cuda_executor->uses_cuda_graph() ? ", one CUDA graph" : "");
}

std::optional<int64_t> aot_device_bytes(ProgramExecutor& step) {
  auto* cuda_executor = dynamic_cast<cuda::Executor*>(&step);
  if (!cuda_executor) return std::nullopt;
  return cuda_executor->device_bytes();
}

}  // namespace weft::bench
