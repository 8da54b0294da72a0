/*
 * wire_refusal.h - why a connection-setup message was refused: one
 * vocabulary for every CPC's checks (oob and xoob on the side channel,
 * rdma_cm in the CM's private data), so the verbose log names a refusal the
 * same way whichever carried it. Each name is the token the log and the
 * integration tests read.
 */
#ifndef WIRE_REFUSAL_H
#define WIRE_REFUSAL_H

enum openib_refusal {
    REFUSAL_OK = 0,
    REFUSAL_MALFORMED,       /* lengths, magic, version, type; not ours, truncated,
                                impossible chunking */
    REFUSAL_WRONG_DST,       /* meant for another process (a duplicate or loopback
                                address), or an answer naming another receiver */
    REFUSAL_NOT_MEMBER,      /* the claimed sender is not a process of this job */
    REFUSAL_BAD_MAC,         /* not keyed with our token: a stranger, or a forgery */
    REFUSAL_REPLAY,          /* a nonce seen before, or an answer to another handshake */
    REFUSAL_BAD_SOURCE_ADDR, /* sent from an address the claimed sender did not publish */
    REFUSAL_WRONG_SRC,       /* an answer from another process than the one asked */
    REFUSAL_CAP,             /* a limit on what one sender may make (xoob target QPs) */
    REFUSAL_COUNT
};

static inline const char *openib_refusal_name(enum openib_refusal r)
{
    static const char *const names[REFUSAL_COUNT] = {
        [REFUSAL_OK] = "ok",
        [REFUSAL_MALFORMED] = "malformed",
        [REFUSAL_WRONG_DST] = "wrong-dst",
        [REFUSAL_NOT_MEMBER] = "not-member",
        [REFUSAL_BAD_MAC] = "bad-mac",
        [REFUSAL_REPLAY] = "replay",
        [REFUSAL_BAD_SOURCE_ADDR] = "bad-source-addr",
        [REFUSAL_WRONG_SRC] = "wrong-src",
        [REFUSAL_CAP] = "cap",
    };

    return (unsigned) r < REFUSAL_COUNT ? names[r] : "unknown";
}

#endif
