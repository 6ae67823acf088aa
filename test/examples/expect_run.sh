#!/usr/bin/env bash
# Runs a command, prints its output, and checks its exit status and output.
#
#   expect_run.sh --status N [--match REGEX]... [--no-match REGEX]... -- CMD...
#
# Fails (exit 1) unless CMD exits with N, every --match REGEX (grep -E) occurs
# in its output and no --no-match REGEX does.
set -uo pipefail
status=0
match=()
nomatch=()
while [ $# -gt 0 ]; do
  case "$1" in
    --status) status="$2"; shift 2 ;;
    --match) match+=("$2"); shift 2 ;;
    --no-match) nomatch+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "expect_run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
ok=1
if [ "$rc" != "$status" ]; then
  echo "expect_run.sh: exit status $rc, expected $status" >&2
  ok=0
fi
for m in "${match[@]+"${match[@]}"}"; do
  if ! grep -Eq -- "$m" <<<"$out"; then
    echo "expect_run.sh: no output line matches /$m/" >&2
    ok=0
  fi
done
for m in "${nomatch[@]+"${nomatch[@]}"}"; do
  if grep -Eq -- "$m" <<<"$out"; then
    echo "expect_run.sh: output unexpectedly matches /$m/" >&2
    ok=0
  fi
done
[ "$ok" = 1 ]
