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
 *
 * Two transports carry sessions, with the same semantics for the CPCs
 * (ordered, reliable frames; keepalives; errors):
 *   TCP  one connection per session (cpc_oob_channel_tcp.c);
 *   UD   one UD QP per port for every session, each frame in a datagram
 *        sent again until the peer's thread acknowledges it
 *        (cpc_oob_channel_ud.c; the verbs port: cpc_oob_ud.c). No
 *        connection, descriptor or TIME_WAIT per handshake, and no IP
 *        needed.
 * Sessions are allocated as needed, up to 65536 at once (the handle's
 * slot bits); the thread's work per wake-up grows with the sessions open,
 * which exist only while handshakes are under way.
 */
#ifndef CPC_OOB_CHANNEL_H
#define CPC_OOB_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OOB_MSG_SIZE 160
#define OOB_MAX_ADDRS 8

/* A UD side channel's address (a port's UD QP): enough to send to it and
 * to check it against what its process published. */
struct oob_ud_addr {
    uint8_t gid[16];
    uint16_t lid;
    uint32_t qpn;
    bool global;         /* routed with a GRH: RoCE, or InfiniBand across subnets */
};

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
    OOB_ERR_UD_SILENT,  /* UD: the peer's UD QP never acknowledged the session's
                           first frame, while its TCP listener (when it
                           publishes one) accepted connections: UD does not
                           get through; TCP may */
};

struct oob_event {
    enum oob_event_type type;
    int sid;
    void *owner;        /* what the opener passed; NULL for accepted sessions */
    void *listen_owner; /* for accepted sessions: the listener's owner */
    uint32_t peer_addr; /* for accepted TCP sessions: the remote IPv4 address
                           (network order), so a responder can check it
                           against the claimed peer's published addresses */
    bool via_ud;        /* the session runs over UD */
    struct oob_ud_addr ud_from; /* for accepted UD sessions: the sender's port
                           and QP (from the datagram), for the same check */
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

/* ---- UD ---- */

/* A datagram port that UD sessions run on: the verbs one (cpc_oob_ud.c)
 * or a test's. Called by the service thread only, with the channel's
 * lock held; none blocks. */
struct oob_dgram_ops {
    /* Send len bytes to `to`. OUT_OF_RESOURCE: no send buffer free now
     * (the channel sends again later). */
    int (*send)(void *port, const struct oob_ud_addr *to, const uint8_t *buf, size_t len);
    /* Copy the next datagram that arrived into buf; false when none. */
    bool (*recv)(void *port, struct oob_ud_addr *from, uint8_t *buf, size_t cap, size_t *len);
    /* A descriptor that becomes readable when datagrams may have arrived,
     * and the call that takes that notice and asks for the next one. */
    int (*fd)(void *port);
    void (*rearm)(void *port);
    void (*destroy)(void *port);
};

/* Serve sessions on a datagram port from now on; frames opening new
 * sessions there are reported with `owner` as listen_owner. */
int oob_chan_listen_ud(void *owner, const struct oob_dgram_ops *ops, void *port, int *uid_out);
/* Stop: the port's sessions end and the port is destroyed (ops->destroy)
 * before this returns (its verbs objects hold the BTL's PD). */
void oob_chan_unlisten_ud(int uid);
/* Open a session over UD port uid to `to`, first message msg. When the
 * peer's UD QP stays silent, a TCP connection to its listener (probe_addrs,
 * nprobe, probe_port; none when nprobe is 0), closed at once, tells a gone
 * process (OOB_ERR_REFUSED) from a live one that UD does not reach
 * (OOB_ERR_UD_SILENT). Errors as for oob_chan_connect. */
int oob_chan_connect_ud(int uid, const struct oob_ud_addr *to, const uint32_t *probe_addrs,
                        int nprobe, uint16_t probe_port, const uint8_t *msg, void *owner,
                        int *sid_out);

/* Tests: how long a UD frame may go unacknowledged, and when a silent
 * peer is first probed over TCP (<= 0: the defaults, 20 s and 2 s). */
void oob_chan_ud_timing(int giveup_ms, int probe_after_ms);

/* Sessions and datagrams so far, for verbose output and MPI_T. */
struct oob_chan_counts {
    unsigned long tcp_opened, tcp_accepted;  /* TCP connections for sessions */
    unsigned long ud_opened, ud_accepted;    /* sessions over UD */
    unsigned long ud_frames, ud_resent;      /* datagrams with a frame; sent again */
    unsigned long probes;                    /* TCP probes of a silent UD peer */
};
void oob_chan_counts(struct oob_chan_counts *out);

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
