/*
 * cpc_oob_channel_ud.c - side-channel sessions over UD.
 *
 * One UD QP per port carries every session: no connection, descriptor or
 * TIME_WAIT per handshake, nothing that grows with the number of peers
 * but the sessions under way. Each channel frame (a CPC message or a
 * keepalive, OOB_MSG_SIZE bytes) goes in one datagram behind a small
 * header (wire/oob_wire.h) and is sent again until the peer's service
 * thread acknowledges it; a session has one frame in flight, which keeps
 * frames in order and needs no window (a handshake is three messages).
 * The peer's thread acknowledges as soon as it has the frame, also while
 * its process computes outside MPI, so an acknowledgement proves the
 * process is there, as TCP's keepalives do.
 *
 * Back-pressure: a frame the CPC cannot take now (the event ring full, an
 * unverified session with too much unread) is left unacknowledged and
 * comes again.
 *
 * A gone process: nothing answers a datagram, so when the peer's QP has
 * not acknowledged a session's first frame after ud_probe_after_ms, the
 * thread connects to the peer's TCP listener (when it publishes one) and
 * closes at once: refused at every address means the process has exited
 * (the session fails as a refused TCP one would); a connection made means
 * it is there (its kernel accepts even while it is stopped, so this is no
 * sign of life for the CPC's silence bound). A first frame still
 * unacknowledged after ud_giveup_ms ends the session with
 * OOB_ERR_UD_SILENT, and the CPC may go on over TCP.
 *
 * Everything here runs on the service thread with the lock held, but for
 * the probe's socket calls (oob_ud_probe_step/_serve).
 */
#include "opal_config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opal/constants.h"

#include "connect/cpc_oob_channel_int.h"
#include "wire/oob_wire.h"

/* The first wait for an acknowledgement, doubled per resend up to the
 * cap: a peer's thread answers at once when it runs, but on a loaded node
 * it may not run for a while, and resending sooner only adds load. */
#define UD_RTO_MS 200
#define UD_RTO_MAX_MS 2000
/* A frame unacknowledged this long ends its session: the peer's thread is
 * gone or UD does not get through. Longer than a loaded node's scheduling
 * gaps; the CPC's own silence bound usually decides first. */
#define UD_GIVEUP_MS_DEFAULT 20000
#define UD_PROBE_AFTER_MS_DEFAULT 2000
#define UD_PROBE_EVERY_MS 5000
#define UD_MIN_TRIES 4
static int ud_giveup_ms = UD_GIVEUP_MS_DEFAULT;
static int ud_probe_after_ms = UD_PROBE_AFTER_MS_DEFAULT;
/* Datagrams taken per port and wake-up, so a flood cannot starve timers. */
#define UD_DRAIN_BATCH 256
/* How long unlisten waits for the thread to destroy a port. */
#define UD_GONE_WAIT_S 30

static bool same_addr(const struct oob_ud_addr *a, const struct oob_ud_addr *b)
{
    return a->qpn == b->qpn && a->global == b->global &&
           (a->global ? 0 == memcmp(a->gid, b->gid, 16) : a->lid == b->lid);
}

static void send_frame(int u, const struct oob_ud_addr *to, uint8_t kind, uint32_t src,
                       uint32_t dst, uint32_t seq, const uint8_t *payload, bool *sent)
{
    struct udport *p = &oob_ch.u[u];
    struct oob_ud_hdr h = { .kind = kind, .src_sid = src, .dst_sid = dst, .seq = seq };
    uint8_t buf[OOB_UD_FRAME_MAX];
    size_t len;
    bool ok = false;

    if (OPAL_SUCCESS == oob_ud_encode(buf, sizeof(buf), &h, payload, &len)) {
        ok = OPAL_SUCCESS == p->ops->send(p->port, to, buf, len);
    }
    if (sent) {
        *sent = ok;
    }
}

