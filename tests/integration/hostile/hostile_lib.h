/*
 * hostile_lib.h - what the strangers of the security tests share
 * (openib_hostile.c attacks the TCP side channel, openib_hostile_ud.c the
 * UD one): a seeded random source, process names as ORTE prints them, the
 * one builder of a plausible request, how an answer is told apart, the
 * tally line each mode prints, and the hard stop.
 */
#ifndef OPENIB_HOSTILE_LIB_H
#define OPENIB_HOSTILE_LIB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/oob_wire.h"

/* What a mode sent and how the target answered: "rep" replies that would
 * have handed us a connection (must stay 0), "rej" rejects and "other"
 * frames (strangers get neither), "closed" sessions the target ended,
 * "silent" ones left without an answer. */
struct tally {
    long sent, conns, refused, closed, rep, rej, other, silent, failed;
};

/* The options every stranger takes. */
struct hostile_opts {
    uint8_t name[OOB_ID_LEN];   /* --name: the target rank's process name */
    uint8_t member[OOB_ID_LEN]; /* --member: another member's name, to pose as */
    bool have_name, have_member;
    const char *file;           /* --file: capture output / replay input */
    const char *stop_file;      /* --stop-file: capture stops when it exists */
    int count, secs, timeout_s; /* --count, --secs, --timeout */
    uint64_t seed;              /* --seed */
};

/* Take option a (value v) if it is one of those: false when it is not. */
bool hostile_opt(struct hostile_opts *c, const char *a, const char *v);
/* Once parsed: seed the random source, set the hard stop, and pose as the
 * target's next rank when no --member was given. */
void hostile_start(struct hostile_opts *c);

void hostile_seed(uint64_t seed);
uint64_t rnd(void);
void rnd_fill(void *p, size_t n);
long now_ms(void);
void die(const char *fmt, const char *arg) __attribute__((noreturn));

/* "JOBID.VPID" (decimal, as ORTE prints them) -> the 8 bytes oob carries. */
void parse_name(const char *s, uint8_t out[OOB_ID_LEN]);
void name_vpid_add(uint8_t name[OOB_ID_LEN], uint32_t d);
void name_jobid_add(uint8_t name[OOB_ID_LEN], uint32_t d);

/* A request (or RTU) from src to dst with plausible QP data, sealed with
 * key (a stranger's guess), or with its MAC left zero when key is NULL. */
void build_request(uint8_t frame[OOB_MSG_SIZE], enum oob_type type, const uint8_t *src,
                   const uint8_t *dst, const uint8_t *key);

/* Count a frame the target sent us: a keepalive is no answer; a REP, a
 * REJ, or anything else. */
void hostile_answer(const uint8_t f[OOB_MSG_SIZE], struct tally *t);

void print_tally(const char *mode, const struct tally *t, const char *extra);

/* Sniff IPv4 packets (AF_PACKET: root) for up to secs, or until stop_file
 * exists, into file: one line for each packet that keep() makes one of (a
 * request frame and where it went), up to want lines. Says "hostile:
 * capture: listening" once it listens, and what it caught at the end. */
typedef bool (*hostile_keep_fn)(const uint8_t *ip, size_t len, char *line, size_t cap);
int hostile_capture(const char *file, int want, int secs, const char *stop_file,
                    hostile_keep_fn keep);

/* n bytes as 2n hex digits (out holds 2n + 1), and back (false: not n bytes). */
void hostile_hex(char *out, const uint8_t *b, size_t n);
bool hostile_unhex(const char *hex, uint8_t *b, size_t n);

/* Exit with 124 after timeout_s, whatever the mode is doing: a stranger
 * must never hang a test. */
void hostile_deadline(int timeout_s);

#endif
