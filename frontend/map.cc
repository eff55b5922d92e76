#include "frontend/map.h"

#include <string>
#include <utility>

#include "frontend/flow.h"

namespace weft {
namespace {

class MapSlicesModule : public UnaryModule {
 public:
  MapSlicesModule(ModulePtr body, int64_t n, std::source_location loc) : body_(std::move(body)), n_(n), loc_(loc) {}

  std::string describe() const override { return "map(" + body_->describe() + ").slices(" + std::to_string(n_) + ")"; }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);
    const int rank = t.shape.rank();
    if (n_ < 1) e.fail(describe() + ": the number of slices must be at least 1");
    if (rank < 2 || t.shape[rank - 1] % n_ != 0) {
      e.fail(describe() + " splits the last axis of [batch, ..., features] into " + std::to_string(n_) +
             " equal slices; the stream is " + t.to_string());
    }
    const int64_t batch = t.shape[0], width = t.shape[rank - 1] / n_;
    // [B, m..., D] -> [B, m..., n, D/n] -> [B, n, m..., D/n] -> [B·n, m..., D/n].
    IntList split = t.shape.dims;
    split.back() = n_;
    split.push_back(width);
    IntList to_front = {0, rank - 1};
    for (int d = 1; d < rank - 1; ++d) to_front.push_back(d);
    to_front.push_back(rank);
    IntList rows(t.shape.dims.begin() + 1, t.shape.dims.end() - 1);
    rows.insert(rows.begin(), batch * n_);
    rows.push_back(width);
    ValueId slices = e.reshape(x, split);
    if (rank > 2) slices = e.transpose(slices, to_front);
    slices = e.reshape(slices, rows);

    ValueId y = emit_part(e, body_, {slices}, body_->describe(), "", loc_);
    const Type yt = e.type(y);
    if (yt.shape.rank() != rank || yt.shape[0] != batch * n_) {
      e.fail(describe() + ": the body maps the slices " + e.type(slices).to_string() + " to " + yt.to_string() +
             "; it must keep their rank and rows");
    }
    // [B·n, m'..., D'] -> [B, n, m'..., D'] -> [B, m'..., n, D'] -> [B, m'..., n·D'].
    IntList unsplit = yt.shape.dims;
    unsplit[0] = n_;
    unsplit.insert(unsplit.begin(), batch);
    IntList to_back = {0};
    for (int d = 2; d < rank; ++d) to_back.push_back(d);
    to_back.push_back(1);
    to_back.push_back(rank);
    IntList out(yt.shape.dims.begin(), yt.shape.dims.end());
    out[0] = batch;
    out.back() = n_ * yt.shape[rank - 1];
    ValueId back = e.reshape(y, unsplit);
    if (rank > 2) back = e.transpose(back, to_back);
    return e.reshape(back, out);
  }

 private:
  ModulePtr body_;
  int64_t n_;
  std::source_location loc_;
};

}  // namespace

ModulePtr MapSlices(ModulePtr body, int64_t n, std::source_location loc) {
  return std::make_shared<MapSlicesModule>(std::move(body), n, loc);
}

}  // namespace weft
