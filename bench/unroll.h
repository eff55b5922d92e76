#pragma once
// Recurrent networks over a whole sequence, unrolled: one cell instance per layer, applied
// at every time step (so the steps share its parameters), until the builder's loop
// construct lands.
//
//   // x [batch, 50, 64] -> the top layer's last hidden state [batch, 128]
//   auto net = FlowBuilder::from(UnrolledLSTM(/*input_size=*/64, /*hidden_size=*/128,
//                                             /*layers=*/2))
//                  .through(Linear(128, 64));
//
// At step t, layer 0 receives x[:, t, :] and layer l > 0 receives layer l-1's new hidden
// state, as in PyTorch's multi-layer nn.GRU / nn.LSTM; every state starts at zero. The
// cells are GRUCell / LSTMCell (frontend/modules.h), emitted as sub-modules named `l0`,
// `l1`, ...: at chain position 0 the parameters are `0.l0.weight_ih`, `0.l0.weight_hh`,
// `0.l0.bias_ih`, `0.l0.bias_hh`, `0.l1.weight_ih`, ... — PyTorch's `weight_ih_l0`, ...

#include <cstdint>
#include <source_location>

#include "frontend/module.h"

namespace weft::bench {

/// Step `t` of a batch-first sequence: [batch, T, features...] -> [batch, features...].
ModulePtr TimeStep(int64_t t);

/// A stack of `layers` GRU cells over a [batch, T, input_size] sequence, from h = 0;
/// returns the top layer's final hidden state [batch, hidden_size].
ModulePtr UnrolledGRU(int64_t input_size, int64_t hidden_size, int64_t layers = 1,
                      std::source_location loc = std::source_location::current());

/// A stack of `layers` LSTM cells over a [batch, T, input_size] sequence, from h = c = 0;
/// returns the top layer's final hidden state h [batch, hidden_size].
ModulePtr UnrolledLSTM(int64_t input_size, int64_t hidden_size, int64_t layers = 1,
                       std::source_location loc = std::source_location::current());

}  // namespace weft::bench
