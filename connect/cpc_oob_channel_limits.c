/*
 * cpc_oob_channel_limits.c - the limits the side channel puts on accepted
 * sessions nobody has vouched for yet (oob_chan_trust): how many from one
 * source and in all, which one goes when a new one is over them, and the
 * log of what was refused (queued by the service thread, written out by
 * the MPI thread's poll). The idle limit is judged with each session's
 * plan (oob_chan_plan_common). Locking: cpc_oob_channel_int.h.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "connect/cpc_oob_channel_int.h"
#include "connect/cpc_oob_params.h"
#include "connect/openib_connect.h"

/* Refusals logged per reason: the first 10, then one in 100. */
#define LOG_FIRST 10
#define LOG_EVERY 100

static const char *const refusal_token[R_COUNT] = { "idle", "per-source-cap", "session-cap" };

/* with the lock held. The thread logs nothing itself (opal_output is the
 * MPI thread's): it queues the line for oob_chan_poll to write. */
void oob_chan_log_refusal(enum refusal r, uint32_t addr, const struct oob_ud_addr *ud,
                          const char *detail)
{
    unsigned long n = ++oob_ch.refusals[r];
    char a[INET6_ADDRSTRLEN];

    if ((n > LOG_FIRST && n % LOG_EVERY) || oob_ch.log_n == LOG_Q) {
        return;
    }
    if (ud) {
        inet_ntop(AF_INET6, ud->gid, a, sizeof(a));
    } else {
        inet_ntop(AF_INET, &addr, a, sizeof(a));
    }
    snprintf(oob_ch.log[oob_ch.log_n], sizeof(oob_ch.log[0]),
             "openib: oob side channel: refused session from %s%s: %s (%s; %lu so far)", a,
             ud ? " over UD" : "", refusal_token[r], detail, n);
    __atomic_add_fetch(&oob_ch.log_n, 1, __ATOMIC_RELEASE);
    openib_connect_work_queued();
}

/* with the lock held: an unverified accepted session that could be evicted */
bool oob_chan_unverified(const struct session *s)
{
    return s->state == S_OPEN && s->accepted && !s->trusted && !s->closing;
}

/* Both from the same source: the same IPv4 address over TCP, the same
 * port (GID or LID) over UD, whatever the QP. */
static bool same_source(const struct session *s, uint32_t addr, const struct oob_ud_addr *ud)
{
    if ((s->ud_port >= 0) != (NULL != ud)) {
        return false;
    }
    if (NULL == ud) {
        return s->peer_addr == addr;
    }
    return ud->global ? s->ud.global && 0 == memcmp(s->ud.gid, ud->gid, 16)
                      : !s->ud.global && s->ud.lid == ud->lid;
}

/* with the lock held: the oldest unverified session that has said nothing
 * (from this source, or from anywhere when any) - an honest initiator
 * sends its request the moment it connects, so a silent one is the one
 * to drop */
static int oldest_silent(uint32_t addr, const struct oob_ud_addr *ud, bool any)
{
    int i, best = -1;

    for (i = 0; i < oob_ch.nslots; ++i) {
        const struct session *s = sess_at(i);
        if (oob_chan_unverified(s) && !s->spoke && 0 == s->pending &&
            (any || same_source(s, addr, ud)) &&
            (best < 0 || s->opened_ms < sess_at(best)->opened_ms)) {
            best = i;
        }
    }
    return best;
}

bool oob_chan_admit(uint32_t addr, const struct oob_ud_addr *ud)
{
    int i, from_src = 0, all = 0, victim = -1;
    enum refusal why = R_SESSION_CAP;

    for (i = 0; i < oob_ch.nslots; ++i) {
        if (oob_chan_unverified(sess_at(i))) {
            all++;
            from_src += same_source(sess_at(i), addr, ud);
        }
    }
    if (from_src >= oob_params_per_source()) {
        why = R_PER_SOURCE;
        victim = oldest_silent(addr, ud, false);
    } else if (all >= UNTRUSTED_MAX) {
        victim = oldest_silent(addr, ud, true);
    }
    if (from_src >= oob_params_per_source() || all >= UNTRUSTED_MAX) {
        if (victim < 0) {
            oob_chan_log_refusal(why, addr, ud, "the new session refused");
            return false;
        }
        oob_chan_log_refusal(why, sess_at(victim)->peer_addr,
                             sess_at(victim)->ud_port >= 0 ? &sess_at(victim)->ud : NULL,
                             "its oldest silent session closed");
        oob_chan_sess_free(victim);
    }
    return true;
}

