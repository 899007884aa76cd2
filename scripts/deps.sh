#!/usr/bin/env bash
# deps.sh [build|test|bench] - makes sure the Debian packages weft needs are installed.
# As root it installs what is missing (apt-get); otherwise it prints the exact command and
# fails. `build` is what compiling needs, `test` adds the independent trace readers and the
# test framework, `bench` adds the peers measured side by side.
set -euo pipefail
what=${1:-build}
pkgs=()
need() { # need PACKAGE CHECK-COMMAND...
  local p=$1; shift
  "$@" >/dev/null 2>&1 || pkgs+=("$p")
}
have_pc() { pkg-config --exists "$1"; }
need build-essential command -v cc
need cmake command -v cmake
need make command -v make
need pkg-config command -v pkg-config
need libzstd-dev have_pc libzstd
need libelf-dev have_pc libelf
need libdeflate-dev have_pc libdeflate
# ISA-L compresses the .pftrace about twice as fast; Debian 12 has it for amd64 and arm64 (a
# build without it compresses with libdeflate)
case $(uname -m) in x86_64|aarch64) need libisal-dev have_pc libisal ;; esac
need libsqlite3-dev have_pc sqlite3
need libcairo2-dev have_pc cairo
# `weft export --otf2` (a build without it says so when asked)
need libotf2-trace-dev have_pc otf2
need g++ command -v g++
# the Python module is built for Debian's interpreter (its headers)
need python3-dev test -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h"
if [ "$what" = test ] || [ "$what" = bench ]; then
  need libcmocka-dev have_pc cmocka
  need protobuf-compiler command -v protoc
  need python3 command -v python3
  need nodejs command -v node
  need npm command -v npm
  need clang command -v clang++
  need python3-pytest /usr/bin/python3 -c 'import pytest'
  # weft top's test reads its screen in a tmux pane (tests/integration/test_top.py)
  need tmux command -v tmux
  # a fork child's system calls, checked (tests/integration/test_forks.py PerfMappings)
  need strace command -v strace
  # the OTF2 archive's independent readers (tests/integration/test_otf2.py)
  need otf2-tools command -v otf2-print
  need python3-otf2 /usr/bin/python3 -c 'import otf2'
  # parallel jobs (tests/integration/test_job.py): both MPIs, Fortran, a local Slurm
  need openmpi-bin command -v mpirun.openmpi
  need libopenmpi-dev command -v mpicc.openmpi
  need mpich command -v mpirun.mpich
  need libmpich-dev command -v mpicc.mpich
  need gfortran command -v gfortran
  need slurmctld test -x /usr/sbin/slurmctld
  need slurmd test -x /usr/sbin/slurmd
  need slurm-client command -v srun
fi
if [ "$what" = bench ]; then
  need uftrace command -v uftrace
  need lttng-tools command -v lttng
  need liblttng-ust-dev have_pc lttng-ust
  need heaptrack command -v heaptrack
  need python3-yappi /usr/bin/python3 -c 'import yappi'
fi
[ ${#pkgs[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps.sh: installing ${pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${pkgs[@]}" >/dev/null
else
  echo "deps.sh: missing packages; run: sudo apt-get install -y ${pkgs[*]}" >&2
  exit 1
fi
