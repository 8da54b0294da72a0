/*
 * btl_openib_rq_spec.c - the receive-queue specification parser.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_rq_spec.h"


/* OPAL_SUCCESS: a number in *v; OPAL_ERR_BAD_PARAM: not a non-negative
 * integer; OPAL_ERR_VALUE_OUT_OF_BOUNDS: one above UINT32_MAX or more (*v
 * unset). */
static int parse_u32(const char *s, uint32_t *v)
{
    char *end;
    unsigned long long x;

    if (!*s || *s == '-' || *s == '+') {
        return OPAL_ERR_BAD_PARAM;
    }
    errno = 0;
    x = strtoull(s, &end, 10);
    if (*end) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (errno == ERANGE || x > 0xffffffffULL) {
        return OPAL_ERR_VALUE_OUT_OF_BOUNDS;
    }
    *v = (uint32_t) x;
    return OPAL_SUCCESS;
}

static int fail(const char *tok, char *bad, size_t bad_len, char *why, size_t why_len,
                const char *reason)
{
    snprintf(bad, bad_len, "%s", tok);
    snprintf(why, why_len, "%s", reason);
    return OPAL_ERR_BAD_PARAM;
}

static const char *const pp_fields[] = { "size", "count", "low", "window", "reserve" };
static const char *const srq_fields[] = { "size", "count", "low", "max_pending" };

/* Parse one "T,a,b,..." token into q: OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM
 * with why filled. */
static int parse_one(char *tok, struct openib_rq *q, uint32_t *ignored, char *why, size_t why_len)
{
    const char *const *names;
    const char *txt[6] = { "" };
    uint32_t f[6];
    int nf = 0, maxf, rc;
    char *save = NULL, *field;

    field = strtok_r(tok, ",", &save);
    if (!field || strlen(field) != 1 || !strchr("PSX", field[0])) {
        snprintf(why, why_len, "the queue type must be P, S or X");
        return OPAL_ERR_BAD_PARAM;
    }
    q->type = (enum openib_rq_type) field[0];
    maxf = q->type == OPENIB_RQ_PP ? 5 : 4;
    names = q->type == OPENIB_RQ_PP ? pp_fields : srq_fields;
    while ((field = strtok_r(NULL, ",", &save))) {
        if (nf == maxf) {
            snprintf(why, why_len, "too many fields (a %c queue takes at most %d numbers)",
                     q->type, maxf);
            return OPAL_ERR_BAD_PARAM;
        }
        txt[nf] = field;
        rc = parse_u32(field, &f[nf]);
        if (rc == OPAL_ERR_BAD_PARAM) {
            snprintf(why, why_len, "<%s> '%s' is not a non-negative integer", names[nf], field);
            return OPAL_ERR_BAD_PARAM;
        }
        if (rc == OPAL_ERR_VALUE_OUT_OF_BOUNDS) {
            /* P's <low> and S/X's <max_pending> are not otherwise checked */
            if ((q->type == OPENIB_RQ_PP && nf == 2) || (q->type != OPENIB_RQ_PP && nf == 3)) {
                snprintf(why, why_len, "<%s> %s is out of range: at most 4294967295", names[nf],
                         field);
                return OPAL_ERR_BAD_PARAM;
            }
            f[nf] = UINT32_MAX; /* the range checks below say what the maximum is */
        }
        nf++;
    }
    /* a bad size first: it is what the user wrote first */
    if (nf >= 1 && (f[0] < OPENIB_RQ_MIN_SIZE || f[0] > OPENIB_RQ_MAX_SIZE)) {
        snprintf(why, why_len, "<size> %s is out of range: buffer size must be between %u and %u bytes",
                 txt[0], OPENIB_RQ_MIN_SIZE, OPENIB_RQ_MAX_SIZE);
        return OPAL_ERR_BAD_PARAM;
    }
    if (nf < 2) {
        snprintf(why, why_len, "a queue needs at least <size>,<count>");
        return OPAL_ERR_BAD_PARAM;
    }
    q->size = f[0];
    q->count = f[1];
    if (q->count < 2) {
        snprintf(why, why_len, "a queue needs at least 2 buffers");
        return OPAL_ERR_BAD_PARAM;
    }
    if (q->type == OPENIB_RQ_PP && q->count > OPENIB_RQ_MAX_PP_COUNT) {
        snprintf(why, why_len, "<count> %s is out of range: a P queue holds at most %u buffers, "
                 "because credits travel as 16-bit serial numbers", txt[1], OPENIB_RQ_MAX_PP_COUNT);
        return OPAL_ERR_BAD_PARAM;
    }
    if (q->type != OPENIB_RQ_PP && q->count > OPENIB_RQ_MAX_SRQ_COUNT) {
        snprintf(why, why_len, "<count> %s is out of range: a shared queue holds at most %u buffers "
                 "(more than any device's shared receive queue)", txt[1], OPENIB_RQ_MAX_SRQ_COUNT);
        return OPAL_ERR_BAD_PARAM;
    }
    if (q->type == OPENIB_RQ_PP) {
        /* f[2] (low watermark) is accepted for compatibility: buffers are
         * reposted as soon as they are consumed. */
        q->window = nf > 3 ? f[3] : q->count / 2;
        q->reserve = nf > 4 ? f[4] : (q->count >= 32 ? 4 : 1);
        *ignored |= (nf > 2 ? OPENIB_RQ_IGNORED_P_LOW : 0u) | (nf > 4 ? OPENIB_RQ_IGNORED_P_RESERVE : 0u);
        if (q->window == 0 || q->window >= q->count) {
            snprintf(why, why_len, "the credit window must be between 1 and count-1");
            return OPAL_ERR_BAD_PARAM;
        }
        if (q->reserve >= q->count) {
            snprintf(why, why_len, "the reserve must be smaller than count");
            return OPAL_ERR_BAD_PARAM;
        }
    } else {
        q->low = nf > 2 ? f[2] : q->count / 4;
        *ignored |= nf > 3 ? OPENIB_RQ_IGNORED_MAX_PENDING : 0u;
        if (q->low >= q->count) {
            snprintf(why, why_len, "the low watermark must be smaller than count");
            return OPAL_ERR_BAD_PARAM;
        }
    }
    return OPAL_SUCCESS;
}

