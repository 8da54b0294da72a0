/*
 * cpc_oob_channel.h - the oob CPC's TCP side channel.
 *
 * A service thread owns every socket: it accepts, connects (trying each
 * published address with a bounded timeout), reads and writes fixed-size
 * messages. The progress path never blocks on a socket: it only pops events
 * the thread queued (one atomic load when there are none).
 *
 * Liveness: the thread also answers for its process while the process
 * computes outside MPI. A session that has been silent for the keepalive
 * interval gets a PING; the peer's thread answers PONG at once, with how
 * many of the session's messages its process has not taken yet. Both run
 * on the threads alone (no CPC or BTL state), so a CPC waiting for an
 * answer can tell a busy peer (it hears PONGs: wait) from a gone or hung
 * one (silence, a refused connection, a closed session).
 */
#ifndef CPC_OOB_CHANNEL_H
#define CPC_OOB_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

#define OOB_MSG_SIZE 160
#define OOB_MAX_ADDRS 8

enum oob_event_type {
    OOB_EV_MSG = 1,     /* a message arrived on session sid */
    OOB_EV_ERROR,       /* session sid failed (connect or I/O) and is closed */
};

/* What ended a session (OOB_EV_ERROR). */
enum oob_error {
    OOB_ERR_IO = 1,     /* connect timeout, I/O error, protocol error */
    OOB_ERR_REFUSED,    /* every published address refused the connection:
                           nothing listens there any more, the peer is gone */
    OOB_ERR_CLOSED,     /* the peer closed the session */
};

struct oob_event {
    enum oob_event_type type;
    int sid;
    void *owner;        /* what the opener passed; NULL for accepted sessions */
    void *listen_owner; /* for accepted sessions: the listener's owner */
    uint32_t peer_addr; /* for accepted sessions: the remote IPv4 address
                           (network order), so a responder can check it
                           against the claimed peer's published addresses */
    enum oob_error error; /* OOB_EV_ERROR */
    uint8_t msg[OOB_MSG_SIZE];
    char why[96];
};

int oob_chan_start(void);
void oob_chan_stop(void);

/* Listen on an ephemeral TCP port, the same on each address that
 * oob_local_addrs selects (never INADDR_ANY). */
int oob_chan_listen(void *owner, uint16_t *port_out, int *lid_out);
void oob_chan_unlisten(int lid);

/* Open a session: connect to the first reachable address and send msg.
 * Failing to connect is reported as an OOB_EV_ERROR on *sid_out (also when
 * it is known at once); the call itself fails only for lack of sessions. */
int oob_chan_connect(const uint32_t *addrs, int naddr, uint16_t port, const uint8_t *msg,
                     void *owner, int *sid_out);
/* Queue msg on a live session. On an accepted session this also vouches
 * for it, as oob_chan_trust does: a CPC answers only a job member (a
 * stranger gets nothing, or one message and a close). */
int oob_chan_send(int sid, const uint8_t *msg);
void oob_chan_close(int sid);

/* The CPC verified a frame on this accepted session (a job member's MAC):
 * the session is no longer subject to the limits the channel puts on
 * sessions nobody has vouched for yet: closed when it delivers no
 * handshake message for btl_openib_oob_unverified_idle seconds (PINGs do
 * not count; a message waiting for the CPC does), at most
 * btl_openib_oob_unverified_per_source per source address and half the
 * sessions in all (over either, the oldest silent one or else the new
 * one is closed), and at most 4 messages waiting for the CPC (then it is
 * not read until the CPC takes one). Each refusal is logged at verbose 1. */
void oob_chan_trust(int sid);

/* Pop the next event; false when none (cheap). */
bool oob_chan_poll(struct oob_event *ev);

/* Keepalive interval: a session silent this long gets a PING. Each user
 * asks for a fraction of its own timeout; the shortest request wins
 * (clamped to 200 ms .. 10 s). */
void oob_chan_set_ping_ms(int ms);

/* Signs of life on a live session: when its last frame of any kind arrived
 * (CLOCK_MONOTONIC ms, 0 = none yet) and, from the peer's last PONG, how
 * many of our messages its process has not taken yet. NOT_FOUND once the
 * session is closed. */
int oob_chan_liveness(int sid, long *heard_ms, int *peer_pending);

/* Events queued for oob_chan_poll, and how many the ring holds: when it
 * is full, sessions wait (they are not read) until there is room. */
int oob_chan_backlog(void);
int oob_chan_backlog_max(void);

/* This host's IPv4 addresses to publish and listen on: those that
 * btl_openib_oob_if_include / _exclude select (cpc_oob_params.c); 0 when
 * none, or when a parameter is wrong (the user was told). */
int oob_local_addrs(uint32_t *addrs, int max);

#endif
