#!/usr/bin/python3
"""mpi4py all-to-all with numpy buffers, every element checked.

mpi4py is imported with its DEFAULT initialization (mpi4py.rc.thread_level
left alone: MPI_Init_thread asks for MPI_THREAD_MULTIPLE). On every rank:

  1. Alltoall of int64 blocks of 1, 1000 and 65536 elements per peer
     (8 B, 8 KB and 512 KiB: eager, and rendezvous over RDMA);
  2. Alltoallv of float64 with a different count for every pair, some 0;
  3. a pickled alltoall (comm.alltoall) of Python objects.

Element [i] of the block rank S sends rank D is derived from S, D, i and the
round, so a block from the wrong rank, place or round is caught.

Output (rank 0): "mpi4py_alltoall: thread level provided MPI_THREAD_..." and
last "mpi4py_alltoall: PASSED ranks=R elements=E" or
"mpi4py_alltoall: FAILED ...". Exit status 0 only when passed with
MPI_THREAD_MULTIPLE.
"""
import sys

from mpi4py import MPI  # initializes MPI with mpi4py.rc's defaults
import numpy as np

from mpi4py_level import announce

BLOCKS = [1, 1000, 65536]

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
nranks = comm.Get_size()
errors = []
elements = 0


def block(src, dst, n, rnd):
    """The int64 block SRC sends DST in round RND."""
    i = np.arange(n, dtype=np.int64)
    return i * 7 + src * 1000003 + dst * 10007 + rnd * 101


def vcount(src, dst):
    """Alltoallv: the elements SRC sends DST (0 for some pairs)."""
    return ((src * 3 + dst * 5) % 7) * 3000


def check(what, got, want):
    global elements
    bad = np.flatnonzero(got != want)
    if bad.size:
        first = int(bad[0])
        errors.append(f"{what}: {bad.size} of {want.size} elements wrong, first at {first} "
                      f"({got[first]}, not {want[first]})")
    else:
        elements += want.size


def main():
    provided = announce("mpi4py_alltoall")

    for rnd, n in enumerate(BLOCKS):
        send = np.concatenate([block(rank, d, n, rnd) for d in range(nranks)])
        recv = np.full(nranks * n, -1, dtype=np.int64)
        comm.Alltoall([send, MPI.INT64_T], [recv, MPI.INT64_T])
        for s in range(nranks):
            check(f"rank {rank}: Alltoall of {n} from rank {s}", recv[s * n:(s + 1) * n],
                  block(s, rank, n, rnd))

    scounts = [vcount(rank, d) for d in range(nranks)]
    rcounts = [vcount(s, rank) for s in range(nranks)]
    send = np.concatenate([block(rank, d, scounts[d], 7).astype(np.float64) / 4
                           for d in range(nranks)])
    recv = np.full(sum(rcounts), np.nan)
    comm.Alltoallv([send, scounts, MPI.DOUBLE], [recv, rcounts, MPI.DOUBLE])
    off = 0
    for s in range(nranks):
        check(f"rank {rank}: Alltoallv of {rcounts[s]} from rank {s}",
              recv[off:off + rcounts[s]], block(s, rank, rcounts[s], 7).astype(np.float64) / 4)
        off += rcounts[s]

    got = comm.alltoall([(rank, d, block(rank, d, 100, 9)) for d in range(nranks)])
    for s, (src, dst, arr) in enumerate(got):
        if (src, dst) != (s, rank):
            errors.append(f"rank {rank}: pickled alltoall: slot {s} holds ({src}, {dst})")
        else:
            check(f"rank {rank}: pickled alltoall from rank {s}", arr, block(s, rank, 100, 9))

    for e in errors[:10]:
        print(f"mpi4py_alltoall: {e}", file=sys.stderr, flush=True)
    nerr = comm.allreduce(len(errors), op=MPI.SUM)
    total = comm.reduce(elements, op=MPI.SUM, root=0)
    ok = nerr == 0 and provided == MPI.THREAD_MULTIPLE
    if rank == 0:
        want = (sum(BLOCKS) * nranks * nranks + 100 * nranks * nranks +
                sum(vcount(s, d) for s in range(nranks) for d in range(nranks)))
        ok = ok and total == want
        verdict = "PASSED" if ok else "FAILED"
        print(f"mpi4py_alltoall: {verdict} ranks={nranks} elements={total} (of {want}) "
              f"errors={nerr}", flush=True)
    return 0 if comm.allreduce(ok, op=MPI.LAND) else 1


if __name__ == "__main__":
    sys.exit(main())
