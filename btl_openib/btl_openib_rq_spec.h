/*
 * btl_openib_rq_spec.h - parsing btl_openib_receive_queues.
 *
 * Syntax: specs separated by ':', each one of
 *   P,<size>,<count>[,<low>[,<window>[,<reserve>]]]   per-peer receive queue
 *   S,<size>,<count>[,<low>[,<max_pending>]]          shared receive queue
 *   X,<size>,<count>[,<low>[,<max_pending>]]          XRC shared receive queue
 * Sizes must strictly increase; X cannot be mixed with P or S. The old openib
 * field layout is accepted so existing site settings keep working.
 * Device-free so it is unit-tested without hardware.
 */
#ifndef BTL_OPENIB_RQ_SPEC_H
#define BTL_OPENIB_RQ_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPENIB_MAX_QUEUES 8

/* Credit mailbox entries: one per receive queue, then the eager ring's,
 * then one per QP that a closing peer sets over that QP
 * (btl_openib_teardown.c); an endpoint has the mailbox and as many words
 * it writes from. */
#define OPENIB_MAILBOX_EAGER OPENIB_MAX_QUEUES
#define OPENIB_MAILBOX_CLOSED(q) (OPENIB_MAX_QUEUES + 1 + (q))
#define OPENIB_MAILBOX_ENTRIES (2 * OPENIB_MAX_QUEUES + 1)
#define OPENIB_MAILBOX_BYTES (2 * OPENIB_MAILBOX_ENTRIES * sizeof(uint32_t))

/* Send buffer sizes below the smallest receive queue's, for small
 * messages to it (btl_openib_frag.c). */
#define OPENIB_SEND_SMALL_CLASSES 2
#define OPENIB_SEND_SMALL_SIZES { 256u, 4096u }

/* Buffer sizes: room for our header plus ob1's match header, up to 1 GiB. */
#define OPENIB_RQ_MIN_SIZE 64u
#define OPENIB_RQ_MAX_SIZE (1u << 30)
#define OPENIB_RQ_MAX_SIZE_TEXT "1073741824"
/* P queues: credits travel as 16-bit serial numbers (btl_openib_credits.c),
 * which tell new from stale only within half their range. */
#define OPENIB_RQ_MAX_PP_COUNT 32767u
/* S/X queues: far above any device's max_srq_wr (checked per port). */
#define OPENIB_RQ_MAX_SRQ_COUNT (1u << 24)

enum openib_rq_type { OPENIB_RQ_PP = 'P', OPENIB_RQ_SRQ = 'S', OPENIB_RQ_XRC = 'X' };

struct openib_rq {
    enum openib_rq_type type;
    uint32_t size;        /* receive buffer bytes, wire header included */
    uint32_t count;       /* buffers posted (per peer for P, per queue for S/X) */
    uint32_t low;         /* S/X: SRQ limit that arms the low-watermark event */
    uint32_t window;      /* P: consumed buffers before credits go back explicitly */
    uint32_t reserve;     /* P: extra buffers kept for credit messages */
};

/* Fields of the old openib that are parsed (and checked) but have no use
 * here; the component says so when a user gives them. */
#define OPENIB_RQ_IGNORED_P_LOW       1u  /* P <low>: buffers are reposted at once */
#define OPENIB_RQ_IGNORED_P_RESERVE   2u  /* P <reserve>: credits are RDMA writes */
#define OPENIB_RQ_IGNORED_MAX_PENDING 4u  /* S/X <max_pending>: sends are not capped per queue */

struct openib_rq_spec {
    int num;
    struct openib_rq q[OPENIB_MAX_QUEUES];
    uint32_t ignored;     /* OPENIB_RQ_IGNORED_*: given, not used */
};

/* Parse; on error returns OPAL_ERR_BAD_PARAM and writes the offending token
 * and the reason into bad/why (both NUL-terminated, truncated to fit). */
int openib_rq_spec_parse(const char *text, struct openib_rq_spec *out,
                         char *bad, size_t bad_len, char *why, size_t why_len);

/* Whether any queue is shared (S or X: needs the device's SRQs). */
bool openib_rq_spec_has_shared(const struct openib_rq_spec *rq);

/* Index of the smallest queue whose buffers hold `bytes`, or -1. */
int openib_rq_spec_pick(const struct openib_rq_spec *s, size_t bytes);

/* A stable hash of the layout: both ends of a connection must agree. */
uint32_t openib_rq_spec_hash(const struct openib_rq_spec *s);

#endif
