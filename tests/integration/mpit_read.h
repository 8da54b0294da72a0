/*
 * mpit_read.h - looking up and reading btl_openib_* performance variables
 * through MPI_T, for the test programs (header-only: each program is one
 * file built by build_mpi_program).
 *
 * A counter's handle counts from when it was allocated (MPI_T), so a
 * program allocates all of them before any traffic and reads totals.
 */
#ifndef OPENIB_TEST_MPIT_READ_H
#define OPENIB_TEST_MPIT_READ_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Allocate a handle for btl_openib_<names[k]> into handles[k]
 * (MPI_T_PVAR_HANDLE_NULL when there is no such variable, said on stderr);
 * returns how many were missing. */
static int mpit_open_handles(MPI_T_pvar_session session, const char *const *names, int n,
                             MPI_T_pvar_handle *handles, int rank)
{
    char vname[128], desc[512], full[128];
    int nvars, i, k, missing = 0;

    MPI_T_pvar_get_num(&nvars);
    for (k = 0; k < n; ++k) {
        handles[k] = MPI_T_PVAR_HANDLE_NULL;
        snprintf(full, sizeof(full), "btl_openib_%s", names[k]);
        for (i = 0; i < nvars; ++i) {
            int nlen = sizeof(vname), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic, count;
            MPI_Datatype dt;
            MPI_T_enum en;

            if (MPI_SUCCESS == MPI_T_pvar_get_info(i, vname, &nlen, &verb, &cls, &dt, &en, desc,
                                                   &dlen, &bind, &ro, &cont, &atomic) &&
                0 == strcmp(vname, full)) {
                MPI_T_pvar_handle_alloc(session, i, NULL, &handles[k], &count);
                break;
            }
        }
        if (MPI_T_PVAR_HANDLE_NULL == handles[k]) {
            fprintf(stderr, "rank %d: no performance variable %s\n", rank, full);
            missing++;
        }
    }
    return missing;
}

/* Read btl_openib_<name> (0 when it has no handle). */
static unsigned long long mpit_read(MPI_T_pvar_session session, const char *const *names, int n,
                                    const MPI_T_pvar_handle *handles, const char *name)
{
    unsigned long long v = 0;
    int k;

    for (k = 0; k < n; ++k) {
        if (0 == strcmp(names[k], name) && MPI_T_PVAR_HANDLE_NULL != handles[k]) {
            MPI_T_pvar_read(session, handles[k], &v);
            break;
        }
    }
    return v;
}

#endif
