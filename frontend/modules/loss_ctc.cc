// CTC loss (frontend/losses.h), matching PyTorch 1.13's ctc_loss: the alpha recursion of
// Graves et al. (2006) in log space as one `scan` over the frames, composed of primitives
// so that autodiff (through the scan), fusion and every backend handle it with no op of
// its own; plus the module taking log_probs from the stream and the rest from uses(...).
//
// Per sample, over the extended labels l' = (blank, l_0, blank, l_1, ..., blank), L = 2S + 1:
//   alpha_-1 = (0, log 0, ..., log 0)              (a virtual start feeding s = 0 and 1)
//   alpha_t[s] = logsumexp(alpha_{t-1}[s], alpha_{t-1}[s-1], alpha_{t-1}[s-2] + skip[s])
//                + log_probs[t, n, l'_s]           for t < input_lengths[n], else alpha_{t-1}
//   loss_n = -logsumexp(alpha_{T-1}[2·len_n], alpha_{T-1}[2·len_n - 1])
// where skip[s] is 0 when l'_s is a label differing from l'_{s-2} and log 0 elsewhere.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "frontend/losses.h"
#include "frontend/modules/loss_detail.h"

namespace weft {
namespace loss {

namespace {

using detail::check_not_batchmean;
using detail::reduce;

/// log 0 in the recursion: finite, so that exp(kLogZero - m) is exactly 0 and no
/// gradient becomes NaN; a sum of two stays finite in f32.
constexpr double kLogZero = -1e30;
/// A loss above this means no alignment: -kLogZero, give or take the emissions the
/// recursion added (any real loss is many orders of magnitude below).
constexpr double kNoAlignment = 1e29;

struct CtcSizes {
  int64_t frames, batch, classes, labels;  // T, N, C, S
};

CtcSizes check_ctc(Emitter& e, ValueId log_probs, ValueId targets, ValueId input_lengths,
                   ValueId target_lengths, int64_t blank) {
  const Type lp = e.type(log_probs);
  // Not f16 or bf16: log 0's stand-in, -1e30, is beyond f16's range, and PyTorch's CPU
  // ctc_loss takes neither.
  if (lp.shape.rank() != 3 || (lp.dtype != DType::f32 && lp.dtype != DType::f64)) {
    e.fail("ctc: log_probs must be an f32 or f64 [T, N, C] tensor (frames, batch, classes; "
           "log_softmax over C), got " + lp.to_string());
  }
  const int64_t frames = lp.shape[0], batch = lp.shape[1], classes = lp.shape[2];
  if (blank < 0 || blank >= classes) {
    e.fail("ctc: blank must be a class of log_probs " + lp.to_string() + ", in [0, " +
           std::to_string(classes) + "), got " + std::to_string(blank));
  }
  const Type tt = e.type(targets);
  if (tt.dtype != DType::i64 || tt.shape.rank() != 2 || tt.shape[0] != batch) {
    e.fail("ctc: targets must be i64 class indices [N, S] with N = " + std::to_string(batch) +
           " (one padded row per sample of log_probs " + lp.to_string() + "), got " +
           tt.to_string() + "; PyTorch's 1-D concatenated targets are not taken: pad them");
  }
  const int64_t labels = tt.shape[1];
  if (labels < 1) {
    e.fail("ctc: targets " + tt.to_string() +
           " need at least one column (a batch of empty targets: one column of padding, "
           "target_lengths 0)");
  }
  if (labels > frames) {
    e.fail("ctc: targets " + tt.to_string() + " hold up to S = " + std::to_string(labels) +
           " labels per sample, but log_probs " + lp.to_string() + " has only T = " +
           std::to_string(frames) +
           " frames, and a target cannot be longer than its input; pad targets to at most T "
           "columns");
  }
  const Type lengths{DType::i64, Shape({batch})};
  for (auto [name, v] :
       {std::pair{"input_lengths", input_lengths}, {"target_lengths", target_lengths}}) {
    if (e.type(v) != lengths) {
      e.fail(std::string("ctc: ") + name + " must be " + lengths.to_string() +
             " (one per sample of log_probs " + lp.to_string() + "), got " +
             e.type(v).to_string());
    }
  }
  return {frames, batch, classes, labels};
}

/// labels [..., S] with blanks [..., 1] interleaved: [..., 2S + 1] holding blank, l_0,
/// blank, l_1, ..., l_{S-1}, blank.
ValueId interleave_blanks(Emitter& e, ValueId blanks, ValueId labels) {
  const IntList dims = e.shape(labels).dims;
  const auto rank = static_cast<int64_t>(dims.size());
  IntList column = dims;  // [..., S, 1]
  column.push_back(1);
  ValueId spread = e.reshape(e.op(Op::BroadcastTo, {blanks}, {{"shape", dims}}), column);
  ValueId pairs = e.op(Op::Concat, {spread, e.reshape(labels, column)}, {{"axis", rank}});
  IntList flat = dims;
  flat.back() *= 2;
  return e.op(Op::Concat, {e.reshape(pairs, flat), blanks}, {{"axis", rank - 1}});
}

ValueId slice(Emitter& e, ValueId x, IntList start, IntList stop) {
  return e.op(Op::Slice, {x}, {{"start", std::move(start)}, {"stop", std::move(stop)}});
}

/// x [N, L'] padded on the right of its last axis to `width` with `value`.
ValueId pad_right(Emitter& e, ValueId x, int64_t width, double value) {
  return e.op(Op::Pad, {x}, {{"low", IntList{0, 0}},
                             {"high", IntList{0, width - e.shape(x)[1]}},
                             {"value", value}});
}

/// x [N, L] moved `by` places along L: x[:, s - by], log 0 where s < by.
ValueId shifted(Emitter& e, ValueId x, int64_t by) {
  const Shape s = e.shape(x);
  return e.op(Op::Pad, {slice(e, x, {0, 0}, {s[0], s[1] - by})},
              {{"low", IntList{0, by}}, {"high", IntList{0, 0}}, {"value", kLogZero}});
}

/// log Σ exp(x) over values of one type, elementwise, as m + log Σ exp(x - m) with m
/// their maximum (a term is exp(0) = 1, so the log's argument is at least 1).
ValueId logsumexp(Emitter& e, const std::vector<ValueId>& xs) {
  ValueId m = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) m = e.op(Op::Maximum, {m, xs[i]});
  ValueId total = kNoValue;
  for (ValueId x : xs) {
    ValueId term = e.op(Op::Exp, {e.sub(x, m)});
    total = total == kNoValue ? term : e.add(total, term);
  }
  return e.add(m, e.op(Op::Log, {total}));
}

/// [T, N, L]: log_probs at each extended label, gathered by a one-hot product (whose
/// gradient sums a repeated label's terms); a label outside [0, C) is log 0.
ValueId emissions(Emitter& e, const CtcSizes& n, ValueId log_probs, ValueId targets,
                  int64_t blank) {
  const DType dtype = e.type(log_probs).dtype;
  ValueId hot = e.op(Op::OneHot, {targets}, {{"depth", n.classes}, {"dtype", dtype}});  // [N, S, C]
  ValueId by_sample = e.transpose(log_probs, {1, 0, 2});                 // [N, T, C]
  ValueId picked = e.matmul(by_sample, e.transpose_last2(hot));         // [N, T, S]
  ValueId in_range = e.op(Op::And, {e.op(Op::Ge, {targets, e.constant(0, DType::i64)}),
                                    e.op(Op::Lt, {targets, e.constant(n.classes, DType::i64)})});
  ValueId out_of_range =
      e.op(Op::Select, {in_range, e.constant(0, dtype), e.constant(kLogZero, dtype)});
  picked = e.add(e.transpose(picked, {1, 0, 2}), out_of_range);  // [T, N, S]
  ValueId blanks = slice(e, log_probs, {0, 0, blank}, {n.frames, n.batch, blank + 1});
  return interleave_blanks(e, blanks, picked);
}

/// [N, L]: 0 where the recursion may jump from l'_{s-2} to l'_s, log 0 elsewhere. Only
/// onto a label unlike the one before it (PyTorch's rule); targets[:, 0] is compared with
/// a -1 of padding, as the jump to s = 1 reads log 0 from the shift anyway.
ValueId skip_allowed(Emitter& e, const CtcSizes& n, ValueId targets, DType dtype) {
  ValueId before = e.op(Op::Pad, {slice(e, targets, {0, 0}, {n.batch, n.labels - 1})},
                        {{"low", IntList{0, 1}}, {"high", IntList{0, 0}}, {"value", -1.0}});
  ValueId skip = e.op(Op::Select, {e.op(Op::Ne, {targets, before}), e.constant(0, dtype),
                                   e.constant(kLogZero, dtype)});
  return interleave_blanks(e, e.full(Shape({n.batch, 1}), kLogZero, dtype), skip);
}

/// alpha [N, L] after every frame: one loop over the T frames, alpha carried, each
/// sample's frames from input_lengths[n] on leaving it as it is.
ValueId alpha_recursion(Emitter& e, const CtcSizes& n, ValueId emissions, ValueId skip,
                        ValueId input_lengths) {
  const DType dtype = e.type(emissions).dtype;
  const int64_t extended = 2 * n.labels + 1;
  ValueId frame =
      e.op(Op::Iota, {}, {{"shape", IntList{n.frames, n.batch}}, {"axis", int64_t{0}}});
  ValueId active = e.reshape(e.op(Op::Lt, {frame, input_lengths}), {n.frames, n.batch, 1});
  // Before the first frame: log 1 at s = 0, a virtual start that the recursion's stay
  // and shift by one carry to s = 0 and s = 1.
  ValueId alpha = pad_right(e, e.full(Shape({n.batch, 1}), 0, dtype), extended, kLogZero);
  // Frame t's slices, stand-ins while the loop's body is emitted.
  ValueId emission_t = e.reshape(slice(e, emissions, {0, 0, 0}, {1, n.batch, extended}),
                                 {n.batch, extended});
  ValueId active_t = e.reshape(slice(e, active, {0, 0, 0}, {1, n.batch, 1}), {n.batch, 1});
  ScanRegion region;
  region.length = n.frames;
  region.first_node = e.num_nodes();
  ValueId jump = e.add(shifted(e, alpha, 2), skip);
  ValueId next = e.add(logsumexp(e, {alpha, shifted(e, alpha, 1), jump}), emission_t);
  region.carries = {alpha};
  region.next_carries = {e.op(Op::Select, {active_t, next, alpha})};
  region.slices = {emission_t, active_t};
  region.xs = {emissions, active};
  return e.outline_scan(region)[0];
}

/// [N]: -log p(target) = -logsumexp of the paths ending on the last label or on the
/// blank after it, alpha[2·len] and alpha[2·len - 1] (alpha[0] alone for an empty
/// target). `lengths` are the target lengths as floats.
ValueId negative_log_likelihood(Emitter& e, const CtcSizes& n, ValueId alpha, ValueId lengths) {
  const DType dtype = e.type(alpha).dtype;
  const int64_t extended = 2 * n.labels + 1;
  ValueId end = e.reshape(e.add(lengths, lengths), {n.batch, 1});
  ValueId position = e.op(Op::Iota, {}, {{"shape", IntList{n.batch, extended}},
                                         {"axis", int64_t{1}},
                                         {"dtype", dtype}});
  ValueId at_end = e.op(Op::Or, {e.op(Op::Eq, {position, end}),
                                 e.op(Op::Eq, {position, e.sub(end, e.constant(1, dtype))})});
  ValueId ends = e.op(Op::Select, {at_end, alpha, e.constant(kLogZero, dtype)});
  ValueId m = e.op(Op::Max, {ends}, {{"axes", IntList{1}}, {"keepdims", true}});
  ValueId total = e.sum(e.op(Op::Exp, {e.sub(ends, m)}), {1});
  return e.op(Op::Neg, {e.add(e.reshape(m, {n.batch}), e.op(Op::Log, {total}))});
}

}  // namespace

ValueId ctc(Emitter& e, ValueId log_probs, ValueId targets, ValueId input_lengths,
            ValueId target_lengths, CtcOptions options) {
  check_not_batchmean(e, "ctc", options.reduction);
  const CtcSizes n =
      check_ctc(e, log_probs, targets, input_lengths, target_lengths, options.blank);
  const DType dtype = e.type(log_probs).dtype;
  ValueId alpha = alpha_recursion(e, n, emissions(e, n, log_probs, targets, options.blank),
                                  skip_allowed(e, n, targets, dtype), input_lengths);
  ValueId lengths = e.op(Op::Cast, {target_lengths}, {{"dtype", dtype}});
  ValueId loss = negative_log_likelihood(e, n, alpha, lengths);
  // No alignment: inf as PyTorch (0 with zero_infinity); the select sends that sample no
  // gradient either way.
  const double none = options.zero_infinity ? 0.0 : std::numeric_limits<double>::infinity();
  ValueId impossible = e.op(Op::Gt, {loss, e.constant(kNoAlignment, dtype)});
  loss = e.op(Op::Select, {impossible, e.constant(none, dtype), loss});
  if (options.reduction == Reduction::Mean) {
    // PyTorch: each loss over its target length (at least 1), then the batch mean.
    return e.op(Op::Mean, {e.div(loss, e.op(Op::Maximum, {lengths, e.constant(1, dtype)}))});
  }
  return reduce(e, loss, options.reduction);
}

}  // namespace loss

ModulePtr CTCLoss(loss::CtcOptions options) {
  std::string extra = (options.blank != 0 ? ", blank=" + std::to_string(options.blank) : "") +
                      (options.zero_infinity ? ", zero_infinity" : "");
  return std::make_shared<loss::detail::MultiInputLoss>(
      loss::detail::named("CTCLoss", options.reduction, extra), 4,
      "log_probs (the stream), then targets, input_lengths and target_lengths from uses({...})",
      [options](Emitter& e, const std::vector<ValueId>& in) {
        return loss::ctc(e, in[0], in[1], in[2], in[3], options);
      });
}

}  // namespace weft
