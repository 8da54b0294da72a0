/*
 * cpc_xoob.h - what oob's side channel calls in the built-in xoob CPC. The
 * BTL's XRC objects reach xoob like any CPC, through the port
 * (openib_cpc_port.xrc in openib_cpc.h).
 */
#ifndef CPC_XOOB_H
#define CPC_XOOB_H

#include <stdbool.h>

struct oob_event;

/* Called by openib_cpc_side_channel_progress for every side-channel event:
 * true when the event belonged to xoob (and was handled). */
bool openib_cpc_xoob_dispatch(const struct oob_event *ev);
/* The component's progress hook: the side channel it shares with oob, and
 * its handshakes' deadlines and retries (cheap when none is under way). */
int openib_cpc_xoob_progress(bool urgent);

#endif
