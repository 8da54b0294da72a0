/*
 * cpc_oob_channel.c - the oob CPC's side channel: its sessions (handles,
 * slots, closing), the event ring that hands their messages to progress,
 * frames and keepalives as they arrive, and the calls the CPCs make
 * (send, close, trust, poll, liveness, counters). The limits on sessions
 * nobody has vouched for: cpc_oob_channel_limits.c; the service thread
 * that runs both transports: cpc_oob_channel_thread.c (TCP:
 * cpc_oob_channel_tcp.c, UD: cpc_oob_channel_ud.c).
 * Locking: cpc_oob_channel_int.h.
 */
#include "opal_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/prefetch.h"

#include "connect/cpc_active.h"
#include "connect/cpc_internal.h"
#include "connect/cpc_oob_channel_int.h"
#include "connect/openib_connect.h"
#include "wire/oob_wire.h"

#define PING_MS_MIN 200
#define PING_MS_MAX 10000

struct oob_chan oob_ch = { .lock = PTHREAD_MUTEX_INITIALIZER, .gone = PTHREAD_COND_INITIALIZER,
                           .wake_fd = -1, .ping_ms = PING_MS_MAX };

void oob_chan_wake(void)
{
    uint64_t one = 1;
    ssize_t r = write(oob_ch.wake_fd, &one, sizeof(one));
    (void) r;
}

/* with the lock held: the slot of a live handle, or NULL */
static struct session *lookup(int h)
{
    struct session *s;

    if (h < 0 || SLOT_OF(h) >= oob_ch.nslots) {
        return NULL;
    }
    s = sess_at(SLOT_OF(h));
    return s->state != S_FREE && !s->closing && HANDLE(SLOT_OF(h), s->gen) == h ? s : NULL;
}

/* with the lock held; false when the ring is full */
static bool push_event(enum oob_event_type type, int sid, const uint8_t *msg,
                       enum oob_error error, const char *why)
{
    struct session *s = sess_at(sid);
    struct oob_event *e;

    if (oob_ch.ev_count == MAX_EVENTS) {
        return false;
    }
    e = &oob_ch.ev[oob_ch.ev_tail];
    oob_ch.ev_tail = (oob_ch.ev_tail + 1) % MAX_EVENTS;
    e->type = type;
    e->sid = HANDLE(sid, s->gen);
    e->owner = s->owner;
    e->listen_owner = s->listen_owner;
    e->peer_addr = s->peer_addr;
    e->via_ud = s->ud_port >= 0;
    e->ud_from = s->ud;
    e->error = error;
    if (msg) {
        memcpy(e->msg, msg, OOB_MSG_SIZE);
    }
    snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
    __atomic_add_fetch(&oob_ch.ev_count, 1, __ATOMIC_RELEASE);
    openib_connect_work_queued();
    return true;
}

/* with the lock held, on the service thread (or after it stopped) */
void oob_chan_sess_free(int sid)
{
    struct session *s = sess_at(sid);
    unsigned gen = s->gen + 1; /* a live handle dies now; a freed slot never
                                  looks like what it held (see serve in
                                  cpc_oob_channel_thread.c) */

    if (s->fd >= 0) {
        close(s->fd);
    }
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->ud_port = -1;
    s->state = S_FREE;
    s->gen = gen & GEN_MASK;
}

/* with the lock held: the handle dies at once, the session when what was
 * queued is out (each transport's plan decides when) */
static void sess_mark_closing(struct session *s)
{
    if (!s->closing) {
        s->closing = true;
        s->gen = (s->gen + 1) & GEN_MASK;
        s->owner = NULL;
        s->close_by_ms = 0; /* the thread starts the clock (its plan) */
    }
}

/* with the lock held */
void oob_chan_sess_fail(int sid, enum oob_error error, const char *why)
{
    /* An error on the session is an ERROR event. The ring being full
     * cannot lose it: the CPC's silence bound for that session ends the
     * handshake anyway (the session is gone: no keepalives answer). */
    if (!sess_at(sid)->closing) {
        (void) push_event(OOB_EV_ERROR, sid, NULL, error, why);
    }
    oob_chan_sess_free(sid);
}

/* with the lock held: queue a keepalive if there is room (if not, the
 * session is busy with real messages, which prove as much) */
