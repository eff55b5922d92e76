#pragma once
// Loss functions, matching torch.nn.functional (PyTorch 1.13) value for value.
//
// Two forms of each loss:
//  - a function on emitter values, for modules and training code that emit IR directly:
//      ValueId l = loss::cross_entropy(e, logits, labels, {.label_smoothing = 0.1});
//  - a module taking (prediction, target), the target passed with uses(...):
//      auto net = FlowBuilder::from(Linear(784, 10))
//                     .input({"labels"})
//                     .through(CrossEntropyLoss()).uses({"labels"})
//                     .build({{"x", f32({128, 784})}, {"labels", i64({128})}});
//
// Elementwise losses (mse, l1, smooth_l1, huber, poisson_nll, bce, bce_with_logits, kl_div,
// sigmoid_focal, hinge_embedding) require the prediction and target to have the same
// type: PyTorch broadcasts mismatched shapes with only a warning, which almost always
// hides a bug, so weft refuses. Every loss is
// emitted as primitives or as a composite op with a primitive decomposition, so it is
// differentiable like any other graph.
//
// ctc (PyTorch's ctc_loss) is the one loss of four inputs and the one built on a loop:
// the alpha recursion over time is a `scan` node (ir/ops.def) whose gradient autodiff
// derives like any other loop's, so it needs no op of its own. It is not a LossSpec kind
// (frontend/training.h, and so not a --loss of the AOT tools): a LossSpec loss takes the
// network's output and one target, and CTC also needs the input and target lengths. A
// Trainer trains a flow ending in CTCLoss() with LossSpec::network_output() (the flow's
// output is its loss; step() takes the flow's inputs, targets and lengths among them:
// frontend:network_output_loss_test); autodiff/grad.h differentiates one directly.

#include <vector>

#include "frontend/module.h"