/* The session's frame in flight, (again) now. */
static void send_head(int i, long t)
{
    struct session *s = sess_at(i);
    bool open = !s->accepted && !s->ud_acked_open, sent;

    send_frame(s->ud_port, &s->ud, open ? OOB_UD_OPEN : OOB_UD_DATA, s->ud_id,
               open ? OOB_UD_NO_SID : s->ud_rsid, s->ud_tx_seq, s->out, &sent);
    if (!sent) {
        return; /* no send buffer now: the next round tries again */
    }
    if (s->ud_sent_ms) {
        oob_ch.counts.ud_resent++;
        s->ud_rto_ms = 2 * s->ud_rto_ms > UD_RTO_MAX_MS ? UD_RTO_MAX_MS : 2 * s->ud_rto_ms;
    } else {
        s->ud_first_ms = t;
    }
    oob_ch.counts.ud_frames++;
    s->ud_tries++;
    s->ud_sent_ms = t;
}

static void give_up(int i)
{
    struct session *s = sess_at(i);
    char why[128];

    if (s->accepted || s->ud_acked_open) {
        snprintf(why, sizeof(why), "the peer's side-channel thread stopped acknowledging "
                 "over UD (%d s)", ud_giveup_ms / 1000);
        oob_chan_sess_fail(i, OOB_ERR_IO, why);
        return;
    }
    snprintf(why, sizeof(why), "nothing acknowledged on the peer's UD side channel in %d s%s",
             ud_giveup_ms / 1000, s->probe_answered ? ", while its TCP listener accepts" : "");
    oob_chan_sess_fail(i, OOB_ERR_UD_SILENT, why);
}

int oob_ud_plan(int i, long t, int idle_ms, int *timeout)
{
    struct session *s = sess_at(i);

    if (s->closing) {
        /* the last frames still go out, acknowledged, within the bound;
         * but a session the peer never took is simply dropped: its first
         * frame (a request its opener gave up on) must not start a
         * handshake nobody waits for */
        if (0 == s->close_by_ms) {
            s->close_by_ms = t + ud_giveup_ms;
        }
        if (0 == s->outlen || t >= s->close_by_ms || (!s->accepted && !s->ud_acked_open)) {
            if (OOB_UD_NO_SID != s->ud_rsid) {
                send_frame(s->ud_port, &s->ud, OOB_UD_CLOSE, s->ud_id, s->ud_rsid, 0, NULL,
                           NULL);
            }
            oob_chan_sess_free(i);
            return 0;
        }
        oob_chan_min_timeout(timeout, s->close_by_ms - t);
    } else if (!oob_chan_plan_common(i, t, idle_ms, timeout)) {
        return 0;
    }
    if (s->outlen) {
        /* a thread that did not run for a while has not really tried */
        if (s->ud_first_ms && t - s->ud_first_ms >= ud_giveup_ms && s->ud_tries >= UD_MIN_TRIES) {
            give_up(i);
            return 0;
        }
        if (0 == s->ud_sent_ms || t - s->ud_sent_ms >= s->ud_rto_ms) {
            send_head(i, t);
        }
        oob_chan_min_timeout(timeout, s->ud_sent_ms ? s->ud_sent_ms + s->ud_rto_ms - t : 10);
    }
    if (s->closing || s->accepted || s->ud_acked_open || 0 == s->naddr) {
        return 0;
    }
    if (s->probing) {
        if (t > s->deadline_ms && !oob_tcp_connect_done(s)) {
            oob_tcp_note_error(s, ETIMEDOUT);
            return -1; /* the next address, or the verdict */
        }
        oob_chan_min_timeout(timeout, 100);
        return POLLOUT;
    }
    if (t >= s->probe_due_ms) {
        return -1;
    }
    oob_chan_min_timeout(timeout, s->probe_due_ms - t);
    return 0;
}

/* Service thread, no lock: the probe's next address, or its verdict when
 * every address was tried. */
