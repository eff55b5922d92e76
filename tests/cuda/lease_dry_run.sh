# Sourced by `open_issues_check.sh --dry-run` (and its preflight): replaces `timeout`,
# `nvidia-smi` and `compute-sanitizer` with functions, exported to the check scripts it
# runs, that run nothing on a GPU. Every device step of the scripts runs under `timeout`
# (lease_scripts_test checks that), so each one's command line comes here instead, and is
# checked against the unpacked bundle in .gpu/:
#   - the program is in .gpu/ and executable, and `ldd` finds each of its libraries with
#     .gpu/lib (and a --library-path given to the dynamic loader) in front: a library the
#     GPU machine lacks shows as "not found" there;
#   - each --gtest_filter matches at least one test (--gtest_list_tests, no GPU needed);
#   - each --case=/--check= names a case of that step_bench binary (--program, no GPU);
#   - each other --flag is one the program knows (its --help, else the literal in it);
#   - each .gpu/ path it reads exists, and each WEFT_* variable the script sets for it is
#     read by it (grep of the program: the name is a literal in it);
#   - under compute-sanitizer: the tool is named; python3: the script exists.
# One line per step goes to $LEASE_DRY_REPORT: "ok SCRIPT:LINE limit Ns: COMMAND" or
# "error SCRIPT:LINE: WHAT", and the step's worst case (its limit) is summed per script.
# Needs no GPU: the functions return 0 as if each step had passed.

# The step being checked: SCRIPT:LINE of its `timeout`.
lease_line=""

# lease_dry_check LIMIT COMMAND...: the checks above for one step's command.
lease_dry_check() {
  local limit=$1; shift
  local libpath=.gpu/lib problems=() sanitizer="" a name n
  while [ $# -gt 0 ]; do
    case "$1" in
      compute-sanitizer)
        shift
        while [[ "${1:-}" == --* ]]; do
          case "$1" in
            --tool) sanitizer=$2; shift 2 ;;
            --error-exitcode) shift 2 ;;
            *) shift ;;
          esac
        done
        [ -n "$sanitizer" ] || problems+=("compute-sanitizer without --tool") ;;
      mpirun)
        shift
        while [[ "${1:-}" == -* ]]; do
          case "$1" in -np|-n|-x) shift 2 ;; *) shift ;; esac
        done ;;
      /lib64/ld-linux-x86-64.so.2)
        shift
        while [[ "${1:-}" == --* ]]; do
          case "$1" in --library-path) libpath="$2:$libpath"; shift 2 ;; *) shift ;; esac
        done ;;
      python3)
        [ -f "${2:-}" ] || problems+=("python3 script '${2:-}' missing")
        lease_dry_report "$limit" "$*" "${problems[@]}"
        return 0 ;;
      *) break ;;
    esac
  done
  local bin=$1; shift
  if [ ! -x "$bin" ]; then
    problems+=("$bin: not in the bundle (tests/cuda/lease_bundle.sh packs it?)")
    lease_dry_report "$limit" "$bin $*" "${problems[@]}"
    return 0
  fi
  local missing
  missing=$(LD_LIBRARY_PATH="$libpath:${LD_LIBRARY_PATH:-}" ldd "$bin" 2>&1 | awk '/not found/ {print $1}' | tr '\n' ' ')
  [ -z "$missing" ] || problems+=("$bin: libraries not found: $missing")
  for a in "$@"; do
    case "$a" in
      --gtest_filter=*)
        n=$("$bin" --gtest_list_tests "$a" 2>/dev/null | grep -c '^  ')
        [ "$n" -gt 0 ] || problems+=("$bin $a: matches no test") ;;
      --gtest_*) ;;
      --case=*|--check=*)
        # grep -c reads to the end: grep -q's early exit would fail the pipe (pipefail).
        n=$("$bin" "--case=${a#*=}" --program 2>/dev/null | grep -c '^program @')
        [ "$n" -gt 0 ] || problems+=("$bin $a: no such case") ;;
      --*)
        # The literal in the program first: running --help could start a program that
        # ignores flags it does not know (nccl_bandwidth).
        name=${a%%=*}
        grep -qaE -- "$name([^a-z0-9_-]|\$)" "$bin" || grep -qE -- "$name([^a-z0-9_-]|\$)" <<<"$(command timeout 10 "$bin" --help 2>&1 </dev/null | head -200)" ||
          problems+=("$bin: no flag $name") ;;
    esac
    case "${a#*=}" in
      .gpu/*) [ -e "${a#*=}" ] || problems+=("${a#*=}: missing") ;;
    esac
  done
  for name in $(compgen -e | grep '^WEFT_'); do
    [[ " $LEASE_DRY_INHERITED " == *" $name "* ]] && continue
    grep -qaF "$name" "$bin" || problems+=("$bin does not read $name")
  done
  lease_dry_report "$limit" "${sanitizer:+compute-sanitizer $sanitizer: }$bin $*" "${problems[@]}"
}

# lease_dry_report LIMIT COMMAND [PROBLEM...]
lease_dry_report() {
  local limit=$1 command=$2; shift 2
  if [ $# -eq 0 ]; then
    echo "ok $lease_line limit ${limit%s}s: ${command:0:160}" >>"$LEASE_DRY_REPORT"
  fi
  local p
  for p in "$@"; do echo "error $lease_line: $p" >>"$LEASE_DRY_REPORT"; done
}

timeout() {
  lease_line="${0##*/}:${BASH_LINENO[0]}"
  while [[ "$1" == -* ]]; do shift; done
  lease_dry_check "$@"
  return 0
}
nvidia-smi() { return 0; }
compute-sanitizer() {
  echo "error ${0##*/}:${BASH_LINENO[0]}: compute-sanitizer run without timeout" >>"$LEASE_DRY_REPORT"
}
# The WEFT_* variables set before the dry run (the caller's): only those a script sets for
# a step are checked against its program.
LEASE_DRY_INHERITED=$(compgen -e | grep '^WEFT_' | tr '\n' ' ')
export LEASE_DRY_INHERITED
export -f lease_dry_check lease_dry_report timeout nvidia-smi compute-sanitizer
