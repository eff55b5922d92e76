#!/usr/bin/env bash
# The suite on a GPU in bf16 (#30, [Mixed precision]) in one device call:
# suite_check.sh with --precision=bf16, i.e. `bench:suite --device=cuda --preset=paper
# --precision=bf16`: weft from the bf16 AOT CUDA libraries of bench/aot (NAME_cuda_bf16:
# autocast, f32 master weights, each step one CUDA graph) against PyTorch 2.11's four GPU
# configurations under torch.autocast("cuda", dtype=torch.bfloat16) (eager, fused Adam,
# torch.compile for the transformer and mlp, the whole step as one CUDA graph with
# autocast's cache off; bench/pytorch/cuda_suite.py), from the same INIT weights, first
# losses compared (bf16's tolerance, 1e-2·(1 + |PyTorch|)), the table on stdout and the
# JSON (each model's "precision": "bf16") in $OUT/suite.json. Carried in .gpu as the f32
# suite is (tests/cuda/lease_bundle.sh; suite_check.sh's header).
#
# Device call (estimated 7 minutes, as the f32 suite: not yet measured), its own call
# (the f32 suite, `open_issues_check.sh suite`, is another):
#   run(command="tests/cuda/open_issues_check.sh --budget=490 mixedsuite", carry=[".gpu"], timeout_s=560)
#
#   tests/cuda/mixed_suite_check.sh [SUITE FLAGS...]   default --epochs=5 --warmup=1 --rounds=1
#
# SUITE FLAGS are added after the defaults (a later flag wins: `--models=mlp,convnet`).
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"
"$(dirname "$0")/suite_check.sh" --precision=bf16 --epochs=5 --warmup=1 --rounds=1 "$@"