int openib_rq_spec_parse(const char *text, struct openib_rq_spec *out,
                         char *bad, size_t bad_len, char *why, size_t why_len)
{
    char *copy, *save = NULL, *tok;
    char tokcopy[128];
    int rc = OPAL_SUCCESS, have_x = 0, have_ps = 0;

    memset(out, 0, sizeof(*out));
    if (!text || !*text) {
        return fail("", bad, bad_len, why, why_len, "the specification is empty");
    }
    copy = strdup(text);
    if (!copy) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        struct openib_rq *q;

        snprintf(tokcopy, sizeof(tokcopy), "%s", tok);
        if (out->num == OPENIB_MAX_QUEUES) {
            rc = fail(tokcopy, bad, bad_len, why, why_len, "too many queues (at most 8)");
            goto out;
        }
        q = &out->q[out->num];
        if (OPAL_SUCCESS != parse_one(tok, q, &out->ignored, why, why_len)) {
            snprintf(bad, bad_len, "%s", tokcopy);
            rc = OPAL_ERR_BAD_PARAM;
            goto out;
        }
        if (out->num > 0 && q->size <= out->q[out->num - 1].size) {
            rc = fail(tokcopy, bad, bad_len, why, why_len,
                      "buffer sizes must strictly increase from one queue to the next");
            goto out;
        }
        if (q->type == OPENIB_RQ_XRC) {
            have_x = 1;
        } else {
            have_ps = 1;
        }
        if (have_x && have_ps) {
            rc = fail(tokcopy, bad, bad_len, why, why_len,
                      "XRC queues (X) cannot be mixed with P or S queues");
            goto out;
        }
        out->num++;
    }
    if (out->num == 0) {
        rc = fail(text, bad, bad_len, why, why_len, "no queue given");
    }
out:
    free(copy);
    if (rc != OPAL_SUCCESS) {
        out->num = 0;
    }
    return rc;
}

int openib_rq_spec_pick(const struct openib_rq_spec *s, size_t bytes)
{
    int i;

    for (i = 0; i < s->num; ++i) {
        if (bytes <= s->q[i].size) {
            return i;
        }
    }
    return -1;
}

uint32_t openib_rq_spec_hash(const struct openib_rq_spec *s)
{
    /* FNV-1a over the fields that both ends must agree on. */
    uint32_t h = 2166136261u;
    int i;

#define MIX(v) do { uint32_t x_ = (uint32_t) (v); int k_; \
        for (k_ = 0; k_ < 4; ++k_) { h ^= (x_ >> (8 * k_)) & 0xff; h *= 16777619u; } } while (0)
    MIX(s->num);
    for (i = 0; i < s->num; ++i) {
        MIX(s->q[i].type);
        MIX(s->q[i].size);
        if (s->q[i].type == OPENIB_RQ_PP) {
            MIX(s->q[i].count);
        }
    }
#undef MIX
    return h;
}

bool openib_rq_spec_has_shared(const struct openib_rq_spec *rq)
{
    int q;

    for (q = 0; q < rq->num; ++q) {
        if (OPENIB_RQ_PP != rq->q[q].type) {
            return true;
        }
    }
    return false;
}
