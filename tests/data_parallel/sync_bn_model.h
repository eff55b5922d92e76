#pragma once
// The network of the SyncBatchNorm tests (sync_bn_check under mpirun, sync_bn_test in one
// process): Conv -> BatchNorm2d -> ReLU -> Linear on [N, 3, 4, 4], 3 classes, so the
// batch statistics feed every later layer.

#include "frontend/modules.h"

namespace weft::testing {

inline FlowPtr sync_bn_convnet(bool sync) {
  auto net = FlowBuilder::from(Conv2d(3, 4, {.kernel = 3, .padding = 1}))
                 .through(BatchNorm2d(4, {.sync = sync}))
                 .through(ReLU())
                 .through(Flatten())
                 .through(Linear(4 * 4 * 4, 3))
                 .build();
  return net.ok() ? *net : nullptr;
}

}  // namespace weft::testing
