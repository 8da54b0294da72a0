/*
 * cpc_auth.c - the per-process token, nonces, the handshake HMAC and the
 * replay memory (rules in cpc_auth.h). No crypto here: Nettle's HMAC.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "opal/constants.h"

#include "connect/cpc_auth.h"

static uint8_t local_token[OPENIB_AUTH_TOKEN_LEN];
static bool have_token;
static pthread_once_t token_once = PTHREAD_ONCE_INIT;

/* Kernel randomness only: getrandom(2), else /dev/urandom (old kernels,
 * seccomp filters). Never a PRNG seeded from time or pid: guessable. */
static int fill_random(uint8_t *buf, size_t len)
{
    size_t got = 0;
    int fd;

    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, 0);
        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t) n;
    }
    if (got == len) {
        return OPAL_SUCCESS;
    }
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return OPAL_ERROR;
    }
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t) n;
    }
    close(fd);
    return got == len ? OPAL_SUCCESS : OPAL_ERROR;
}

static void draw_token(void)
{
    have_token = OPAL_SUCCESS == fill_random(local_token, sizeof(local_token));
}

const uint8_t *openib_auth_local_token(void)
{
    pthread_once(&token_once, draw_token);
    return have_token ? local_token : NULL;
}

int openib_auth_nonce(uint8_t nonce[OPENIB_AUTH_NONCE_LEN])
{
    return fill_random(nonce, OPENIB_AUTH_NONCE_LEN);
}

static void mac_of(const uint8_t *key, const uint8_t *frame, size_t len, size_t mac_off,
                   uint8_t out[OPENIB_AUTH_MAC_LEN])
{
    static const uint8_t zeros[OPENIB_AUTH_MAC_LEN];
    struct hmac_sha256_ctx ctx;

    hmac_sha256_set_key(&ctx, OPENIB_AUTH_TOKEN_LEN, key);
    hmac_sha256_update(&ctx, mac_off, frame);
    hmac_sha256_update(&ctx, OPENIB_AUTH_MAC_LEN, zeros);
    hmac_sha256_update(&ctx, len - mac_off - OPENIB_AUTH_MAC_LEN,
                       frame + mac_off + OPENIB_AUTH_MAC_LEN);
    hmac_sha256_digest(&ctx, OPENIB_AUTH_MAC_LEN, out);
}

static bool mac_fits(size_t len, size_t mac_off)
{
    return mac_off <= len && len - mac_off >= OPENIB_AUTH_MAC_LEN;
}

void openib_auth_seal(const uint8_t key[OPENIB_AUTH_TOKEN_LEN], uint8_t *frame, size_t len,
                      size_t mac_off)
{
    uint8_t mac[OPENIB_AUTH_MAC_LEN];

    if (NULL == key || NULL == frame || !mac_fits(len, mac_off)) {
        return;
    }
    mac_of(key, frame, len, mac_off, mac);
    memcpy(frame + mac_off, mac, sizeof(mac));
}

bool openib_auth_verify(const uint8_t key[OPENIB_AUTH_TOKEN_LEN], const uint8_t *frame,
                        size_t len, size_t mac_off)
{
    uint8_t mac[OPENIB_AUTH_MAC_LEN];

    if (NULL == key || NULL == frame || !mac_fits(len, mac_off)) {
        return false;
    }
    mac_of(key, frame, len, mac_off, mac);
    return 0 != nettle_memeql_sec(mac, frame + mac_off, sizeof(mac));
}

/* FNV-1a 64: only to index what was seen; the MAC already proved the frame
 * genuine, so a collision can at worst refuse one honest retry. */
static uint64_t seen_key(const void *sender, size_t sender_len,
                         const uint8_t nonce[OPENIB_AUTH_NONCE_LEN])
{
    const uint8_t *p = sender;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < sender_len; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    for (i = 0; i < OPENIB_AUTH_NONCE_LEN; ++i) {
        h = (h ^ nonce[i]) * 0x100000001b3ull;
    }
    return h;
}

bool openib_auth_replay_fresh(struct openib_auth_replay *r, const void *sender,
                              size_t sender_len, const uint8_t nonce[OPENIB_AUTH_NONCE_LEN])
{
    uint64_t k = seen_key(sender, sender_len, nonce);
    unsigned i;

    for (i = 0; i < r->used; ++i) {
        if (r->seen[i] == k) {
            return false;
        }
    }
    r->seen[r->next] = k;
    r->next = (r->next + 1) % OPENIB_AUTH_REPLAY_SLOTS;
    if (r->used < OPENIB_AUTH_REPLAY_SLOTS) {
        r->used++;
    }
    return true;
}