void oob_chan_queue_ka(struct session *s, uint8_t type)
{
    struct oob_ka k = { .type = type, .pending = (uint16_t) (s->pending > 0xffff ? 0xffff
                                                                                  : s->pending) };

    if (s->outlen + OOB_MSG_SIZE <= sizeof(s->out) &&
        OPAL_SUCCESS == oob_ka_encode(s->out + s->outlen, OOB_MSG_SIZE, &k)) {
        s->outlen += OOB_MSG_SIZE;
    }
}

/* with the lock held: the session may deliver another message to the CPC */
bool oob_chan_may_read(const struct session *s)
{
    return !s->closing && (s->trusted || !s->accepted || s->pending < UNTRUSTED_PENDING_MAX);
}

/* With the lock held: a whole frame arrived, it proves the peer alive
 * whatever it is. The channel's keepalives are answered and consumed here;
 * everything else is a CPC's message, queued for progress. False: stop
 * reading this session (closed, or its message waits for room). */
bool oob_chan_on_frame(int sid)
{
    struct session *s = sess_at(sid);
    struct oob_ka k;
    int rc;

    s->heard_ms = openib_now_ms();
    rc = oob_ka_decode(s->in, OOB_MSG_SIZE, &k);
    if (OPAL_SUCCESS == rc) {
        s->inlen = 0;
        if (OOB_KA_PING == k.type && !s->closing) {
            oob_chan_queue_ka(s, OOB_KA_PONG);
        } else {
            s->peer_pending = k.pending;
        }
        return true;
    }
    if (OPAL_ERR_NOT_FOUND != rc) {
        oob_chan_sess_fail(sid, OOB_ERR_IO,
                           "the peer sent a side-channel keepalive of another version");
        return false;
    }
    if (s->closing) {
        s->inlen = 0; /* nobody will read it */
        return true;
    }
    if (!push_event(OOB_EV_MSG, sid, s->in, 0, NULL)) {
        /* Back-pressure, not loss: keep the message and stop reading this
         * session until the ring has room (TCP then holds the sender; UD
         * never gets here: it leaves the frame unacknowledged instead). */
        s->held = true;
        return false;
    }
    s->held = false;
    s->inlen = 0;
    s->pending++;
    s->spoke = true;
    return oob_chan_may_read(s);
}

/* With the lock held: a free slot (its fd -1), a new chunk of them when
 * every slot is taken; -1 when MAX_SLOTS are. A chunk comes zeroed (S_FREE)
 * and is not written before its slots are used: its pages cost memory only
 * once sessions have used them. */
int oob_chan_alloc_session(void)
{
    int i = 0, k;

    for (k = 0; k < oob_ch.nslots; ++k) {
        i = (oob_ch.hint + k) % oob_ch.nslots;
        if (sess_at(i)->state == S_FREE) {
            break;
        }
    }
    if (k == oob_ch.nslots) {
        if (oob_ch.nslots == MAX_SLOTS) {
            return -1;
        }
        oob_ch.chunk[oob_ch.nslots / CHUNK_SLOTS] = calloc(CHUNK_SLOTS, sizeof(struct session));
        if (NULL == oob_ch.chunk[oob_ch.nslots / CHUNK_SLOTS]) {
            return -1;
        }
        i = oob_ch.nslots;
        oob_ch.nslots += CHUNK_SLOTS;
    }
    oob_ch.hint = i + 1;
    sess_at(i)->fd = -1;
    sess_at(i)->ud_port = -1;
    return i;
}

/* with the lock held: what TCP and UD do alike when opening a session */
int oob_chan_opened(int sid, const uint32_t *addrs, int naddr, const uint8_t *msg)
{
    struct session *s = sess_at(sid);

    s->naddr = naddr > OOB_MAX_ADDRS ? OOB_MAX_ADDRS : naddr;
    if (s->naddr > 0) {
        memcpy(s->addrs, addrs, sizeof(uint32_t) * s->naddr);
    }
    memcpy(s->out, msg, OOB_MSG_SIZE);
    s->outlen = OOB_MSG_SIZE;
    oob_chan_wake();
    return HANDLE(sid, s->gen);
}


