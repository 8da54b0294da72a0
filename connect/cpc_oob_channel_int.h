/*
 * cpc_oob_channel_int.h - what the side channel's files share: the session
 * table, the listeners and UD ports, the lock and the event ring. Only for
 * cpc_oob_channel.c (sessions, events, keepalives as they arrive),
 * cpc_oob_channel_limits.c (the limits on unverified sessions),
 * cpc_oob_channel_thread.c (the service thread), cpc_oob_channel_tcp.c and
 * cpc_oob_channel_ud.c (the transports).
 *
 * Locking: ch.lock guards what both threads touch (session state, handles,
 * the output queue, the event ring, counters) and is held only to change
 * that state. Every socket call (accept, connect, send, recv) is made by
 * the service thread without it, on fields only that thread uses (fd,
 * input frame, bytes being written, connect progress). Only the service
 * thread closes a socket or frees a slot, so a slot stays valid while it
 * does I/O unlocked; the MPI thread's close just marks the session. UD
 * datagrams are sent and taken by the service thread with the lock held:
 * verbs posts and polls do not block.
 */
#ifndef CPC_OOB_CHANNEL_INT_H
#define CPC_OOB_CHANNEL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/openib_clock.h"
#include "connect/cpc_oob_channel.h"

#define MAX_LISTENERS 16
#define MAX_UDPORTS 16
#define MAX_EVENTS 4096
#define OUTQ 4                    /* messages queued per session */
/* Unverified accepted sessions, all sources together: a flood from many
 * addresses is held to this many, and sessions beyond it stay for our
 * own handshakes and verified peers. */
#define UNTRUSTED_MAX 512
/* Messages an unverified session may have waiting for the CPC: an honest
 * initiator sends one request and waits; more is a flood, and reading it
 * stops until the CPC has looked (so strangers can hold at most
 * UNTRUSTED_MAX * this of the ring). */
#define UNTRUSTED_PENDING_MAX 4

enum sess_state { S_FREE = 0, S_START, S_CONNECTING, S_OPEN };

enum refusal { R_IDLE = 0, R_PER_SOURCE, R_SESSION_CAP, R_COUNT };

/* A session handle is slot | generation << SLOT_BITS: a slot is reused as
 * soon as it is freed, so a handle the caller still holds must not reach
 * the slot's next session (e.g. closing an old session must not close a
 * new connection that took its slot). Slots come in chunks that never
 * move (the thread uses a slot unlocked), allocated as sessions are
 * needed. */
#define SLOT_BITS 16
#define MAX_SLOTS (1 << SLOT_BITS)
#define CHUNK_SLOTS 256
#define MAX_CHUNKS (MAX_SLOTS / CHUNK_SLOTS)
#define HANDLE(slot, gen) ((int) ((unsigned) (gen) << SLOT_BITS | (unsigned) (slot)))
#define SLOT_OF(h) ((int) ((unsigned) (h) & (MAX_SLOTS - 1)))
#define GEN_MASK 0x7fff

struct session {
    /* shared: under ch.lock */
    enum sess_state state;
    unsigned gen;
    bool closing;             /* handle dead (closed or evicted): flush, then free */
    bool accepted;
    bool trusted;             /* oob_chan_trust: a verified job member */
    bool spoke;               /* accepted: delivered a whole CPC message */
    void *owner;
    void *listen_owner;
    uint32_t peer_addr;       /* accepted over TCP: remote IPv4, network order */
    long opened_ms;           /* accepted: when (eviction takes the oldest) */
    long idle_from_ms;        /* accepted, unverified: the idle deadline counts from here */
    long close_by_ms;         /* closing: free even if the flush is not done */
    long heard_ms;            /* last frame from the peer, 0 = none yet */
    long pinged_ms;           /* last PING sent, or when the session opened */
    int pending;              /* its messages not taken by oob_chan_poll yet */
    int peer_pending;         /* the peer's count, from its last PONG */
    uint8_t out[OUTQ * OOB_MSG_SIZE]; /* queued, not handed to the transport yet
                                         (UD: out[0] is the frame in flight) */
    size_t outlen;

    /* UD sessions (ud_port >= 0), under ch.lock */
    int ud_port;              /* index in ch.u, -1: a TCP session */
    struct oob_ud_addr ud;    /* the peer's UD address */
    uint32_t ud_id;           /* our name for it on the wire: its first handle
                                 (a closing session keeps it, its handle dies) */
    uint32_t ud_rsid;         /* the peer's name, OOB_UD_NO_SID until known */
    bool ud_acked_open;       /* opened: the peer's thread acknowledged the OPEN */
    uint32_t ud_tx_seq;       /* number of out[0] */
    uint32_t ud_rx_seq;       /* the number expected next from the peer */
    long ud_sent_ms;          /* out[0] last sent, 0 = not yet */
    long ud_first_ms;         /* out[0] first sent: the give-up clock */
    long ud_rto_ms;           /* wait for an acknowledgement before sending again */
    int ud_tries;             /* times out[0] went out */
    long probe_due_ms;        /* the next TCP probe of a silent peer, 0 = none */
    bool probing;             /* fd is a probe's connect in progress */
    bool probe_answered;      /* a probe connected: the process is there */

