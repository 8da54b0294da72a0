#!/bin/bash
# t-siw-ports.sh with 8 more jobs in the same narrowed, one-third-taken
# port range, each started while the earlier jobs' connections still sit
# in TIME_WAIT there (60 s): the range gets crowded, and every connection
# must still find a free port. CI once failed t-siw-ports.sh with a QP
# connection that met a taken port 8 times in a row (then the limit).
# devices: rxe,siw
# stress: yes
# timeout: 1800
ports_extra_jobs=8
. "$OPENIB_SRCDIR/tests/integration/t-siw-ports.sh"
