/*
 * test_auth.c - the handshake authentication primitives: the token is
 * random and stable, a sealed frame verifies only under the key it was
 * sealed with, any changed byte (outside or inside the MAC) fails it, and
 * the replay memory refuses a (sender, nonce) it has seen, per sender.
 * The HMAC itself is checked against RFC 4231 test case 2 through the
 * same Nettle calls, so a wrong link or a truncation slip cannot pass.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include <nettle/hmac.h>

#include "connect/cpc_auth.h"
#include "tests/unit/connect/cpc_test.h"

static void test_rfc4231(void)
{
    /* RFC 4231 4.3: key "Jefe", data "what do ya want for nothing?" */
    static const uint8_t want[16] = { 0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e,
                                      0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7 };
    const char *data = "what do ya want for nothing?";
    struct hmac_sha256_ctx c;
    uint8_t out[16];

    hmac_sha256_set_key(&c, 4, (const uint8_t *) "Jefe");
    hmac_sha256_update(&c, strlen(data), (const uint8_t *) data);
    hmac_sha256_digest(&c, sizeof(out), out);
    CHECK(0 == memcmp(out, want, sizeof(want)));
}

static void test_token_and_nonce(void)
{
    const uint8_t *t1 = openib_auth_local_token(), *t2 = openib_auth_local_token();
    static const uint8_t zero[OPENIB_AUTH_TOKEN_LEN];
    uint8_t n1[OPENIB_AUTH_NONCE_LEN], n2[OPENIB_AUTH_NONCE_LEN];

    CHECK(NULL != t1);
    CHECK(t1 == t2); /* drawn once per process */
    CHECK(0 != memcmp(t1, zero, sizeof(zero)));
    CHECK_EQ(OPAL_SUCCESS, openib_auth_nonce(n1));
    CHECK_EQ(OPAL_SUCCESS, openib_auth_nonce(n2));
    CHECK(0 != memcmp(n1, n2, sizeof(n1)));
}

static void test_seal_verify(void)
{
    uint8_t key[OPENIB_AUTH_TOKEN_LEN], other[OPENIB_AUTH_TOKEN_LEN];
    uint8_t f[160], g[160];
    const size_t mac_off = 100;
    size_t i;

    memcpy(key, openib_auth_local_token(), sizeof(key));
    memcpy(other, key, sizeof(other));
    other[5] ^= 0x40;
    for (i = 0; i < sizeof(f); ++i) {
        f[i] = (uint8_t) (i * 7 + 3);
    }
    openib_auth_seal(key, f, sizeof(f), mac_off);
    CHECK(openib_auth_verify(key, f, sizeof(f), mac_off));
    CHECK(!openib_auth_verify(other, f, sizeof(f), mac_off));
    CHECK(!openib_auth_verify(NULL, f, sizeof(f), mac_off));
    /* the MAC field must lie inside the frame */
    CHECK(!openib_auth_verify(key, f, sizeof(f), sizeof(f) - 8));
    CHECK(!openib_auth_verify(key, f, sizeof(f), sizeof(f) + 1));
    /* every single-bit change anywhere is caught */
    for (i = 0; i < sizeof(f); ++i) {
        memcpy(g, f, sizeof(f));
        g[i] ^= 1;
        if (openib_auth_verify(key, g, sizeof(g), mac_off)) {
            CHECK(!"a changed byte passed verification");
        }
    }
    /* resealing is stable: the old MAC bytes do not feed the new MAC */
    memcpy(g, f, sizeof(f));
    openib_auth_seal(key, g, sizeof(g), mac_off);
    CHECK(0 == memcmp(f, g, sizeof(f)));
    /* a shorter frame (truncation) does not verify */
    CHECK(!openib_auth_verify(key, f, sizeof(f) - 1, mac_off));
}

static void test_replay(void)
{
    struct openib_auth_replay *r = calloc(1, sizeof(*r));
    const uint8_t a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8] = { 1, 2, 3, 4, 5, 6, 7, 9 };
    uint8_t n[OPENIB_AUTH_NONCE_LEN] = { 9, 9, 9, 9, 9, 9, 9, 9 };
    int i;

    CHECK(openib_auth_replay_fresh(r, a, sizeof(a), n));
    CHECK(!openib_auth_replay_fresh(r, a, sizeof(a), n));
    CHECK(openib_auth_replay_fresh(r, b, sizeof(b), n)); /* another sender */
    CHECK(!openib_auth_replay_fresh(r, b, sizeof(b), n));
    /* the ring forgets the oldest only after it is full */
    for (i = 0; i < OPENIB_AUTH_REPLAY_SLOTS - 3; ++i) {
        uint8_t m[OPENIB_AUTH_NONCE_LEN] = { 0 };
        memcpy(m, &i, sizeof(i));
        m[7] = 0xee;
        CHECK(openib_auth_replay_fresh(r, a, sizeof(a), m));
    }
    CHECK(!openib_auth_replay_fresh(r, a, sizeof(a), n));
    free(r);
}

int main(void)
{
    test_rfc4231();
    test_token_and_nonce();
    test_seal_verify();
    test_replay();
    return test_report("test_auth");
}
