#!/usr/bin/env bash
# slurm-local.sh start|stop DIR - a one-node Slurm cluster on 127.0.0.1 for the job tests.
# start: writes DIR/slurm.conf (no munge: auth/none, cred/none; processes tracked by process
# group; this machine's CPUs on one node whose partition oversubscribes 4 tasks per CPU),
# starts slurmctld and slurmd in the foreground mode (-D) in the background with their pids in
# DIR/slurmctld.pid and DIR/slurmd.pid, and waits until sinfo shows the node idle. The ports
# are free ones picked at start. Prints the line `export SLURM_CONF=DIR/slurm.conf` that srun,
# sinfo and scontrol need. stop: kills the two daemons by their pids (never by name).
# Root only (SlurmUser=root). Exit 0 on success, 1 with a reason on stderr otherwise.
set -euo pipefail
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
stop() {
  local f pid
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}
case $cmd in
stop) stop; exit 0 ;;
start) ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
for p in slurmctld slurmd sinfo srun; do
  command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
    { echo "slurm-local: $p not installed (apt-get install slurmctld slurmd slurm-client)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-local: needs root (SlurmUser=root)" >&2; exit 1; }
export PATH=$PATH:/usr/sbin
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
read -r cport dport < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cpus=$(nproc)
node=$(hostname -s)
cat >"$dir/slurm.conf" <<CONF
ClusterName=weftlocal
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.daemonpid
SlurmdPidFile=$dir/slurmd.daemonpid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
InactiveLimit=0
KillWait=5
MinJobAge=10
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$dir/slurm.conf
stop
slurmctld -D -i -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 &
echo $! >"$dir/slurmctld.pid"
slurmd -D -N "$node" -f "$dir/slurm.conf" >"$dir/log/slurmd.out" 2>&1 &
echo $! >"$dir/slurmd.pid"
for _ in $(seq 150); do
  if sinfo -h -N -o %T 2>/dev/null | grep -qx idle; then
    echo "export SLURM_CONF=$dir/slurm.conf"
    exit 0
  fi
  for f in slurmctld slurmd; do
    kill -0 "$(cat "$dir/$f.pid")" 2>/dev/null ||
      { echo "slurm-local: $f exited:" >&2; tail -5 "$dir/log/$f.out" "$dir/log/$f.log" >&2 2>/dev/null; stop; exit 1; }
  done
  sleep 0.2
done
echo "slurm-local: the node did not become idle in 30 s:" >&2
sinfo -N >&2 2>&1 || true
tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 2>/dev/null || true
stop
exit 1
