#!/usr/bin/env bash
# Runs one program as N ranks on this machine, rendezvous on loopback.
#
#   run_ranks.sh [--launcher torchrun|direct] [--nproc N] [--timeout SEC] \
#                -- PROGRAM [ARGS...]
#
# torchrun (default): the launcher PyTorch users know, exactly as a multi-node
#   job starts (docs/launching.md): $SPMD_TORCHRUN, else the project's
#   environment's ($SPMD_VENV or <repo>/.venv, scripts/install-deps.sh), else
#   the one on PATH. `--redirects 1 --tee 1` keep each rank's output; the
#   "[defaultN]:" prefixes that tee adds are removed here.
# direct: starts the N processes itself with RANK, WORLD_SIZE, LOCAL_RANK,
#   MASTER_ADDR and MASTER_PORT set (what torchrun sets, minus its agent);
#   prints rank 0's output, and another rank's only when its exit status
#   differs from rank 0's.
# A free port is picked for each run. Exit status: rank 0's (or the launcher's
# when it fails); 124 when the time limit (default 120 s) is hit.
set -euo pipefail

launcher=torchrun
nproc=4
limit=120
while [ $# -gt 0 ]; do
  case "$1" in
    --launcher) launcher="$2"; shift 2 ;;
    --nproc) nproc="$2"; shift 2 ;;
    --timeout) limit="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "run_ranks.sh: unknown option '$1' (expected --launcher, --nproc, --timeout, --)" >&2; exit 2 ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "run_ranks.sh: no program given; usage: run_ranks.sh [options] -- PROGRAM [ARGS...]" >&2
  exit 2
fi

PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export SPMD_TIMEOUT_MS="${SPMD_TIMEOUT_MS:-60000}"

case "$launcher" in
  torchrun)
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    torchrun=${SPMD_TORCHRUN:-${SPMD_VENV:-$root/.venv}/bin/torchrun}
    [ -x "$torchrun" ] || torchrun=$(command -v torchrun || true)
    if [ -z "$torchrun" ]; then
      echo "run_ranks.sh: torchrun not found; run scripts/install-deps.sh (it installs torch in .venv) or use --launcher direct" >&2
      exit 2
    fi
    logs=$(mktemp -d)
    trap 'rm -rf "$logs"' EXIT
    set +e
    timeout --kill-after=10 "$limit" "$torchrun" --no_python --nproc_per_node "$nproc" \
      --master_addr 127.0.0.1 --master_port "$port" \
      --redirects 1 --tee 1 --log_dir "$logs" "$@" \
      2> >(grep -v -e '^WARNING:torch.distributed.run:$' -e '^\*\*\*\*\*\*' \
                   -e 'Setting OMP_NUM_THREADS' >&2) \
      | sed -u 's/^\[default[0-9]*\]://'
    rc=${PIPESTATUS[0]}
    set -e
    exit "$rc"
    ;;
  direct)
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    pids=()
    for ((r = 0; r < nproc; r++)); do
      RANK=$r WORLD_SIZE=$nproc LOCAL_RANK=$r LOCAL_WORLD_SIZE=$nproc \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        timeout --kill-after=10 "$limit" "$@" >"$dir/$r.log" 2>&1 &
      pids+=($!)
    done
    codes=()
    for ((r = 0; r < nproc; r++)); do
      set +e; wait "${pids[$r]}"; codes+=($?); set -e
    done
    cat "$dir/0.log"
    for ((r = 1; r < nproc; r++)); do
      if [ "${codes[$r]}" != "${codes[0]}" ]; then
        echo "--- rank $r exited with ${codes[$r]} (rank 0: ${codes[0]}):"
        sed "s/^/[rank $r] /" "$dir/$r.log"
      fi
    done
    rc=${codes[0]}
    for c in "${codes[@]}"; do
      if [ "$c" = 124 ] || [ "$c" = 137 ]; then rc=124; fi
    done
    exit "$rc"
    ;;
  *)
    echo "run_ranks.sh: unknown launcher '$launcher' (expected torchrun or direct)" >&2
    exit 2
    ;;
esac
