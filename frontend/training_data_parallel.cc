// The Trainer's data parallelism (TrainOptions::bind.communicator; DESIGN.md, decision 11):
// the communicator checked against the backend and made the backend's, the loss averaged
// over the ranks, every rank's step compared, and every rank started from rank 0's
// values. The rest of the Trainer is in training.cc; the collectives themselves are
// runtime/collective's.
#include <functional>
#include <string>

#include "codegen/targets.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/split_gradients.h"
#include "runtime/collective/parameters.h"

namespace weft {

Status Trainer::connect_ranks(const codegen::Target& target, TrainOptions& options) {
  if (options.bind.communicator && options.bind.communicator->world_size() > 1 && !target.has_multi_rank()) {
    return target.one_process(options.bind.communicator->world_size());
  }
  if (const Backend* runtime = target.runtime(); runtime != nullptr) {  // cuda: NCCL over it
    WEFT_ASSIGN_OR_RETURN(options.bind.communicator, runtime->communicator_for(options.bind.communicator, options.local_rank,
                                                                          options.collective_timeout));
  }
  return Status();
}

ValueId Trainer::rank_mean_loss(Graph& g, ValueId loss) const {
  if (!options_.bind.communicator) return loss;
  // The gradients (append_optimizer reduces them, accumulated), and the reported loss,
  // are means over the ranks.
  return g.add_node(Op::AllReduce, {loss}, {{"reduction", std::string("mean")}}, g.node(g.value(loss).node).loc,
                    g.type(loss));
}

Status Trainer::split_gradients(Graph& g) const {
  if (!options_.bind.communicator || options_.bind.communicator->world_size() <= 1) return Status();
  SplitGradientsPass split({.min_bytes = options_.split_gradient_bytes, .blocks = options_.split_gradient_blocks});
  return split.run(g).status();
}

// Every rank must run the same step (else the all_reduce calls disagree on their sizes):
// a fingerprint of the printed step, compared over the ranks.
Status Trainer::check_same_step_on_every_rank(const Graph& step) const {
  if (!options_.bind.communicator || options_.bind.communicator->world_size() <= 1) return Status();
  collective::Communicator& comm = *options_.bind.communicator;
  return collective::check_same_on_every_rank(
      comm, std::hash<std::string>{}(print_graph(step)),
      "data parallelism: the " + std::to_string(comm.world_size()) +
          " ranks compiled different training steps (a different model, batch size, "
          "loss or optimizer on some rank); every rank must compile the same step "
          "for its share of the global batch");
}

// Every rank starts from rank 0's values; ranks that loaded different checkpoints are
// refused (runtime/collective/parameters.h). Every rank compiles and loads together, so
// every rank gets here together.
Status Trainer::agree_with_other_ranks() {
  if (!options_.bind.communicator || options_.bind.communicator->world_size() <= 1) return Status();
  return collective::agree_on_parameters(*options_.bind.communicator, values_, loaded_from_);
}

}  // namespace weft