    /* the service thread's own: no lock */
    int fd;
    uint32_t addrs[OOB_MAX_ADDRS];
    int naddr, ai;
    int refused;              /* addresses that refused the connection */
    int last_errno;           /* the last connect failure */
    uint16_t port;
    long deadline_ms;         /* connecting: give up on this address */
    uint8_t in[OOB_MSG_SIZE];
    size_t inlen;
    bool held;                /* in[] is a whole message the full ring could not take */
    bool shut;                /* closing: our side is shut down, reading to the end */
    uint8_t wbuf[OUTQ * OOB_MSG_SIZE]; /* being written */
    size_t wlen;
};

struct listener {
    int fd[OOB_MAX_ADDRS];    /* one per selected address, same port */
    int nfd;
    void *owner;
    bool closing;             /* unlistened: the thread closes the sockets */
};

struct udport {
    const struct oob_dgram_ops *ops;
    void *port;
    void *owner;
    bool closing;             /* unlistened: the thread ends its sessions and destroys it */
};

struct oob_chan {
    pthread_mutex_t lock;
    pthread_cond_t gone;           /* a UD port was destroyed */
    int refs;
    int wake_fd;
    struct session *chunk[MAX_CHUNKS];
    int nslots;                    /* slots allocated: nchunks * CHUNK_SLOTS */
    int hint;                      /* where the search for a free slot starts */
    struct listener l[MAX_LISTENERS];
    struct udport u[MAX_UDPORTS];
    struct oob_event *ev;          /* ring */
    int ev_head, ev_tail;
    volatile int ev_count;         /* read without the lock on the fast path */
    int ping_ms;                   /* keepalive interval */
    bool paused;                   /* a session's reading waits for the CPC */
    char log[64][160];             /* refusals, written out by the MPI thread */
    volatile int log_n;
    unsigned long refusals[R_COUNT];
    struct oob_chan_counts counts;
};

extern struct oob_chan oob_ch __attribute__((visibility("hidden")));

#define LOG_Q ((int) (sizeof(oob_ch.log) / sizeof(oob_ch.log[0])))

static inline struct session *sess_at(int slot)
{
    return &oob_ch.chunk[slot / CHUNK_SLOTS][slot % CHUNK_SLOTS];
}

/* cpc_oob_channel.c, with ch.lock held unless said */
void oob_chan_wake(void);
int oob_chan_alloc_session(void);         /* a free slot, or -1 */
void oob_chan_sess_free(int sid);         /* on the service thread (or after it stopped) */
void oob_chan_sess_fail(int sid, enum oob_error error, const char *why);
bool oob_chan_on_frame(int sid);          /* a whole frame in s->in: keepalive or message */
bool oob_chan_may_read(const struct session *s);
void oob_chan_queue_ka(struct session *s, uint8_t type);
/* A session the caller just opened (its fields set): the first message
 * and the peer's addresses (at most OOB_MAX_ADDRS) stored, the thread
 * woken. Returns the session's handle. */
int oob_chan_opened(int sid, const uint32_t *addrs, int naddr, const uint8_t *msg);

/* cpc_oob_channel_limits.c, with ch.lock held */
/* The limits on unverified sessions for a new accepted one from this
 * source (ud NULL: TCP's addr): false = refuse it (logged). */
bool oob_chan_admit(uint32_t addr, const struct oob_ud_addr *ud);
void oob_chan_log_refusal(enum refusal r, uint32_t addr, const struct oob_ud_addr *ud,
                          const char *detail);
/* an accepted session nobody has vouched for yet, open, not closing */
bool oob_chan_unverified(const struct session *s);

/* cpc_oob_channel_thread.c, with ch.lock held */
void oob_chan_min_timeout(int *timeout, long wait);
/* Keepalive, idle limit and held message of an open session: what both
 * transports do before their own I/O. False: the session was freed. */
bool oob_chan_plan_common(int i, long t, int idle_ms, int *timeout);

/* cpc_oob_channel_tcp.c: service thread */
int oob_tcp_plan(int i, long t, int idle_ms, int *timeout); /* poll events, -1: needs a step */
void oob_tcp_step(int sid);
void oob_tcp_serve(int sid, short events, short revents);
void oob_tcp_accept(int lfd, void *owner);
bool oob_tcp_try_next_addr(struct session *s);
void oob_tcp_note_error(struct session *s, int err);
bool oob_tcp_connect_done(const struct session *s);

/* cpc_oob_channel_ud.c: service thread, with ch.lock held */
void oob_ud_drain(int u);                        /* take what arrived on port u */
int oob_ud_plan(int i, long t, int idle_ms, int *timeout); /* as oob_tcp_plan */
void oob_ud_probe_step(int sid);                 /* no lock: start a probe's connect */
void oob_ud_probe_serve(int sid, short revents); /* no lock */
void oob_ud_port_gone(int u);                    /* end its sessions, destroy it */

#endif
