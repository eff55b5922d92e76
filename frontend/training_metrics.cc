// Trainer's metrics (frontend/training.h): statistics of tagged activations computed in
// the step (collect), and metrics at graph-tree paths (record_at).
#include <string>
#include <vector>

#include "frontend/training.h"

namespace weft {

const char* statistic_name(Statistic s) {
  switch (s) {
    case Statistic::mean: return "mean";
    case Statistic::std: return "std";
    case Statistic::abs_mean: return "abs_mean";
    case Statistic::norm: return "norm";
    case Statistic::min: return "min";
    case Statistic::max: return "max";
  }
  return "?";
}

StatusOr<std::vector<ValueId>> Trainer::emit_collected(Graph& g, const Model& model) const {
  std::vector<ValueId> out;
  if (collected_.empty()) return out;
  try {
    Emitter e(g, BuildOptions{});
    e.push_frame(nullptr, "collect", "", where_);
    for (const auto& [tag, statistic, metric] : collected_) {
      ValueId x = kNoValue;
      for (const auto& [name, v] : model.tags()) {
        if (name == tag) x = v;
      }
      WEFT_CHECK(x != kNoValue, "collect: tag checked by collect()");
      const DType dt = g.type(x).dtype;
      const double n = static_cast<double>(g.type(x).shape.numel());
      auto mean_of = [&](ValueId v) { return e.div(e.op(Op::Sum, {v}), e.constant(n, dt)); };
      ValueId stat = kNoValue;
      switch (statistic) {
        case Statistic::mean: stat = mean_of(x); break;
        case Statistic::std: {
          ValueId d = e.sub(x, mean_of(x));
          stat = e.op(Op::Sqrt, {mean_of(e.mul(d, d))});
          break;
        }
        case Statistic::abs_mean: stat = mean_of(e.op(Op::Abs, {x})); break;
        case Statistic::norm: stat = e.op(Op::Sqrt, {e.op(Op::Sum, {e.mul(x, x)})}); break;
        case Statistic::min: stat = e.op(Op::Min, {x}); break;
        case Statistic::max: stat = e.op(Op::Max, {x}); break;
      }
      out.push_back(stat);
    }
    e.pop_frame();
  } catch (const BuildFailure& failure) {
    return failure.error;
  }
  return out;
}

void Trainer::record_collected(const std::function<double(size_t)>& output) {
  for (size_t k = 0; k < collected_.size(); ++k) {
    metrics_.record(collected_[k].metric, output(k + 1));
  }
}

Status Trainer::collect(const std::vector<std::string>& tags, Statistic statistic) {
  const Graph& g = model_->graph();
  for (const std::string& tag : tags) {
    std::string known;
    ValueId v = kNoValue;
    for (const auto& [name, value] : model_->tags()) {
      if (name == tag) v = value;
      known += (known.empty() ? "" : ", ") + name;
    }
    if (v == kNoValue) {
      return Error{"collect: the model has no tag '" + tag + "'" +
                   (known.empty() ? std::string(" (it has no tags: name an activation with tag(...))")
                                  : " (tags: " + known + ")")};
    }
    if (!is_floating(g.type(v).dtype)) {
      return Error{"collect: tag '" + tag + "' is " + g.type(v).to_string() +
                   "; statistics are of float activations"};
    }
  }
  const size_t before = collected_.size();
  for (const std::string& tag : tags) {
    collected_.push_back({tag, statistic, tag + "." + statistic_name(statistic)});
  }
  Status s = build_step();
  if (!s.ok()) collected_.resize(before);  // on error nothing changes
  return s;
}

Status Trainer::record_at(const std::string& path, double value) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == path.size()) {
    return Error{"record_at: '" + path + "' is not a label path then a metric name "
                 "(`encoder.scan.loss`); record_scalar records a name outside the graph tree"};
  }
  Status s = model_->validate_path(path.substr(0, dot));
  if (!s.ok()) return Error{"record_at: '" + path + "': " + s.error().message};
  metrics_.record(path, value);
  return Status();
}

}  // namespace weft
