# Sourced by the device check scripts that open_issues_check.sh runs (tests/cuda/*_check.sh),
# from the repository root:
#   out          the logs' folder: $OUT (open_issues_check.sh gives each issue its own), else
#                /tmp/weft-gpu; made here. Logs are written there as they are made, so that a
#                call cut short by the device tool's limit still has them.
#   part NAME    whether this run includes the script's part NAME: `default` (the correctness
#                checks of the default paths: a lease's first call, open_issues_check.sh
#                first) or `rest` (opt-in paths, timings and A/Bs: later calls); both where
#                LEASE_PART is unset (a script's own key, e.g. open_issues_check.sh 30).
#   whole        whether LEASE_PART is unset (steps that a lease's `first` has run in
#                another script: a script's own key reruns them).
#   line RE FILE the lines of FILE that match RE, on one line (a step's summary).
#   timeout N COMMAND...  every device step's limit (coreutils' timeout, with two changes):
#                - a step still running 10 s after its SIGTERM is killed: the training
#                  binaries take a first SIGTERM as "stop after this step"
#                  (training/driver/stop_signals.h), which a step hung on the GPU never
#                  reaches, so a plain `timeout` would leave it running and eat the call;
#                - where LEASE_DEADLINE is set (open_issues_check.sh --budget: seconds since
#                  the epoch), N is cut to what is left before it, and a step that would start
#                  after it does not (exit status 124, as if timed out, and a line in its
#                  log), so that the call ends with its summary and logs before the device
#                  tool's own limit cuts it.
#                --dry-run's own `timeout` (lease_dry_run.sh, exported) is kept where defined.
#   nvidia-smi   the machine's, under `timeout` (20 s): every script starts with it, and it
#                hangs on a GPU that an earlier step left wedged.
out=${OUT:-/tmp/weft-gpu}
mkdir -p "$out"
part() { [ -z "${LEASE_PART:-}" ] || [ "$LEASE_PART" = "$1" ]; }
line() { grep -E "$1" "$2" 2>/dev/null | tr '\n' ' ' | cut -c1-400; echo; }
whole() { [ -z "${LEASE_PART:-}" ]; }
lease_kill_after=10
declare -F timeout >/dev/null || timeout() {
  local options=() limit left
  while [[ "$1" == -* ]]; do options+=("$1"); shift; done
  case "$1" in
    *m) limit=$(( ${1%m} * 60 )) ;;
    *) limit=${1%s} ;;
  esac
  shift
  if [ -n "${LEASE_DEADLINE:-}" ]; then
    left=$(( LEASE_DEADLINE - $(date +%s) ))
    if [ "$left" -le 0 ]; then
      echo "== not run: the call's deadline (open_issues_check.sh --budget) has passed: $*"
      return 124
    fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  command timeout --kill-after="$lease_kill_after" ${options[@]+"${options[@]}"} "$limit" "$@"
}
lease_smi_limit=20
declare -F nvidia-smi >/dev/null || nvidia-smi() { timeout "$lease_smi_limit" nvidia-smi "$@"; }
