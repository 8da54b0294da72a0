/*
 * btl_openib_xrc_file.h - the file that names a node's XRC domain.
 *
 * ibv_open_xrcd keys a domain by the inode of an open file: every local
 * process of a job that opens the same file shares the domain (and the
 * target QPs in it). Whoever can create or swap that file can join the
 * domain, so it lives only in the job's private session directory, and
 * both the directory and the file are checked before use. Device-free, so
 * the checks are unit-tested.
 *
 * The job's identity: Open MPI's job session directory is per user, node,
 * launcher (mpirun's pid) and job, and the name adds the job id and the
 * device, so two jobs never open the same file, even when their 32-bit job
 * ids collide (different mpiruns have different directories).
 */
#ifndef BTL_OPENIB_XRC_FILE_H
#define BTL_OPENIB_XRC_FILE_H

#include <stddef.h>
#include <stdint.h>

/* The file's name (no directory) for job `jobid` and device `dev_name`.
 * OPAL_ERR_BAD_PARAM when dev_name is empty or holds a '/'. */
int openib_xrc_file_name(char *buf, size_t len, uint32_t jobid, const char *dev_name);

/* Open the domain file `name` in `dir`, creating it if absent. `dir` must
 * be a directory (not a symbolic link) owned by this user with no group or
 * other permission bits; the file is created O_EXCL|O_NOFOLLOW mode 0600 or
 * opened O_NOFOLLOW, and must then be a regular file owned by this user
 * with no group or other permission bits. Returns the descriptor
 * (O_CLOEXEC), or -1 with `why` saying what was refused (a NULL or empty
 * dir: the process has no session directory). */
int openib_xrc_file_open(const char *dir, const char *name, char *why, size_t why_len);

#endif
