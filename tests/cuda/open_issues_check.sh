#!/usr/bin/env bash
# The open issues' GPU checks in as few device calls as the lease allows, from what
# tests/cuda/lease_bundle.sh packed into .gpu/ here (its header has the device calls).
#
#   tests/cuda/open_issues_check.sh [--budget=S] KEY...  e.g. --budget=470 first
#   tests/cuda/open_issues_check.sh --dry-run KEY...     no GPU: checks the steps (below)
#
# --budget=S: no script starts after S seconds (its line says it was skipped), and no step
# of one runs past S + 40 s (each step's `timeout` is cut to what is left: lease_common.sh;
# a step cut or not started shows rc=124), so that a call ends with its summary and packed
# logs before the device tool's timeout_s cuts it; give timeout_s a minute more than S.
#
# A lease has 15 minutes of device time in all, the machine's start-up (one to two
# minutes) included: two calls. Correctness of the default paths first, the rest after:
#
#   run(command="tests/cuda/open_issues_check.sh --budget=470 first", carry=[".gpu"], timeout_s=540)
#   run(command="tests/cuda/open_issues_check.sh --budget=230 second", carry=[".gpu"], timeout_s=300)
#   (second's timeout_s: status's budget_left_s less 60, at most 600, and its --budget that
#   less 70: `second` is one script, which only the budget's deadline can cut short with
#   its summary kept; give_back after it)
#
#   first   call 1, every script's `default` part (150-320 s estimated), the
#           correctness checks of the default paths of #28-#32 (LEASE_PART=default):
#             29 every GPU case launch by launch and as one CUDA graph (f32, f64, bf16,
#                f16, vectorized, loops, attention, cuBLASLt's cases with the switch
#                off), executor_test, train_cuda_runtime_test, train_cuda 2 epochs;
#             30 the f16/bf16 cases and the weight copies again on their own, TF32,
#                memcheck over the bf16 cases; the vec_* cases and their memcheck;
#             31 the loop, attention and fused-attention cases, memcheck (slots, the
#                attention kernels) and racecheck (the backward kernel); the input
#                prefetch tests, their memcheck, train_cuda with and without it;
#             31rnn the persistent kernel's own tests (persistent_loop_test,
#                recurrent_kernel_test: opt-in kernel, its own cases), plainly;
#             28 the skipped-slot and loop cases, memcheck; 32 nccl_step_test (plain and
#                as a torchrun world of one), the all_reduce case, train_mlp_cuda_dp.
#   second  call 2 (200-420 s estimated; timeout_s: what is left less a minute), the opt-in
#           persistent loops, which decide whether that kernel can default on (31rnn's
#           rest: its tests under memcheck and racecheck, the loop cases switched on and
#           under memcheck, lstm_seq/gru_seq timed off and on, then checked on).
#   third   a later lease's first call: #30's timings (step_bench, gemm_bench, the suite
#           in f32, bf16 and TF32), the vocabulary softmax timed, NCCL's bandwidth, then
#           (last, so that --budget drops it first) memcheck over every case `first`
#           leaves out and racecheck over the reduction and row kernels (#31's "the GPU
#           cases pass under memcheck": last shown whole at 19c2f86).
#   fourth  its second call: #31's cuBLASLt epilogues (opt-in: cases off and on, memcheck,
#           A/B), #31's loop overhead per trip, then the fused-attention A/B that
#           TrainOptions::fuse_attention waits for.
#   suite   a lease of its own: suite_check.sh (the ten models against PyTorch's four
#           configurations, about seven minutes; the transformer's weft side both without
#           and with fused attention, two rows against the same PyTorch runs: the suite's
#           A/B for TrainOptions::fuse_attention, #31).
#   mixedsuite  the same suite in bf16 (#30): mixed_suite_check.sh, weft's bf16 CUDA
#           libraries against PyTorch's four configurations under torch.autocast("cuda",
#           dtype=torch.bfloat16), about seven minutes too: a call of its own, after the
#           f32 `suite` (the two do not fit one lease's 15 minutes at these estimates):
#             run(command="tests/cuda/open_issues_check.sh --budget=490 mixedsuite", carry=[".gpu"], timeout_s=560)
#
# Estimated wall time of each step is in each script's header; the sums, and what they
# rest on, are in tests/cuda/README.md ("Device time"). The keys of earlier notes still
# run each script whole: 28 (reliability_check.sh), 29 (architecture_check.sh),
# 30 (mixed_precision_check.sh, vector_check.sh), 31 (loop_slots_check.sh,
# input_overlap_check.sh), 31rnn (persistent_loops_check.sh), 31perf (cublaslt_check.sh,
# loop_overhead_check.sh), 32 (nccl_check.sh), suite (suite_check.sh); `all` is every
# script whole (for --dry-run), mixedsuite's among them.
#
# --dry-run runs nothing on a GPU (tests/cuda/lease_dry_run.sh): every device step of the
# scripts is checked against .gpu/ instead (the program packed, its libraries found, each
# --gtest_filter matching a test, each --case a case, each flag known, each file there)
# and its time limit summed. Without --dry-run the same checks run first as a preflight
# (a few seconds, no device work), and their problems are printed before anything runs.
#
# Logs: each key's in /tmp/weft-gpu/KEY; where $OUT is set (the device tool's folder, which
# brings back 8 files at most) they are packed into $OUT/logs.tar.gz after every script and
# every 30 s, and this output is in $OUT/summary.txt. Each script's summary lines are printed
# as it runs, prefixed with its key; a last line per script gives its exit status and wall
# time, and the lines starting with "==" are printed again at the end.
set -uo pipefail
cd "$(dirname "$0")/../.."