int oob_chan_send(int h, const uint8_t *msg)
{
    int rc = OPAL_SUCCESS;
    struct session *s;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (NULL == s || s->outlen + OOB_MSG_SIZE > sizeof(s->out)) {
        rc = OPAL_ERR_UNREACH;
    } else {
        memcpy(s->out + s->outlen, msg, OOB_MSG_SIZE);
        s->outlen += OOB_MSG_SIZE;
        /* Our CPC answers on an accepted session only when it took the
         * peer's message for a job member's (strangers get no answer, or
         * one and a close): it has vouched for the session. */
        s->trusted = true;
        oob_chan_wake();
    }
    pthread_mutex_unlock(&oob_ch.lock);
    return rc;
}

void oob_chan_close(int h)
{
    struct session *s;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (s) {
        /* Let what was queued (e.g. a final message) go out first; the
         * thread ends the session. */
        sess_mark_closing(s);
        oob_chan_wake();
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

void oob_chan_trust(int h)
{
    struct session *s;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (s) {
        s->trusted = true;
        oob_chan_wake(); /* it may have been paused for having too much unread */
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

/* MPI thread: write out the refusals the service thread queued */
static void flush_log(void)
{
    char lines[LOG_Q][sizeof(oob_ch.log[0])];
    int n, i;

    pthread_mutex_lock(&oob_ch.lock);
    n = oob_ch.log_n;
    memcpy(lines, oob_ch.log, sizeof(lines[0]) * n);
    __atomic_store_n(&oob_ch.log_n, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&oob_ch.lock);
    for (i = 0; i < n; ++i) {
        openib_cpc_log(1, "%s", lines[i]);
    }
}

bool oob_chan_poll(struct oob_event *ev)
{
    if (OPAL_LIKELY(0 == __atomic_load_n(&oob_ch.ev_count, __ATOMIC_ACQUIRE) &&
                    0 == __atomic_load_n(&oob_ch.log_n, __ATOMIC_ACQUIRE))) {
        return false;
    }
    if (oob_ch.log_n) {
        flush_log();
    }
    pthread_mutex_lock(&oob_ch.lock);
    if (0 == oob_ch.ev_count) {
        pthread_mutex_unlock(&oob_ch.lock);
        return false;
    }
    *ev = oob_ch.ev[oob_ch.ev_head];
    oob_ch.ev_head = (oob_ch.ev_head + 1) % MAX_EVENTS;
    __atomic_sub_fetch(&oob_ch.ev_count, 1, __ATOMIC_RELEASE);
    if (OOB_EV_MSG == ev->type) {
        struct session *s = lookup(ev->sid);
        if (s && s->pending > 0) {
            s->pending--; /* taken: the PONGs stop saying "not taken yet" */
            if (0 == s->pending) {
                s->idle_from_ms = openib_now_ms(); /* the CPC looked: its deadline restarts */
            }
        }
    }
    if (oob_ch.paused) {
        oob_chan_wake(); /* a session waits for room we just made */
    }
    pthread_mutex_unlock(&oob_ch.lock);
    return true;
}

void oob_chan_set_ping_ms(int ms)
{
    ms = ms < PING_MS_MIN ? PING_MS_MIN : ms > PING_MS_MAX ? PING_MS_MAX : ms;
    pthread_mutex_lock(&oob_ch.lock);
    if (ms < oob_ch.ping_ms) {
        oob_ch.ping_ms = ms;
        if (oob_ch.wake_fd >= 0) {
            oob_chan_wake();
        }
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

int oob_chan_liveness(int h, long *heard_ms, int *peer_pending)
{
    struct session *s;
    int rc = OPAL_ERR_NOT_FOUND;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (s) {
        *heard_ms = s->heard_ms;
        *peer_pending = s->peer_pending;
        rc = OPAL_SUCCESS;
    }
    pthread_mutex_unlock(&oob_ch.lock);
    return rc;
}

int oob_chan_backlog(void)
{
    return __atomic_load_n(&oob_ch.ev_count, __ATOMIC_ACQUIRE);
}

int oob_chan_backlog_max(void)
{
    return MAX_EVENTS;
}

void oob_chan_counts(struct oob_chan_counts *out)
{
    pthread_mutex_lock(&oob_ch.lock);
    *out = oob_ch.counts;
    pthread_mutex_unlock(&oob_ch.lock);
}
