/*
 * btl_openib_diag.h - telling the user why openib cannot run here.
 *
 * Settings outside their range are always reported (the user set them).
 * What depends on the node (no device, a port that is down, the
 * locked-memory limit, the thread level) is reported at verbosity 0 only
 * when the user asked for openib by name in the btl list: otherwise openib
 * steps aside quietly and the other BTLs carry the job, as before.
 */
#ifndef BTL_OPENIB_DIAG_H
#define BTL_OPENIB_DIAG_H

#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>

#include "btl_openib/btl_openib_rq_spec.h"

struct openib_device;

/* The "btl" variable lists openib by name (not as "^openib", not by default). */
bool openib_diag_named(void);

/* Before any device is opened: the fragment lists and shared queues of one
 * port must fit in the node's memory and under RLIMIT_MEMLOCK. */
int openib_diag_check_memory(const struct openib_rq_spec *rq);

/* A port's set-up failed because registration failed (dev->reg_errno). */
void openib_diag_registration_failed(const struct openib_device *dev);

/* Every device and device:port of btl_openib_if_include exists. */
int openib_diag_check_if_include(struct ibv_device **list, int n);

/* No module could be opened; why_none: a line when there is no device. */
void openib_diag_no_usable_port(const char *why_none);

/* Fork support (btl_openib_want_fork_support), before any verbs resource. */
int openib_diag_fork_support(void);

#endif
