#!/bin/sh
# Runs launch_smoke as N real processes under a launcher environment:
#   launch_smoke.sh torchrun|mpirun|srun BINARY N
# "torchrun" uses the real torchrun ($TORCHRUN, else the one on PATH);
# "mpirun" and "srun" set the variables those launchers export
# (OMPI_COMM_WORLD_*, SLURM_*) for each process.
set -eu
launcher=$1 bin=$2 n=$3
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SPMD_TIMEOUT_MS=60000
case $launcher in
  torchrun)
    # --redirects/--tee: each rank's output is also kept in torchrun's log dir.
    exec "${TORCHRUN:-torchrun}" --no_python --nproc_per_node "$n" --master_addr 127.0.0.1 \
      --master_port "$port" --redirects 1 --tee 1 "$bin" ;;
  mpirun|srun)
    pids=""
    r=0
    while [ "$r" -lt "$n" ]; do
      if [ "$launcher" = mpirun ]; then
        OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n \
          OMPI_COMM_WORLD_LOCAL_RANK=$r "$bin" &
      else
        SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r "$bin" &
      fi
      pids="$pids $!"
      r=$((r + 1))
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    exit $status ;;
  *) echo "unknown launcher $launcher" >&2; exit 2 ;;
esac
