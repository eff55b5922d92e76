#pragma once
// Helpers shared by the loss files (loss.cc, loss_ternary.cc, loss_ctc.cc); not part of
// the API.
#include <functional>
#include <string>
#include <vector>

#include "frontend/losses.h"

namespace weft::loss::detail {

/// Fails unless `r` is mean, sum or none (batchmean is kl_div's alone).
void check_not_batchmean(Emitter& e, const char* name, Reduction r);
/// Mean or sum over every element (BatchMean: sum / dim 0), or `x` itself for None.
ValueId reduce(Emitter& e, ValueId x, Reduction r);
/// A loss module's description: "NAME(REDUCTION EXTRA)".
std::string named(const char* name, Reduction r, const std::string& extra = "");

/// A loss of more than two inputs as a module: the stream, then the values of
/// uses({...}) in the order given. `roles` names them for the error a wrong count gives:
/// "NAME takes three inputs, ROLES, but 2 were given".
class MultiInputLoss : public Module {
 public:
  using Body = std::function<ValueId(Emitter&, const std::vector<ValueId>&)>;
  MultiInputLoss(std::string name, size_t arity, std::string roles, Body body)
      : name_(std::move(name)), arity_(arity), roles_(std::move(roles)), body_(std::move(body)) {}

  std::string describe() const override { return name_; }
  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override;

 private:
  std::string name_;
  size_t arity_;
  std::string roles_;
  Body body_;
};

}  // namespace weft::loss::detail