# scripts KEY: the key's steps, SCRIPT or SCRIPT:PART (LEASE_PART=PART).
scripts() {
  case "$1" in
    first) echo architecture_check.sh:default mixed_precision_check.sh:default \
                vector_check.sh:default loop_slots_check.sh:default \
                input_overlap_check.sh:default persistent_loops_check.sh:default \
                reliability_check.sh:default nccl_check.sh:default ;;
    second) echo persistent_loops_check.sh:rest ;;
    third) echo mixed_precision_check.sh:rest vector_check.sh:rest nccl_check.sh:rest \
                architecture_check.sh:rest ;;
    fourth) echo cublaslt_check.sh loop_overhead_check.sh loop_slots_check.sh:rest ;;
    28) echo reliability_check.sh ;;
    29) echo architecture_check.sh ;;
    30) echo mixed_precision_check.sh vector_check.sh ;;
    31) echo loop_slots_check.sh input_overlap_check.sh ;;
    31rnn) echo persistent_loops_check.sh ;;
    31perf) echo cublaslt_check.sh loop_overhead_check.sh ;;
    32) echo nccl_check.sh ;;
    suite) echo suite_check.sh ;;
    mixedsuite) echo mixed_suite_check.sh ;;
    all) for k in 28 29 30 31 31rnn 31perf 32 suite mixedsuite; do scripts $k; done ;;
    *) return 1 ;;
  esac
}
keys="first, second, third, fourth, suite, mixedsuite, 28, 29, 30, 31, 31rnn, 31perf, 32 or all"

dry="" budget=""
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --budget=*) budget=${1#--budget=} ;;
    *) echo "error: unknown flag '$1' (--dry-run, --budget=SECONDS)"; exit 2 ;;
  esac
  shift
done
[[ "$budget" =~ ^[0-9]*$ ]] || { echo "error: --budget takes seconds, not '$budget'"; exit 2; }
# The steps' deadline (lease_common.sh's timeout), counted like $SECONDS from this start.
if [ -n "$budget" ] && [ -z "$dry" ]; then
  export LEASE_DEADLINE=$(( $(date +%s) - SECONDS + budget + 40 ))
