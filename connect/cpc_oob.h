/*
 * cpc_oob.h - the side channel's progress (cpc_oob_events.c), which oob's
 * and xoob's progress hooks run, and what oob and xoob share to judge
 * frames on the side channel.
 */
#ifndef CPC_OOB_H
#define CPC_OOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct openib_auth_replay;

/* The side channel's events, handed to oob or xoob (whose frame it is):
 * both CPCs' progress hooks run it, so it runs whichever is selected.
 * Cheap when nothing is pending. Returns the number of events. */
int openib_cpc_side_channel_progress(void);
/* oob's and xoob's progress hooks: the side channel's events on every
 * call, then `timers` every 64th call, counted in *tick (the hook's own).
 * Returns the number of events. */
int openib_cpc_side_channel_progress_with(unsigned *tick, void (*timers)(void));

/* ---- shared by oob and xoob (one process, one side channel) ---- */

/* The number of processes in the job of `self` (our process name, 8
 * bytes), from PMIx; 0 when unknown. Asked once. */
uint32_t openib_cpc_oob_job_size(const uint8_t *self);
/* The nonces accepted on the side channel, for both CPCs. */
struct openib_auth_replay *openib_cpc_oob_replay(void);
/* Log a refused frame at verbose 1, rate-limited per reason (the first 10,
 * then one line per 100): "openib: <cpc>: refused <what> from <from>:
 * <reason token> (<detail>)". `reason` is an enum openib_refusal; `from` the
 * source address of an accepted session (openib_cpc_oob_addr) or the peer
 * a session was opened to. */
void openib_cpc_oob_refused(const char *cpc, const char *what, const char *from, int reason,
                            const char *detail);
/* An IPv4 address (network order) as text, into buf (16 bytes or more). */
const char *openib_cpc_oob_addr(uint32_t addr, char *buf, size_t len);
/* A handshake's look at session sid, the one it waits on (-1: none), at
 * time now. Returns the time of a frame newer than *heard_ms (recorded
 * there), no later than now: a sign of life; 0 when none came. *say_busy
 * is true once per handshake (*busy_said): the peer is alive, but its
 * process has not taken our messages yet. */
long openib_cpc_oob_news(int sid, long now, long *heard_ms, bool *busy_said, bool *say_busy);
/* A verified request from a job member this CPC has no endpoint for (yet;
 * why: endpoint_for_peer's reason, may be empty): no sealed answer is
 * possible without its blob, so its session is closed and it retries. */
void openib_cpc_oob_no_endpoint(const char *cpc, int sid, const char *why);

#endif
