#!/usr/bin/env bash
# The suite on a GPU ([GPU], #31) in one lease: `bench:suite --device=cuda --preset=paper`,
# weft from the AOT CUDA libraries of bench/aot (the ten models at the paper preset, each
# step one CUDA graph; bench/weft_aot_cuda_worker) and PyTorch 2.11's four GPU
# configurations (bench/pytorch/run.py --device=cuda: eager, fused Adam, torch.compile for
# the transformer and mlp, the whole step as one CUDA graph; TF32 off), interleaved per
# model, both from the same INIT weights, first losses checked, device memory on both
# sides, the suite's table on stdout and its JSON in $OUT/suite.json. Logs go to $OUT (or
# /tmp/weft-gpu). With --fuse-attention=both (a default below) the transformer's weft side
# also runs with fused attention (bench/aot's transformer_cuda_fa: the attention kernels,
# forward and FlashAttention-2's backward), interleaved with its default library in the
# same rounds: two transformer rows against the same PyTorch runs, the A/B that
# TrainOptions::fuse_attention's default waits for (#31); both rows are printed again at
# the end ("== transformer ...").
#
# Build and copy here (the CUDA worker, about 22 MB with its f32 and bf16 tables, links
# no MLIR and carries its own libstdc++; the suite binary's shared libraries but glibc's,
# oneDNN's 40 MB for the CPU roofline among them, travel compressed in
# .gpu/suite_libs.tar.gz, 12 MB; the carry limit is 64 MiB):
#   bazel build //bench:suite
#   mkdir -p .gpu && cp -f bazel-bin/bench/suite bazel-bin/bench/weft_aot_cuda_worker .gpu/
#   ldd bazel-bin/bench/suite | awk '/=> \// {print $3}' \
#     | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
#     | tar -czhf .gpu/suite_libs.tar.gz --transform 's|.*/||' -T -
# --profile needs .gpu/suite_bench too (`bazel build //tests/cuda:suite_bench`, copied
# likewise; leave it out of .gpu otherwise).
# Device call (estimated 7 minutes at the defaults below, not yet measured; a torch.compile
# takes about a minute per model and round; the fused transformer's one weft run adds
# seconds):
#   run(command="tests/cuda/suite_check.sh", carry=[".gpu"], timeout_s=560)
#
#   tests/cuda/suite_check.sh [SUITE FLAGS...]     default --fuse-attention=both --epochs=5
#                                                  --warmup=1 --rounds=1
#   tests/cuda/suite_check.sh --profile=MODEL,MODEL...
#
# SUITE FLAGS replace the defaults (e.g. `--models=lstm_seq,gru_seq --rounds=2`); the
# paper's protocol is the suite's own default, 3 warm-up and 20 measured epochs over 2
# rounds (about 25 minutes: two leases' worth).
#
# --profile: where the time goes instead, model by model on both sides: weft's
# invocations launch by launch and by kind (`suite_bench --profile`), with cuDNN's
# deterministic and fastest algorithm policies, and PyTorch's CUDA kernels and cuDNN
# settings (bench/pytorch/cuda_profile.py).
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"
if [[ "${1:-}" == --profile=* ]]; then
  models=${1#--profile=}
  for m in ${models//,/ }; do
    for conv in deterministic fastest; do
      timeout 90 .gpu/suite_bench --case="$m" --steps=30 --warmup=5 --profile=30 --conv=$conv \
        >"$out/profile_${m}_$conv.txt" 2>&1
      echo "== suite_bench --case=$m --conv=$conv rc=$?"
      grep -E "weft cuda|profile:" "$out/profile_${m}_$conv.txt" | sed 's/ (min .*device/ device/'
    done
  done
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/pytorch/cuda_profile.py --models="$models" \
    >"$out/profile_pytorch.txt" 2>&1
  echo "== cuda_profile.py rc=$?"
  grep -E "^pytorch" "$out/profile_pytorch.txt" | cut -c1-150
  exit 0
fi
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(--fuse-attention=both --epochs=5 --warmup=1 --rounds=1)
# The suite's runfiles as `bazel run` lays them out: the worker beside the PyTorch scripts
# of this checkout; its shared libraries beside them.
rf=$(mktemp -d)
mkdir -p "$rf/weft/bench" "$rf/lib"
cp -f .gpu/weft_aot_cuda_worker "$rf/weft/bench/"
cp -rf bench/pytorch "$rf/weft/bench/"
tar -xzf .gpu/suite_libs.tar.gz -C "$rf/lib"
# The libraries for the suite's own process only (the dynamic loader's --library-path,
# not LD_LIBRARY_PATH): its children, PyTorch among them, keep the machine's.
RUNFILES_DIR="$rf" TMPDIR="$out" timeout 540 \
  /lib64/ld-linux-x86-64.so.2 --library-path "$rf/lib" .gpu/suite --device=cuda --preset=paper --python="$(command -v python3)" \
  --json="$out/suite.json" "${flags[@]}" 2>&1 | tee "$out/suite.txt"
echo "== bench:suite --device=cuda rc=${PIPESTATUS[0]}"
# The transformer's rows (with --fuse-attention=both: unfused, then fused) for the summary.
grep -E '^\| transformer' "$out/suite.txt" | sed 's/^/== /'
rm -rf "$rf"