fi
if [ $# -eq 0 ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
fi
for key in "$@"; do
  scripts "$key" >/dev/null || { echo "error: no device check '$key' ($keys)"; exit 2; }
done

# The bundle unpacked in place (.gpu/.unpacked lists what it holds), and taken away again
# when this ends: the device tool carries 64 MiB with the tracked tree, and the unpacked
# programs are some 130 MB.
unpacked=""
take_away() {
  [ -n "$unpacked" ] && [ -f .gpu/.unpacked ] || return 0
  (cd .gpu && grep -v '/$' .unpacked | xargs -r rm -f && rmdir lib 2>/dev/null; rm -f .unpacked)
}
if [ -s .gpu/bundle.tar.xz ] && [ ! .gpu/.unpacked -nt .gpu/bundle.tar.xz ]; then
  tar -xvJf .gpu/bundle.tar.xz -C .gpu >.gpu/.unpacked ||
    { echo "error: cannot unpack .gpu/bundle.tar.xz"; exit 1; }
  unpacked=1
  trap take_away EXIT
fi
if [ ! -x .gpu/cases_test ]; then
  echo "error: no .gpu/cases_test: run tests/cuda/lease_bundle.sh here and carry .gpu"
  exit 1
fi
[ -f .gpu/COMMIT ] && cat .gpu/COMMIT

# check KEY...: every step of the keys' scripts checked, nothing run on a GPU; prints the
# problems and the worst case (the sum of the limits) per script; exit status 1 on a problem.
check() {
  local report tmp status=0
  report=$(mktemp) tmp=$(mktemp -d)
  (
    export LEASE_DRY_REPORT=$report
    # shellcheck source=tests/cuda/lease_dry_run.sh
    source tests/cuda/lease_dry_run.sh
    for key in "$@"; do
      for entry in $(scripts "$key"); do
        one=${entry%%:*} part=${entry#"$one"}
        echo "script $key $one${part:+ (${part#:})}" >>"$report"
        OUT="$tmp/$key" LEASE_PART=${part#:} "tests/cuda/$one" >/dev/null 2>&1 </dev/null
      done
    done
  )
  awk '
    $1 == "script" { name = $2 " " $3 " " $4; order[++n] = name; next }
    $1 == "ok" { steps[name]++; limit[name] += $4 + 0; total += $4 + 0; next }
    $1 == "error" { errors++; print "  " $0 }
    END {
      for (i = 1; i <= n; i++) printf "  %-50s %3d steps, at most %4d s\n", order[i], steps[order[i]], limit[order[i]]
      printf "  %d problem(s); all limits together %d s\n", errors, total
      exit errors > 0
    }' "$report" || status=1
  [ -n "$dry" ] && sed 's/^/  /' "$report" | grep '^  ok ' | cut -c1-200
  rm -rf "$report" "$tmp"
  return $status
}

if [ -n "$dry" ]; then
  echo "== dry run of $*: each device step checked against .gpu/, nothing run"
  check "$@"
  status=$?
  take_away
  # What a device call carries: .gpu, and the tracked (and untracked, not ignored) files.
  gpu=$(du -sb .gpu | cut -f1)
  tree=$(git ls-files -z --cached --others --exclude-standard 2>/dev/null | xargs -0 stat -c %s 2>/dev/null |
         awk '{ s += $1 } END { print s + 0 }')
  echo "  carried: .gpu $((gpu >> 20)) MiB and the tree $((tree >> 20)) MiB, of the device tool's 64 MiB"
  if [ $((gpu + tree)) -gt $((62 << 20)) ]; then
    echo "  error: over 62 MiB: the device call would be refused (an unpacked bundle left in .gpu?)"
    status=1
  fi
  exit $status
fi

logs=/tmp/weft-gpu
mkdir -p "$logs"
# pack KEY...: the keys' logs into $OUT/logs.tar.gz (written aside, then renamed, so that a
# call cut short leaves the last whole one).
pack() {
  [ -n "${OUT:-}" ] || return 0
  local have=() k
  for k in "$@"; do [ -d "$logs/$k" ] && have+=("$k"); done
  [ ${#have[@]} -gt 0 ] || return 0
  tar -czf "$OUT/.logs.tar.gz" -C "$logs" "${have[@]}" 2>/dev/null && mv -f "$OUT/.logs.tar.gz" "$OUT/logs.tar.gz"
}
# compute-sanitizer and nvidia-smi where CUDA's toolkit keeps them, should PATH lack them.
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
main() {
  echo "== preflight (no device work): the steps of $* against .gpu/"
  check "$@" || echo "== preflight found problems (above): their steps will fail; the others run"
  command -v compute-sanitizer >/dev/null || echo "== warning: no compute-sanitizer on PATH: the memcheck and racecheck steps will fail"
  local packer=""
  if [ -n "${OUT:-}" ]; then
    # Its output away from main's pipe: the `sleep 30` that outlives the kill below held
    # `tee`, and so the whole call, open until it ended (up to 30 s lost per call).
    ( while sleep 30; do pack "$@"; done ) >/dev/null 2>&1 &
    packer=$!
  fi
  for key in "$@"; do
    rm -rf "${logs:?}/$key" && mkdir -p "$logs/$key"
    for entry in $(scripts "$key"); do
      local one=${entry%%:*} part=${entry#*:} start rc
      [ "$part" = "$entry" ] && part=""
      if [ -n "$budget" ] && [ "$SECONDS" -ge "$budget" ]; then
        echo "[$key] == $one${part:+ ($part)} skipped: the budget of $budget s is spent ($SECONDS s)"
        continue
      fi
      start=$(date +%s)
      OUT="$logs/$key" LEASE_PART=$part "tests/cuda/$one" 2>&1 </dev/null | sed -u "s/^/[$key] /"
      rc=${PIPESTATUS[0]}
      echo "[$key] == $one${part:+ ($part)} rc=$rc in $(( $(date +%s) - start )) s"
      pack "$@"
    done
  done
  [ -n "$packer" ] && kill "$packer" 2>/dev/null
  echo
  echo "==== summary"
}
if [ -n "${OUT:-}" ]; then
  main "$@" 2>&1 | tee "$OUT/summary.txt"
  grep -E '^\[[^]]*\] == ' "$OUT/summary.txt" | cut -c1-160
  pack "$@"
else
  main "$@" 2>&1 | tee "$logs/summary.txt"
  grep -E '^\[[^]]*\] == ' "$logs/summary.txt" | cut -c1-160
fi
