#!/usr/bin/python3
"""mpi4py ping-pong with numpy buffers, every element checked.

mpi4py is imported with its DEFAULT initialization: mpi4py.rc.thread_level is
left alone, so MPI_Init_thread asks for MPI_THREAD_MULTIPLE (Debian's mpi4py
default). Ranks 0 and 1 (other ranks only join the final reduction):

  1. ping-pong of uint8 numpy arrays, 0 B to 4 MiB (powers of two and the
     sizes around openib's eager limit 32 KiB - 8 and largest send
     64 KiB - 8), ITERS times each, rank 0 first, each message's content
     derived from its sender, size and iteration;
  2. a pickled message (comm.send / comm.recv) holding a float64 array;
  3. THREADS Python threads at once, each ping-ponging on its own duplicate
     of COMM_WORLD (MPI_THREAD_MULTIPLE in use: mpi4py releases the GIL
     in blocking MPI calls).

Output (rank 0): "mpi4py_pingpong: thread level provided MPI_THREAD_..." and
last "mpi4py_pingpong: PASSED sizes=N msgs=M elements=E" or
"mpi4py_pingpong: FAILED ...". Exit status 0 only when passed with
MPI_THREAD_MULTIPLE.
"""
import sys
import threading

from mpi4py import MPI  # initializes MPI with mpi4py.rc's defaults
import numpy as np

from mpi4py_level import announce

ITERS = 3
THREADS = 2
EAGER = 32768 - 8
MAX_SEND = 65536 - 8
SIZES = sorted({0} | {1 << k for k in range(23)} |
               {EAGER - 1, EAGER, EAGER + 1, MAX_SEND, MAX_SEND + 1})
THREAD_SIZES = [0, 8, 4096, EAGER + 1, 100000, 1 << 20]

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
nranks = comm.Get_size()
errors = []
counts = {"msgs": 0, "elements": 0}
lock = threading.Lock()


def pattern(src, size, it, salt):
    """The uint8 content SRC sends: SIZE elements, iteration IT."""
    i = np.arange(size, dtype=np.uint64)
    return ((i * 7 + (i >> 8) + src * 131 + it * 29 + salt * 17) & 0xFF).astype(np.uint8)


def check(what, buf, want):
    """Count BUF against WANT; note a mismatch."""
    bad = np.flatnonzero(buf != want)
    with lock:
        if bad.size:
            first = int(bad[0])
            errors.append(f"{what}: {bad.size} of {want.size} elements wrong, first at "
                          f"{first} ({int(buf[first])}, not {int(want[first])})")
        else:
            counts["msgs"] += 1
            counts["elements"] += want.size


def pingpong(c, tag, sizes, salt):
    """Ranks 0 and 1 of C: rank 0 sends, rank 1 answers, both check."""
    me = c.Get_rank()
    peer = 1 - me
    for size in sizes:
        for it in range(ITERS):
            recv = np.full(size, 0xA5, dtype=np.uint8)
            if me == 0:
                c.Send([pattern(0, size, it, salt), MPI.BYTE], dest=peer, tag=tag)
                c.Recv([recv, MPI.BYTE], source=peer, tag=tag)
            else:
                c.Recv([recv, MPI.BYTE], source=peer, tag=tag)
                c.Send([pattern(1, size, it, salt), MPI.BYTE], dest=peer, tag=tag)
            check(f"rank {me} tag {tag}: {size} B, iteration {it}", recv,
                  pattern(peer, size, it, salt))


def main():
    provided = announce("mpi4py_pingpong")
    if nranks < 2:
        print("mpi4py_pingpong: needs 2 ranks", file=sys.stderr)
        return 2

    if rank < 2:
        pingpong(comm, 1, SIZES, 0)

        # a pickled object: the lowercase API
        obj = {"from": rank, "data": np.arange(50000, dtype=np.float64) * (rank + 1)}
        if rank == 0:
            comm.send(obj, dest=1, tag=2)
            got = comm.recv(source=1, tag=2)
        else:
            got = comm.recv(source=0, tag=2)
            comm.send(obj, dest=0, tag=2)
        peer = 1 - rank
        if got.get("from") != peer:
            errors.append(f"rank {rank}: pickled message says it is from {got.get('from')}")
        check(f"rank {rank}: pickled float64 array", got["data"],
              np.arange(50000, dtype=np.float64) * (peer + 1))

    # threads at once, each on its own communicator (made by every rank)
    comms = [comm.Dup() for _ in range(THREADS)]
    if rank < 2 and provided == MPI.THREAD_MULTIPLE:
        threads = [threading.Thread(target=pingpong, args=(comms[t], 10 + t, THREAD_SIZES, 100 + t))
                   for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for c in comms:
        c.Free()

    for e in errors[:10]:
        print(f"mpi4py_pingpong: {e}", file=sys.stderr, flush=True)
    nerr = comm.allreduce(len(errors), op=MPI.SUM)
    msgs = comm.reduce(counts["msgs"], op=MPI.SUM, root=0)
    elements = comm.reduce(counts["elements"], op=MPI.SUM, root=0)
    want = 2 * ITERS * (len(SIZES) + THREADS * len(THREAD_SIZES)) + 2
    ok = nerr == 0 and provided == MPI.THREAD_MULTIPLE
    if rank == 0:
        ok = ok and msgs == want
        verdict = "PASSED" if ok else "FAILED"
        print(f"mpi4py_pingpong: {verdict} sizes={len(SIZES)} msgs={msgs} (of {want}) "
              f"elements={elements} errors={nerr}", flush=True)
    return 0 if comm.allreduce(ok, op=MPI.LAND) else 1


if __name__ == "__main__":
    sys.exit(main())
