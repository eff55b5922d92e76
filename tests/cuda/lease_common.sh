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
out=${OUT:-/tmp/weft-gpu}
mkdir -p "$out"
part() { [ -z "${LEASE_PART:-}" ] || [ "$LEASE_PART" = "$1" ]; }
line() { grep -E "$1" "$2" 2>/dev/null | tr '\n' ' ' | cut -c1-400; echo; }
whole() { [ -z "${LEASE_PART:-}" ]; }
