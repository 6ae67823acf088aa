#!/usr/bin/env bash
# stress-suite.sh - run the test suite N times at `ctest -j2` under an added
# CPU load (busy loops in the background) and report every test that failed.
#
# usage: scripts/stress-suite.sh [-n RUNS] [-l LOAD] [-b BUILD_DIR] [-R REGEX]
#                                [-j JOBS] [-- extra ctest arguments]
#   -n RUNS    how many times to run the suite (default 5)
#   -l LOAD    busy loops started in the background (default 4)
#   -b DIR     the build directory (default build)
#   -R REGEX   only the tests matching REGEX (default: the whole suite)
#   -j JOBS    ctest's parallelism (default 2)
# Exit status: 0 when every run passed, 1 when a test failed, 2 on bad usage.
# Each run's ctest output is kept in $STRESS_LOG_DIR (default a temporary
# directory, printed at the end).
set -u

runs=5 load=4 build=build regex="" jobs=2
while getopts "n:l:b:R:j:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    l) load=$OPTARG ;;
    b) build=$OPTARG ;;
    R) regex=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift

if [ ! -f "$build/CTestTestfile.cmake" ]; then
  echo "stress-suite: '$build' is not a configured build directory (no CTestTestfile.cmake); build first, or pass -b DIR" >&2
  exit 2
fi

logs=${STRESS_LOG_DIR:-$(mktemp -d /tmp/stress-suite.XXXXXX)}
mkdir -p "$logs"

pids=()
stop_load() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT TERM
for ((i = 0; i < load; i++)); do
  (while :; do :; done) &
  pids+=($!)
done

ctest_args=(--test-dir "$build" -j "$jobs" --output-on-failure)
[ -n "$regex" ] && ctest_args+=(-R "$regex")

declare -A failed_count=()
failed_runs=0
for ((run = 1; run <= runs; run++)); do
  log="$logs/run-$run.log"
  start=$(date +%s)
  ctest "${ctest_args[@]}" "$@" >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
  echo "run $run/$runs: ctest exit $rc in ${secs}s, load average $(cut -d' ' -f1 /proc/loadavg): ${summary:-no summary (see $log)}"
  if [ $rc -ne 0 ]; then
    failed_runs=$((failed_runs + 1))
    # ctest lists failures as "  <n> - <name> (Failed|Timeout|...)".
    while read -r name; do
      [ -n "$name" ] || continue
      failed_count[$name]=$((${failed_count[$name]:-0} + 1))
      echo "  failed: $name"
    done < <(sed -n '/The following tests FAILED:/,$p' "$log" |
      sed -n 's/^[[:space:]]*[0-9]\{1,\} - \(.*\) (.*)$/\1/p')
  fi
done

stop_load
echo
if [ $failed_runs -eq 0 ]; then
  echo "stress-suite: $runs of $runs runs passed under $load busy loops (logs: $logs)"
  exit 0
fi
echo "stress-suite: $failed_runs of $runs runs failed under $load busy loops (logs: $logs); failures per test:"
for name in "${!failed_count[@]}"; do
  echo "  ${failed_count[$name]}x $name"
done | sort -rn
exit 1
