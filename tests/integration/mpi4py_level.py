"""What the mpi4py test scripts (mpi4py_pingpong.py, mpi4py_alltoall.py)
share: the thread level MPI provided, said once by rank 0 in the line
t-openib-mpi4py.sh checks."""
import mpi4py
from mpi4py import MPI  # initializes MPI with mpi4py.rc's defaults
import numpy as np

LEVELS = {
    MPI.THREAD_SINGLE: "MPI_THREAD_SINGLE",
    MPI.THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
    MPI.THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED",
    MPI.THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE",
}


def announce(prog):
    """Rank 0 prints "PROG: thread level provided LEVEL (versions)";
    returns the level provided."""
    provided = MPI.Query_thread()
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(f"{prog}: thread level provided {LEVELS.get(provided, provided)} "
              f"(mpi4py {mpi4py.__version__}, rc.thread_level {mpi4py.rc.thread_level}, "
              f"numpy {np.__version__})", flush=True)
    return provided
