#!/usr/bin/env bash
# Prepares one GPU lease for every open issue's device check, here (no GPU needed): builds
# the self-contained binaries that tests/cuda/open_issues_check.sh runs (the union of what
# reliability_check, architecture_check, nccl_check, mixed_precision_check,
# vector_check, cublaslt_check, suite_check.sh and mixed_suite_check.sh need: the suite's
# CUDA worker links the ten models in f32 and in bf16, and the transformer with fused attention), the libraries a GPU machine may lack and the data, and packs them
# into .gpu/ (git-ignored): the binaries and libraries as one xz archive (about 10 MB for
# some 130 MB of static binaries: they share most of their code and CUDA's fatbins
# compress well), the suite's libraries as suite_check.sh expects them, a 20,000-example
# Fashion-MNIST (13 MB) and a 4096-example one (2 MB). The device tool carries 64 MiB: .gpu
# (about 41 MB) with the tracked tree (about 13 MB); the dry run at the end checks it.
#
#   tests/cuda/lease_bundle.sh            # ends with open_issues_check.sh --dry-run all
#   # then, with the device tool, one lease (15 minutes, start-up included):
#   run(command="tests/cuda/open_issues_check.sh --budget=470 first", carry=[".gpu"], timeout_s=540)
#   run(command="tests/cuda/open_issues_check.sh --budget=230 second", carry=[".gpu"], timeout_s=300)
#   # (second's timeout_s: what status's budget_left_s leaves, less a minute; its --budget
#   # that less 70, so that a step running long is cut with the summary kept); later leases:
#   run(command="tests/cuda/open_issues_check.sh --budget=470 third", carry=[".gpu"], timeout_s=540)
#   run(command="tests/cuda/open_issues_check.sh --budget=240 fourth", carry=[".gpu"], timeout_s=300)
#   run(command="tests/cuda/open_issues_check.sh --budget=470 suite", carry=[".gpu"], timeout_s=540)
#   run(command="tests/cuda/open_issues_check.sh --budget=490 mixedsuite", carry=[".gpu"], timeout_s=560)
#   (open_issues_check.sh's header says what each runs, tests/cuda/README.md how long)
#
# A cold build of these targets takes a while on 2 cores (the suite's 21 AOT CUDA
# libraries among them, ten models in f32 and bf16 and transformer_cuda_fa); `.ci/run`'s `bazel build //...` builds the same ones.
set -euo pipefail
cd "$(dirname "$0")/../.."
binaries=(
  tests/cuda/cases_test runtime/cuda/executor_test tests/cuda/nccl_step_test
  tests/cuda/nccl_bandwidth tests/cuda/step_bench tests/cuda/vocab_bench tests/cuda/vocab_bench_scalar
  tests/cuda/gemm_bench tests/cuda/suite_bench
  tests/cuda/suite_bf16_bench examples/fashion_mnist/train_cuda
  examples/fashion_mnist/train_cuda_runtime_test examples/fashion_mnist/train_mlp_cuda_dp
  bench/suite bench/weft_aot_cuda_worker bench/loops_cuda runtime/cuda/persistent_loop_test
  runtime/cuda/recurrent_kernel_test
)
targets=()
for b in "${binaries[@]}"; do targets+=("//${b%/*}:${b##*/}"); done
bazel build "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
for b in "${binaries[@]}"; do cp -f "bazel-bin/$b" "$stage/"; done
# The drivers' shared libraries but glibc's, the compiler's and the GPU machine's own (CUDA,
# cuDNN, cuBLAS, NCCL): Gloo, Open MPI, httplib and what they load, OpenSSL's among them
# (the 2026-11-28 verification run on an H200 needed libssl.so.3 and libcrypto.so.3 carried).
for b in train_cuda train_mlp_cuda_dp; do
  ldd "bazel-bin/examples/fashion_mnist/$b" | awk '/=> \//{print $3}' |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libz|libcud[a-z]*|libnccl|libcublas[A-Za-z]*)\.so' |
    xargs -r -I{} cp -fL {} "$stage/lib/"
done
# Everything in .gpu is this script's: what an earlier bundle or a copy by hand left there
# would travel too.
rm -rf .gpu
mkdir -p .gpu
tar -C "$stage" -cf - . | xz -T2 -9 >.gpu/bundle.tar.xz
# suite_check.sh's own archive: the suite binary's libraries but glibc's.
ldd bazel-bin/bench/suite | awk '/=> \// {print $3}' |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  tar -czhf .gpu/suite_libs.tar.gz --transform 's|.*/||' -T -
# Fashion-MNIST: 20,000 of the training images and the whole test split (13 MB; the full
# set's 30 MB would put .gpu and the tracked tree over the device tool's 64 MiB), and the
# 4096-example subset of nccl_check.sh.
python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-20k 20000 10000
python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-small
du -sh .gpu .gpu/bundle.tar.xz .gpu/suite_libs.tar.gz
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')" |
  tee .gpu/COMMIT
# Every step of every check against what was just packed (no GPU needed).
tests/cuda/open_issues_check.sh --dry-run all
