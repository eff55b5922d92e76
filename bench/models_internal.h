#pragma once
// Shared by models*.cc: the preset's size rules and one builder per model family.

#include "bench/models.h"

namespace weft::bench::internal {

/// The cpu preset's scaling rule (bench/PROTOCOL.md), applied to flodl's paper sizes.
struct Sizes {
  Preset preset;
  bool cpu() const { return preset == Preset::cpu; }
  /// A width or channel count: ÷ 4 at cpu.
  int64_t width(int64_t paper) const { return cpu() ? paper / 4 : paper; }
  /// A batch size: ÷ 4 at cpu.
  int64_t batch(int64_t paper) const { return cpu() ? paper / 4 : paper; }
  /// Image side: 32 at cpu, 64 in the paper.
  int64_t image() const { return cpu() ? 32 : 64; }
};

/// Builds `builder` into the model's net; the structural errors of build() pass through.
StatusOr<FlowPtr> finish(const FlowBuilder& builder);

// models.cc
StatusOr<BenchModel> transformer(Sizes s);
StatusOr<BenchModel> mlp(Sizes s);
StatusOr<BenchModel> residual_tower(Sizes s);
StatusOr<BenchModel> feedback_fixed(Sizes s);
StatusOr<BenchModel> gated_routing(Sizes s);
StatusOr<BenchModel> iterative_refine(Sizes s);
// models_seq.cc
StatusOr<BenchModel> gru_seq(Sizes s);
StatusOr<BenchModel> lstm_seq(Sizes s);
// models_conv.cc
StatusOr<BenchModel> conv_autoenc(Sizes s);
StatusOr<BenchModel> convnet(Sizes s);

}  // namespace weft::bench::internal
