/*
 * cpc_oob_channel.h - the oob CPC's TCP side channel.
 *
 * A service thread owns every socket: it accepts, connects (trying each
 * published address with a bounded timeout), reads and writes fixed-size
 * messages. The progress path never blocks on a socket: it only pops events
 * the thread queued (one atomic load when there are none).
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

struct oob_event {
    enum oob_event_type type;
    int sid;
    void *owner;        /* what the opener passed; NULL for accepted sessions */
    void *listen_owner; /* for accepted sessions: the listener's owner */
    uint8_t msg[OOB_MSG_SIZE];
    char why[96];
};

int oob_chan_start(void);
void oob_chan_stop(void);

/* Listen on an ephemeral TCP port on all IPv4 addresses. */
int oob_chan_listen(void *owner, uint16_t *port_out, int *lid_out);
void oob_chan_unlisten(int lid);

/* Open a session: connect to the first reachable address and send msg. */
int oob_chan_connect(const uint32_t *addrs, int naddr, uint16_t port, const uint8_t *msg,
                     void *owner, int *sid_out);
int oob_chan_send(int sid, const uint8_t *msg);
void oob_chan_close(int sid);

/* Pop the next event; false when none (cheap). */
bool oob_chan_poll(struct oob_event *ev);

/* This host's IPv4 addresses to publish: non-loopback first. */
int oob_local_addrs(uint32_t *addrs, int max);

#endif
