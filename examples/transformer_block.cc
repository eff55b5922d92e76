// A transformer encoder block, post-LN (the original) and pre-LN, batch-first
// [batch, seq, dim]. Prints each one's IR and parameter count.
//
//   bazel run //examples:transformer_block
#include <cstdio>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "examples/no_flags.h"
#include "ir/text.h"

namespace weft {
namespace {

constexpr int64_t kDim = 128, kHeads = 4, kFfn = 512, kBatch = 8, kSeq = 32;

StatusOr<FlowPtr> feed_forward() {
  return FlowBuilder::from(Linear(kDim, kFfn)).through(GELU()).through(Linear(kFfn, kDim)).build();
}

/// x = LN(x + Attention(x)); x = LN(x + FFN(x))
StatusOr<Model> post_ln() {
  WEFT_ASSIGN_OR_RETURN(FlowPtr ffn, feed_forward());
  return FlowBuilder::from(Identity())
      .also(MultiheadAttention(kDim, kHeads))
      .through(LayerNorm(kDim))
      .also(ffn)
      .through(LayerNorm(kDim))
      .build({{"x", f32({kBatch, kSeq, kDim})}});
}

/// x = x + Attention(LN(x)); x = x + FFN(LN(x))
StatusOr<Model> pre_ln() {
  WEFT_ASSIGN_OR_RETURN(FlowPtr ffn, feed_forward());
  WEFT_ASSIGN_OR_RETURN(FlowPtr attention, FlowBuilder::from(LayerNorm(kDim))
                                               .through(MultiheadAttention(kDim, kHeads))
                                               .build());
  WEFT_ASSIGN_OR_RETURN(FlowPtr mlp, FlowBuilder::from(LayerNorm(kDim)).through(ffn).build());
  return FlowBuilder::from(Identity())
      .also(attention)
      .also(mlp)
      .build({{"x", f32({kBatch, kSeq, kDim})}});
}

int print(const char* name, const StatusOr<Model>& model) {
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.error().to_string().c_str());
    return 1;
  }
  std::printf("# %s\n%s", name, print_graph(model->graph()).c_str());
  std::printf("parameters: %lld\n\n", static_cast<long long>(model->parameter_count()));
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  if (int rc = weft::examples::no_flags(argc, argv, "transformer_block",
                                        "Builds a transformer encoder block, post-LN and pre-LN, and prints\n"
                                        "each one's IR and parameter count.\n");
      rc >= 0) {
    return rc;
  }
  return weft::print("post-LN transformer block", weft::post_ln()) |
         weft::print("pre-LN transformer block", weft::pre_ln());
}
