#!/usr/bin/env bash
# Benchmark: one epoch of Fashion-MNIST MLP training (784-256-256-10, SGD, batch 128)
# with weft's reference interpreter and with PyTorch, in one invocation, alternating
# which goes first. PyTorch runs single-threaded (the interpreter is single-threaded)
# with its best allocator and OpenMP settings (../shared/ENVIRONMENT.md).
#
#   bench/reference_mlp.sh [--epochs=N]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup --peer
bazel build --noshow_progress --ui_event_filters=-info //examples/fashion_mnist:train_mlp
weft() { (cd bazel-bin/examples/fashion_mnist/train_mlp.runfiles/weft &&
          ../../train_mlp "$@"); }
torch() { GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
          OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/pytorch/mlp_epoch.py --threads=1 "$@"; }
for round in 1 2; do
  if [[ $round == 1 ]]; then
    echo "== weft reference interpreter";  weft "$@" | tail -n +2
    echo "== PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), 1 thread"; torch "$@"
  else
    echo "== PyTorch, 1 thread"; torch "$@"
    echo "== weft reference interpreter"; weft "$@" | tail -n +2
  fi
done