namespace weft {

/// How a loss reduces its per-element values (torch.nn.functional's `reduction`).
enum class Reduction {
  Mean,       ///< Mean over every element (for cross_entropy/nll: over the batch).
  Sum,        ///< Sum over every element.
  None,       ///< The per-element (per-sample for cross_entropy/nll) losses.
  BatchMean,  ///< kl_div only: sum / batch size (dim 0), the mathematically right KL.
};

/// "mean", "sum", "none", "batchmean".
const char* to_string(Reduction reduction);

namespace loss {

/// (prediction - target)², reduced. The composite `mse` op.
ValueId mse(Emitter& e, ValueId prediction, ValueId target, Reduction reduction = Reduction::Mean);
/// |prediction - target|, reduced.
ValueId l1(Emitter& e, ValueId prediction, ValueId target, Reduction reduction = Reduction::Mean);
/// Huber-like: 0.5·d²/beta where |d| < beta, else |d| - 0.5·beta (d = prediction -
/// target); beta = 0 is l1. beta must be >= 0.
ValueId smooth_l1(Emitter& e, ValueId prediction, ValueId target,
                  Reduction reduction = Reduction::Mean, double beta = 1.0);

/// PyTorch's huber_loss: 0.5·d² where |d| < delta, else delta·(|d| - 0.5·delta) (d =
/// prediction - target), reduced; delta·smooth_l1 with beta = delta. delta must be > 0.
ValueId huber(Emitter& e, ValueId prediction, ValueId target, Reduction reduction = Reduction::Mean,
              double delta = 1.0);

struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  /// ε in [0, 1]: the target is (1 - ε)·one_hot + ε/C, as in PyTorch.
  double label_smoothing = 0;
  /// One weight per class, or empty for none. Each sample's loss is scaled by its
  /// label's weight (the smoothing term by every class's), and Mean divides by the sum
  /// of the labels' weights, as PyTorch's `weight=` does.
  std::vector<double> weight;
};
/// logits [N, C] (float), labels [N] (i64 class indices in [0, C)) -> -log_softmax
/// picked at the label, reduced over N. Without label smoothing or weights this is the
/// composite `cross_entropy` op (which checks the label range at run time); with either,
/// log_softmax and one_hot primitives (a label outside [0, C) then contributes only the
/// smoothing term).
ValueId cross_entropy(Emitter& e, ValueId logits, ValueId labels, CrossEntropyOptions options = {});
/// log_probs [N, C], labels [N] (i64) -> -log_probs[n, label[n]], reduced over N. With
/// `weight` (one per class, PyTorch's `weight=`), each sample's loss is scaled by its
/// label's weight and Mean divides by the sum of the labels' weights, not by N.
ValueId nll(Emitter& e, ValueId log_probs, ValueId labels, Reduction reduction = Reduction::Mean,
            const std::vector<double>& weight = {});
/// PyTorch's poisson_nll_loss: exp(input) - target·input when `log_input`, else
/// input - target·log(input + eps); with `full`, plus the Stirling term
/// target·log(target) - target + 0.5·log(2π·target) where target > 1.
struct PoissonNllOptions {
  Reduction reduction = Reduction::Mean;
  bool log_input = true;
  bool full = false;
  double eps = 1e-8;
};
ValueId poisson_nll(Emitter& e, ValueId input, ValueId target, PoissonNllOptions options = {});
/// Binary cross-entropy on probabilities in [0, 1]: -(y·log p + (1 - y)·log(1 - p)), each
/// log clamped at -100 as in PyTorch.
ValueId bce(Emitter& e, ValueId probabilities, ValueId target,
            Reduction reduction = Reduction::Mean);
/// Binary cross-entropy on logits, numerically stable for any x:
/// max(x, 0) - x·y + log1p(exp(-|x|)).
ValueId bce_with_logits(Emitter& e, ValueId logits, ValueId target,
                        Reduction reduction = Reduction::Mean);
/// PyTorch's kl_div: the input is log-probabilities, the target probabilities (or
/// log-probabilities with `log_target`); pointwise target·(log target - input), with
/// 0·log 0 = 0. Reduction Mean averages over every element (PyTorch's default, which it
/// warns about); BatchMean divides the sum by the batch size, the true KL divergence.
ValueId kl_div(Emitter& e, ValueId log_probs, ValueId target, Reduction reduction = Reduction::Mean,
               bool log_target = false);
/// torchvision.ops.sigmoid_focal_loss (Lin et al. 2017) on logits and {0, 1} (or soft)
/// targets: alpha_t·(1 - p_t)^gamma·bce_with_logits, p = sigmoid(logits),
/// p_t = p·y + (1 - p)·(1 - y), alpha_t = alpha·y + (1 - alpha)·(1 - y); a negative
/// alpha turns the alpha weighting off. torchvision's default reduction is none; this
/// follows weft's (mean) like every other loss here.
struct FocalOptions {
  Reduction reduction = Reduction::Mean;
  double alpha = 0.25;  ///< In [0, 1], or negative for no weighting.
  double gamma = 2.0;   ///< >= 0; 0 is alpha-weighted bce_with_logits.
};
ValueId sigmoid_focal(Emitter& e, ValueId logits, ValueId target, FocalOptions options = {});
/// PyTorch's hinge_embedding_loss: x where y = 1, max(0, margin - x) where y = -1 (the
/// target holds 1 or -1, as a float tensor of the input's type), reduced.
ValueId hinge_embedding(Emitter& e, ValueId input, ValueId target,
                        Reduction reduction = Reduction::Mean, double margin = 1.0);

// ---- Losses of three inputs. As modules they take the first from the stream and the
// other two from uses({...}), e.g.
//     FlowBuilder::from(Identity()).input({"x2", "y"})
//         .through(MarginRankingLoss()).uses({"x2", "y"})

/// PyTorch's margin_ranking_loss: max(0, -y·(x1 - x2) + margin), reduced; x1, x2 and y
/// (1 or -1) of one float type.
ValueId margin_ranking(Emitter& e, ValueId x1, ValueId x2, ValueId y,
                       Reduction reduction = Reduction::Mean, double margin = 0.0);
/// PyTorch's cosine_embedding_loss on x1, x2 [N, D] and y [N] (1 or -1, x1's dtype):
/// 1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1, with PyTorch
/// 1.13's cos = Σx1·x2 / sqrt((Σx1² + 1e-12)·(Σx2² + 1e-12)); rows with other y give 0.
ValueId cosine_embedding(Emitter& e, ValueId x1, ValueId x2, ValueId y,
                         Reduction reduction = Reduction::Mean, double margin = 0.0);
/// PyTorch's triplet_margin_loss: max(0, margin + d(a, p) - d(a, n)) with
/// d(x, y) = ||x - y + eps||_p over the last axis (pairwise_distance); with `swap`,
/// d(a, n) is replaced by min(d(a, n), d(p, n)). Anchor, positive and negative share one
/// float type.
struct TripletOptions {
  Reduction reduction = Reduction::Mean;
  double margin = 1.0;
  double p = 2.0;  ///< > 0.
  double eps = 1e-6;
  bool swap = false;
};
ValueId triplet_margin(Emitter& e, ValueId anchor, ValueId positive, ValueId negative,
                       TripletOptions options = {});

// ---- Connectionist temporal classification (Graves et al. 2006), four inputs. As a
// module: log_probs from the stream, the rest from uses({...}), e.g.
//     FlowBuilder::from(Linear(64, 28)).through(LogSoftmax(-1))      // [T, N, C]
//         .input({"targets", "input_lengths", "target_lengths"})
//         .through(CTCLoss()).uses({"targets", "input_lengths", "target_lengths"})
//         .build({{"x", f32({50, 8, 64})}, {"targets", i64({8, 20})},
//                 {"input_lengths", i64({8})}, {"target_lengths", i64({8})}})

struct CtcOptions {
  int64_t blank = 0;  ///< The blank class, in [0, C).
  /// Mean divides each sample's loss by its target length (at least 1), then averages
  /// over the batch, as PyTorch.
  Reduction reduction = Reduction::Mean;
  /// Infinite losses (no alignment of a target fits its input length) and their
  /// gradients become 0.
  bool zero_infinity = false;
};
/// PyTorch's ctc_loss: -log Σ over the alignments of each sample's target with its
/// frames of p(alignment). log_probs [T, N, C] (f32 or f64, already log_softmax-ed over C),
/// targets [N, S] (i64 class indices, each row padded past its length with anything),
/// input_lengths and target_lengths [N] (i64). Sample n reads frames t < input_lengths[n]
/// and targets[n, :target_lengths[n]]. The alpha recursion over the extended labels
/// (blank, l1, blank, l2, ..., blank: L = 2S + 1) runs in log space as one loop over the
/// T frames; log 0 is -1e30, finite, so that gradients stay finite. Building checks the
/// types, blank in [0, C) and S <= T (stricter than PyTorch, which accepts a wider
/// padding when every target length fits). The values are read at run time:
///  - a sample with no alignment (its target needs more frames than it has, a blank
///    between repeated labels included) has loss inf, as in PyTorch, and gradient 0
///    where PyTorch's is NaN; zero_infinity makes both 0, as in PyTorch;
///  - where PyTorch raises an error or returns garbage: input_lengths above T count as
///    T; a target length above S, or a label outside [0, C) within the target's length,
///    leaves no alignment (loss inf); an input length of 0 gives loss 0 for an empty
///    target (PyTorch returns uninitialized memory there).
/// The gradient is d loss / d log_probs. PyTorch's backward returns that plus
/// exp(log_probs) on each sample's frames, assuming a log_softmax before it (whose
/// gradient cancels the extra term), so the two agree through log_softmax only.
ValueId ctc(Emitter& e, ValueId log_probs, ValueId targets, ValueId input_lengths,
            ValueId target_lengths, CtcOptions options = {});

}  // namespace loss

