#!/bin/sh
# Install the Debian 12 packages openib-ng needs to build, test and benchmark
# (only those missing). Run as root; used by the README commands and CI.
# openssh-server/-client: the two-node test bed's guests run the host's sshd
# and ssh (with their own configuration; no host sshd is configured).
# gnuplot-nox: the main job's plots (bench/plot.sh).
# devscripts (checkbashisms) and shellcheck: make check lints every script.
# nettle-dev: the HMAC that authenticates connection handshakes.
# python3-mpi4py/python3-numpy: t-openib-mpi4py runs Debian's mpi4py (which
# asks for MPI_THREAD_MULTIPLE by default) over openib with numpy buffers.
# libasan8/libubsan1 (make check's fuzz test of the wire decoders) and libtsan2
# (make check-tsan) come with build-essential: gcc-12 -> libgcc-12-dev
# depends on them. setarch (make check-tsan) is in util-linux.
# The guest's Soft-iWARP module (tests/guest/siw.sh, "# devices: siw" tests)
# is built with gcc-12, make, libc6-dev, binutils (build-essential), xz-utils and
# kmod; its kernel headers and sources are fetched by apt-get download there.
# gdb: a guest test that hangs prints its ranks' backtraces (run_watched in
# tests/integration/lib.sh), so a rare hang in CI says where it waited.
set -e
pkgs="build-essential autoconf automake libtool pkg-config
      openmpi-bin libopenmpi-dev libibverbs-dev librdmacm-dev ibverbs-providers
      ibverbs-utils rdmacm-utils perftest rdma-core libhwloc-dev libpmix-dev
      qemu-system-x86 busybox-static kmod iproute2 cpio gzip xz-utils zstd procps
      util-linux file openssh-server openssh-client gnuplot-nox shellcheck devscripts
      nettle-dev python3-mpi4py python3-numpy gdb"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "install-deps: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
