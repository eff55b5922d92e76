// The ponder classifier (ponder_model.h).
#include "examples/fashion_mnist/ponder_model.h"

#include <memory>
#include <string>

#include "frontend/modules.h"

namespace weft::examples {
namespace {

constexpr int64_t kWidth = 128;
constexpr double kConfidence = 0.9;

ValueId columns(Emitter& e, ValueId s, int64_t from, int64_t to) {
  const int64_t batch = e.shape(s)[0];
  return e.op(Op::Slice, {s}, {{"start", IntList{0, from}}, {"stop", IntList{batch, to}}});
}

/// x [B, 1, 28, 28] → [relu(encoder(x)), 0]: the estimate and its iteration count. The
/// encoder: two 3×3 convolutions (16 and 32 channels) with ReLU and 2×2 max pooling, then
/// Linear(32·7·7, 128).
class Encode : public UnaryModule {
 public:
  std::string describe() const override { return "Encode"; }
  ValueId forward1(Emitter& e, ValueId x) override {
    if (!convs_) {
      auto f = FlowBuilder::from(Conv2d(1, 16, {.padding = 1}))
                   .through(ReLU())
                   .through(MaxPool2d(2))
                   .through(Conv2d(16, 32, {.padding = 1}))
                   .through(ReLU())
                   .through(MaxPool2d(2))
                   .through(Flatten())
                   .through(Linear(32 * 7 * 7, kWidth))
                   .through(ReLU())
                   .build();
      if (!f.ok()) e.fail(f.error().message);
      convs_ = *f;
    }
    const ValueId h = emit_part(e, convs_, {x}, "encoder", "encoder", loc_);
    const ValueId n = e.full(Shape({e.shape(x)[0], 1}), 0.0);
    return e.op(Op::Concat, {h, n}, {{"axis", int64_t{1}}});
  }

 private:
  ModulePtr convs_;
  std::source_location loc_ = std::source_location::current();
};

/// [h, n] → [h + tanh(W·h + b), n + 1].
class Refine : public UnaryModule {
 public:
  std::string describe() const override { return "Refine(" + std::to_string(kWidth) + ")"; }
  ValueId forward1(Emitter& e, ValueId s) override {
    const ValueId h = columns(e, s, 0, kWidth), n = columns(e, s, kWidth, kWidth + 1);
    const ValueId step = e.op(Op::Tanh, {emit_part(e, linear_, {h}, "Linear(128->128)", "linear", loc_)});
    const ValueId one = e.constant(1.0);
    return e.op(Op::Concat, {e.add(h, step), e.add(n, one)}, {{"axis", int64_t{1}}});
  }

 private:
  ModulePtr linear_ = Linear(kWidth, kWidth);
  std::source_location loc_ = std::source_location::current();
};

/// [h, n] → head(h): the 10 logits.
class ReadOut : public UnaryModule {
 public:
  explicit ReadOut(ModulePtr head) : head_(std::move(head)) {}
  std::string describe() const override { return "ReadOut"; }
  ValueId forward1(Emitter& e, ValueId s) override {
    return emit_part(e, head_, {columns(e, s, 0, kWidth)}, "Linear(128->10)", "head", loc_);
  }

 private:
  ModulePtr head_;
  std::source_location loc_ = std::source_location::current();
};

/// [h, n] → max softmax(head(h)) − 0.9 per sample: positive once confident.
class Confident : public UnaryModule {
 public:
  explicit Confident(ModulePtr read_out) : read_out_(std::move(read_out)) {}
  std::string describe() const override { return "Confident"; }
  ValueId forward1(Emitter& e, ValueId s) override {
    const ValueId logits = emit_part(e, read_out_, {s}, "ReadOut", "", loc_);
    const ValueId p = e.op(Op::Softmax, {logits}, {{"axis", int64_t{1}}});
    const ValueId top = e.op(Op::Max, {p}, {{"axes", IntList{1}}});
    return e.sub(top, e.constant(kConfidence));
  }

 private:
  ModulePtr read_out_;
  std::source_location loc_ = std::source_location::current();
};

/// [h, n] → n.
class Count : public UnaryModule {
 public:
  std::string describe() const override { return "Count"; }
  ValueId forward1(Emitter& e, ValueId s) override { return columns(e, s, kWidth, kWidth + 1); }
};

}  // namespace

StatusOr<PonderModel> ponder_model() {
  auto encode = std::make_shared<Encode>();
  auto refine = std::make_shared<Refine>();
  auto read_out = std::make_shared<ReadOut>(Linear(kWidth, 10));
  auto halt = std::make_shared<Confident>(read_out);
  // The encoder and the loop as the labelled subgraph `ponder` (the head is named in it,
  // at its first use in the condition); the classifier reads the logits out after it.
  WEFT_ASSIGN_OR_RETURN(
      FlowPtr core,
      FlowBuilder::from(encode).loop_body(refine).until_cond(halt, kPonderMaxIterations).label("ponder").build());
  PonderModel m;
  WEFT_ASSIGN_OR_RETURN(m.net, FlowBuilder::from(core).through(read_out).build());
  WEFT_ASSIGN_OR_RETURN(m.counter, FlowBuilder::from(core).through(std::make_shared<Count>()).build());
  return m;
}

}  // namespace weft::examples