// ---- The losses as modules: inputs (prediction, target), the target from uses(...).
ModulePtr MSELoss(Reduction reduction = Reduction::Mean);
ModulePtr L1Loss(Reduction reduction = Reduction::Mean);
ModulePtr SmoothL1Loss(Reduction reduction = Reduction::Mean, double beta = 1.0);
ModulePtr HuberLoss(Reduction reduction = Reduction::Mean, double delta = 1.0);
ModulePtr CrossEntropyLoss(loss::CrossEntropyOptions options = {});
ModulePtr NLLLoss(Reduction reduction = Reduction::Mean, std::vector<double> weight = {});
ModulePtr PoissonNLLLoss(loss::PoissonNllOptions options = {});
ModulePtr SigmoidFocalLoss(loss::FocalOptions options = {});
ModulePtr HingeEmbeddingLoss(Reduction reduction = Reduction::Mean, double margin = 1.0);
// Three inputs: the stream, then two values from uses({...}) in the order given.
ModulePtr MarginRankingLoss(Reduction reduction = Reduction::Mean, double margin = 0.0);
ModulePtr CosineEmbeddingLoss(Reduction reduction = Reduction::Mean, double margin = 0.0);
ModulePtr TripletMarginLoss(loss::TripletOptions options = {});
// Four inputs: log_probs (the stream), then targets, input_lengths and target_lengths
// from uses({...}), in that order.
ModulePtr CTCLoss(loss::CtcOptions options = {});
ModulePtr BCELoss(Reduction reduction = Reduction::Mean);
ModulePtr BCEWithLogitsLoss(Reduction reduction = Reduction::Mean);
ModulePtr KLDivLoss(Reduction reduction = Reduction::Mean, bool log_target = false);

}  // namespace weft
