/*
 * cpc_auth.h - the per-job secret that every connection handshake proves.
 *
 * Each process draws a random token once (kernel random source) and every
 * CPC publishes it in its modex blob; PMIx hands modex data only to the
 * job's own processes. A handshake frame never carries a token: it carries
 * a nonce and an HMAC-SHA256 (Nettle) keyed with the RECEIVER's token, over
 * the whole frame (type, both process names, the QP data and the nonce).
 * So a stranger cannot forge or redirect a frame, a job member cannot pose
 * as another (the names are covered), and a captured frame is good for one
 * handshake only (receivers remember nonces: openib_auth_replay_*).
 * Device-free, unit-tested (tests/unit/connect/test_auth.c).
 */
#ifndef CPC_AUTH_H
#define CPC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPENIB_AUTH_TOKEN_LEN 16  /* 128 bits */
#define OPENIB_AUTH_NONCE_LEN 8
#define OPENIB_AUTH_MAC_LEN 16    /* HMAC-SHA256, truncated (RFC 2104 sec. 5) */

/* This process's token; NULL only if the kernel gave no random bytes (the
 * CPCs then decline: they cannot authenticate). Thread-safe. */
const uint8_t *openib_auth_local_token(void);

/* A fresh random nonce; OPAL_ERROR when no random source answers. */
int openib_auth_nonce(uint8_t nonce[OPENIB_AUTH_NONCE_LEN]);

/* Write the MAC of frame[0..len) into frame[mac_off..mac_off+MAC_LEN), the
 * MAC field itself counted as zeros. */
void openib_auth_seal(const uint8_t key[OPENIB_AUTH_TOKEN_LEN], uint8_t *frame, size_t len,
                      size_t mac_off);
/* Does the MAC field hold the MAC of the frame under key? Constant time.
 * False on a NULL key or a MAC field outside the frame. */
bool openib_auth_verify(const uint8_t key[OPENIB_AUTH_TOKEN_LEN], const uint8_t *frame,
                        size_t len, size_t mac_off);

/* Nonces a receiver has accepted recently (a ring: the oldest is forgotten
 * first). Big enough for every handshake a process answers while a
 * captured frame could still matter: a replay older than the ring also
 * meets an endpoint that is already connected, which refuses it. */
#define OPENIB_AUTH_REPLAY_SLOTS 1024
struct openib_auth_replay {
    uint64_t seen[OPENIB_AUTH_REPLAY_SLOTS]; /* hash of (sender name, nonce) */
    unsigned next, used;
};

/* True and remembered when (sender, nonce) was not seen before; false for
 * a replay. The caller serializes (each CPC calls it from its progress). */
bool openib_auth_replay_fresh(struct openib_auth_replay *r, const void *sender,
                              size_t sender_len, const uint8_t nonce[OPENIB_AUTH_NONCE_LEN]);

#endif