void oob_ud_probe_step(int sid)
{
    struct session *s = sess_at(sid);
    bool ok;

    if (!s->probing) {
        s->ai = s->refused = s->last_errno = 0;
    }
    ok = oob_tcp_try_next_addr(s);
    pthread_mutex_lock(&oob_ch.lock);
    if (!s->probing) {
        oob_ch.counts.probes++;
    }
    s->probing = ok;
    if (!ok) {
        if (s->fd >= 0) {
            close(s->fd);
            s->fd = -1;
        }
        if (s->refused == s->naddr) {
            oob_chan_sess_fail(sid, OOB_ERR_REFUSED,
                               "nothing acknowledged on the peer's UD side channel, and its TCP "
                               "listener refused the connection at every published address");
        } else {
            s->probe_due_ms = openib_now_ms() + UD_PROBE_EVERY_MS;
        }
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

/* Service thread, no lock: the probe's connect completed or failed. */
void oob_ud_probe_serve(int sid, short revents)
{
    struct session *s = sess_at(sid);
    socklen_t len = sizeof(int);
    int err = 0;

    if (!s->probing) {
        return;
    }
    getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err || (revents & (POLLERR | POLLHUP))) {
        oob_tcp_note_error(s, err ? err : EIO);
        oob_ud_probe_step(sid);
        return;
    }
    close(s->fd);
    s->fd = -1;
    pthread_mutex_lock(&oob_ch.lock);
    s->probing = false;
    s->probe_answered = true;
    s->probe_due_ms = openib_now_ms() + UD_PROBE_EVERY_MS;
    pthread_mutex_unlock(&oob_ch.lock);
}

/* The UD session a frame names (any state but free: a closing one still
 * takes acknowledgements), from the address it has to come from. */
static struct session *by_id(int u, uint32_t id, const struct oob_ud_addr *from)
{
    struct session *s;

    if (OOB_UD_NO_SID == id || SLOT_OF(id) >= oob_ch.nslots) {
        return NULL;
    }
    s = sess_at(SLOT_OF(id));
    if (s->state == S_FREE || s->ud_port != u || s->ud_id != id || !same_addr(&s->ud, from)) {
        return NULL;
    }
    return s;
}

static void ack(int sid, const struct oob_ud_hdr *h)
{
    struct session *s = sess_at(sid);

    send_frame(s->ud_port, &s->ud, OOB_UD_ACK, s->ud_id, h->src_sid, h->seq, NULL, NULL);
}

/* A frame for the CPC or a keepalive, in order, once. */
static void deliver(int sid, const struct oob_ud_hdr *h, const uint8_t *payload)
{
    struct session *s = sess_at(sid);
    struct oob_ka k;

    if (h->seq != s->ud_rx_seq) {
        if (h->seq + 1 == s->ud_rx_seq) {
            ack(sid, h); /* a resend: our acknowledgement was lost */
        }
        return;
    }
    if (!s->closing && OPAL_ERR_NOT_FOUND == oob_ka_decode(payload, OOB_MSG_SIZE, &k) &&
        (!oob_chan_may_read(s) || oob_ch.ev_count == MAX_EVENTS)) {
        return; /* a message the CPC cannot take now: unacknowledged, it comes again
                   (keepalives never wait: they do not reach the CPC) */
    }
    s->ud_rx_seq++;
    ack(sid, h);
    if (s->closing) {
        return; /* nobody will read it */
    }
    memcpy(s->in, payload, OOB_MSG_SIZE);
    s->inlen = OOB_MSG_SIZE;
    (void) oob_chan_on_frame(sid);
}

static void on_open(int u, const struct oob_ud_addr *from, const struct oob_ud_hdr *h,
                    const uint8_t *payload)
{
    struct session *s;
    int i, sid;
    long t;

    if (0 != h->seq) {
        return;
    }
    for (i = 0; i < oob_ch.nslots; ++i) {
        s = sess_at(i);
        if (s->state != S_FREE && s->ud_port == u && s->accepted && s->ud_rsid == h->src_sid &&
            same_addr(&s->ud, from)) {
            deliver(i, h, payload); /* the OPEN again: acknowledged again */
            return;
        }
    }
    if (!oob_chan_admit(0, from)) {
        return; /* no answer: it sends again, or gives up */
    }
    sid = oob_chan_alloc_session();
    if (sid < 0) {
        oob_chan_log_refusal(R_SESSION_CAP, 0, from, "no free session");
        return;
    }
    s = sess_at(sid);
    t = openib_now_ms();
    *s = (struct session) { .state = S_OPEN, .fd = -1, .listen_owner = oob_ch.u[u].owner,
                            .accepted = true, .gen = s->gen, .pinged_ms = t, .opened_ms = t,
                            .idle_from_ms = t, .ud_port = u, .ud = *from,
                            .ud_rsid = h->src_sid, .ud_id = (uint32_t) HANDLE(sid, s->gen),
                            .ud_rto_ms = UD_RTO_MS };
    oob_ch.counts.ud_accepted++;
    deliver(sid, h, payload);
}

static void acked(struct session *s, uint32_t rsid, uint32_t seq);

static void on_data(int u, const struct oob_ud_addr *from, const struct oob_ud_hdr *h,
                    const uint8_t *payload)
{
    struct session *s = by_id(u, h->dst_sid, from);

    if (NULL == s) {
        send_frame(u, from, OOB_UD_RESET, h->dst_sid, h->src_sid, 0, NULL, NULL);
        return;
    }
    if (OOB_UD_NO_SID == s->ud_rsid) {
        /* its answer came before the acknowledgement of our OPEN: it has
         * the OPEN (sending it again could reach a session it closed) */
        acked(s, h->src_sid, 0);
    } else if (s->ud_rsid != h->src_sid) {
        return;
    }
    deliver(SLOT_OF(h->dst_sid), h, payload);
}

/* Frame `seq` of session s arrived at the peer's session `rsid`. */
static void acked(struct session *s, uint32_t rsid, uint32_t seq)
{
    s->heard_ms = openib_now_ms(); /* the peer's thread is there */
    if (!s->accepted && !s->ud_acked_open && 0 == seq) {
        s->ud_acked_open = true;
        s->ud_rsid = rsid;
        if (s->probing) {
            close(s->fd); /* no verdict needed any more */
            s->fd = -1;
            s->probing = false;
        }
    }
    if (s->outlen && seq == s->ud_tx_seq) {
        memmove(s->out, s->out + OOB_MSG_SIZE, s->outlen - OOB_MSG_SIZE);
        s->outlen -= OOB_MSG_SIZE;
        s->ud_tx_seq++;
        s->ud_sent_ms = s->ud_first_ms = 0;
        s->ud_tries = 0;
        s->ud_rto_ms = UD_RTO_MS;
    }
}

static void on_ack(int u, const struct oob_ud_addr *from, const struct oob_ud_hdr *h)
{
    struct session *s = by_id(u, h->dst_sid, from);

    if (NULL == s || (OOB_UD_NO_SID != s->ud_rsid && s->ud_rsid != h->src_sid)) {
        return;
    }
    acked(s, h->src_sid, h->seq);
}

static void on_end(int u, const struct oob_ud_addr *from, const struct oob_ud_hdr *h)
{
    struct session *s = by_id(u, h->dst_sid, from);

    if (NULL == s || (OOB_UD_NO_SID != s->ud_rsid && s->ud_rsid != h->src_sid)) {
        return;
    }
    if (s->closing) {
        oob_chan_sess_free(SLOT_OF(h->dst_sid));
    } else {
        oob_chan_sess_fail(SLOT_OF(h->dst_sid), OOB_ERR_CLOSED,
                           OOB_UD_CLOSE == h->kind ? "the peer closed the side channel"
                                                   : "the peer has no such side-channel session "
                                                     "(it closed it, or its process restarted)");
    }
}

void oob_ud_drain(int u)
{
    struct udport *p = &oob_ch.u[u];
    uint8_t buf[OOB_UD_FRAME_MAX];
    struct oob_ud_addr from;
    struct oob_ud_hdr h;
    const uint8_t *payload;
    size_t len;
    int k;

    for (k = 0; k < UD_DRAIN_BATCH && p->ops->recv(p->port, &from, buf, sizeof(buf), &len); ++k) {
        if (OPAL_SUCCESS != oob_ud_decode(buf, len, &h, &payload)) {
            continue; /* not a frame of ours */
        }
        switch (h.kind) {
        case OOB_UD_OPEN:
            on_open(u, &from, &h, payload);
            break;
        case OOB_UD_DATA:
            on_data(u, &from, &h, payload);
            break;
        case OOB_UD_ACK:
            on_ack(u, &from, &h);
            break;
        default:
            on_end(u, &from, &h);
            break;
        }
    }
    if (k == UD_DRAIN_BATCH) {
        oob_chan_wake(); /* more may be there: the next round takes it */
    }
}

void oob_ud_port_gone(int u)
{
    struct udport *p = &oob_ch.u[u];
    int i;

    for (i = 0; i < oob_ch.nslots; ++i) {
        if (sess_at(i)->state != S_FREE && sess_at(i)->ud_port == u) {
            oob_chan_sess_fail(i, OOB_ERR_IO, "the side channel's UD port closed");
        }
    }
    p->ops->destroy(p->port);
    *p = (struct udport) { .ops = NULL };
    pthread_cond_broadcast(&oob_ch.gone);
}

void oob_chan_ud_timing(int giveup_ms, int probe_after_ms)
{
    pthread_mutex_lock(&oob_ch.lock);
    ud_giveup_ms = giveup_ms > 0 ? giveup_ms : UD_GIVEUP_MS_DEFAULT;
    ud_probe_after_ms = probe_after_ms > 0 ? probe_after_ms : UD_PROBE_AFTER_MS_DEFAULT;
    pthread_mutex_unlock(&oob_ch.lock);
}

int oob_chan_listen_ud(void *owner, const struct oob_dgram_ops *ops, void *port, int *uid_out)
{
    int i;

    pthread_mutex_lock(&oob_ch.lock);
    for (i = 0; i < MAX_UDPORTS && oob_ch.u[i].ops; ++i) {
    }
    if (i == MAX_UDPORTS) {
        pthread_mutex_unlock(&oob_ch.lock);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    oob_ch.u[i] = (struct udport) { .ops = ops, .port = port, .owner = owner };
    if (oob_ch.wake_fd >= 0) {
        oob_chan_wake();
    }
    pthread_mutex_unlock(&oob_ch.lock);
    *uid_out = i;
    return OPAL_SUCCESS;
}

void oob_chan_unlisten_ud(int uid)
{
    struct timespec until;

    if (uid < 0 || uid >= MAX_UDPORTS) {
        return;
    }
    pthread_mutex_lock(&oob_ch.lock);
    if (NULL == oob_ch.u[uid].ops) {
        pthread_mutex_unlock(&oob_ch.lock);
        return;
    }
    if (0 == oob_ch.refs) {
        oob_ud_port_gone(uid); /* no thread */
        pthread_mutex_unlock(&oob_ch.lock);
        return;
    }
    /* the thread may be polling its descriptor: the thread destroys it */
    oob_ch.u[uid].closing = true;
    oob_chan_wake();
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += UD_GONE_WAIT_S;
    while (oob_ch.u[uid].ops &&
           ETIMEDOUT != pthread_cond_timedwait(&oob_ch.gone, &oob_ch.lock, &until)) {
    }
    if (oob_ch.u[uid].ops) {
        /* A thread starved that long: the port goes now, under the lock,
         * before the BTL frees the PD and closes the device beneath its
         * QP. The thread looks the port up under the lock before it
         * touches it again, so a poll still running on the old descriptor
         * finds nothing to serve. */
        oob_ud_port_gone(uid);
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

int oob_chan_connect_ud(int uid, const struct oob_ud_addr *to, const uint32_t *probe_addrs,
                        int nprobe, uint16_t probe_port, const uint8_t *msg, void *owner,
                        int *sid_out)
{
    struct session *s;
    int sid;
    long t = openib_now_ms();

    pthread_mutex_lock(&oob_ch.lock);
    if (uid < 0 || uid >= MAX_UDPORTS || NULL == oob_ch.u[uid].ops || oob_ch.u[uid].closing) {
        pthread_mutex_unlock(&oob_ch.lock);
        return OPAL_ERR_UNREACH;
    }
    sid = oob_chan_alloc_session();
    if (sid < 0) {
        pthread_mutex_unlock(&oob_ch.lock);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    s = sess_at(sid);
    *s = (struct session) { .state = S_OPEN, .fd = -1, .owner = owner, .gen = s->gen,
                            .pinged_ms = t, .ud_port = uid, .ud = *to,
                            .ud_id = (uint32_t) HANDLE(sid, s->gen), .ud_rsid = OOB_UD_NO_SID,
                            .ud_rto_ms = UD_RTO_MS, .probe_due_ms = t + ud_probe_after_ms,
                            .port = probe_port };
    oob_ch.counts.ud_opened++;
    *sid_out = oob_chan_opened(sid, probe_addrs, nprobe, msg);
    pthread_mutex_unlock(&oob_ch.lock);
    return OPAL_SUCCESS;
}
