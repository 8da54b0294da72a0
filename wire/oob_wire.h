/*
 * oob_wire.h - what oob's side channel carries: the oob modex blob, the
 * oob handshake messages, and the channel's own keepalive frames (on every
 * session, xoob's too). Device-free, unit-tested
 * (tests/unit/connect/test_oob_wire.c). Layouts in oob_wire.c; versioning
 * rules for every format in wire/README.md.
 */
#ifndef OPENIB_WIRE_OOB_WIRE_H
#define OPENIB_WIRE_OOB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_auth.h"
#include "wire/wire_refusal.h"

/* Blob 4 adds the UD side channel's QP number and lets the TCP address
 * list be empty (a UD-only process needs no IPv4); 3 carried the process
 * token (cpc_auth.h). Message 2 carries a nonce, the nonce it answers and a
 * MAC. What a reader does with another version: wire/README.md. */
#define OOB_BLOB_VERSION 4
#define OOB_MSG_VERSION 2
#define OOB_ID_LEN 8

/* ---- modex blob ---- */

/* What a port's oob module publishes: where its side channel listens. At
 * least one of TCP (naddr > 0) and UD (ud_qpn != 0). */
struct oob_blob {
    uint8_t token[OPENIB_AUTH_TOKEN_LEN]; /* keys what is sent to this process */
    uint32_t ud_qpn;                      /* UD side channel's QP, 0 = none */
    uint16_t port;                        /* TCP port, 0 when naddr is 0 */
    int naddr;                            /* TCP addresses, 0..OOB_MAX_ADDRS */
    uint32_t addrs[OOB_MAX_ADDRS];        /* IPv4, network order */
};

int oob_blob_encode(uint8_t *buf, size_t cap, const struct oob_blob *b, size_t *len);
/* BAD_PARAM on truncation, counts out of range or neither channel,
 * NOT_SUPPORTED on another version (*version_out says which, when
 * non-NULL). */
int oob_blob_decode(const uint8_t *buf, size_t len, struct oob_blob *b, int *version_out);

/* ---- handshake messages (one channel frame each) ---- */

/* The fields of the envelope that oob's and xoob's messages share (below),
 * as an encoder takes them and a decoder gives them. */
struct oob_envelope {
    uint8_t type;                           /* the CPC's message type */
    uint16_t reason;                        /* a REJ's reject code */
    uint8_t src[OOB_ID_LEN], dst[OOB_ID_LEN];
    uint8_t nonce[OPENIB_AUTH_NONCE_LEN];   /* fresh in every frame */
    uint8_t echo[OPENIB_AUTH_NONCE_LEN];    /* the nonce of the frame it answers */
};

enum oob_type { OOB_REQ = 1, OOB_REP = 2, OOB_RTU = 3, OOB_REJ = 4 };
enum oob_reject {
    OOB_REJ_CROSS = 1,       /* crossing connects: the sender keeps initiating */
    OOB_REJ_NO_ENDPOINT = 2, /* no endpoint for you yet: retry after a back-off */
    OOB_REJ_BAD = 3,         /* refused for good */
    OOB_REJ_LAYOUT = 4,      /* btl_openib_receive_queues differs: refused for good */
};

/* Who keys what (cpc_auth.h): REQ and RTU travel to the responder and are
 * keyed with its token; REP and REJ travel back keyed with the initiator's.
 * Each frame's nonce is fresh; `echo` is the nonce of the frame it answers
 * (REP/REJ: the REQ's, RTU: the REP's; zeros in a REQ), so an answer is good
 * for one handshake only. */
struct oob_msg {
    struct oob_envelope env;         /* env.type: an enum oob_type */
    struct openib_cpc_qp_info q;     /* REQ and REP; zeros otherwise */
};

/* ---- the handshake envelope (oob's and xoob's messages) ---- */

/* Both CPCs' handshake messages are one channel frame each in the same
 * envelope: magic, version, type, reason, source and destination ids, then
 * the CPC's body, then nonce, echo and MAC (layout: oob_wire.c). Only the
 * body is the CPC's own; the checks below read the envelope alone. */
#define OOB_ENVELOPE_BODY_OFF 24  /* the body starts here */
#define OOB_ENVELOPE_BODY_END 128 /* and ends before the nonce */

/* A decoder's first step: BAD_PARAM when env is NULL, or buf is no frame
 * of this magic, is shorter than the envelope or its type is not
 * 1..last_type; NOT_SUPPORTED for this magic with another version. Else
 * *env gets the envelope's fields and *body where the CPC's body starts. */
int oob_envelope_decode(const uint8_t *buf, size_t size, uint32_t magic, uint8_t version,
                        uint8_t last_type, struct oob_envelope *env, const uint8_t **body);
/* An encoder's first step, on a zeroed frame: the envelope's head (all of
 * env but nonce and echo); returns where the body goes. */
uint8_t *oob_envelope_put(uint8_t *buf, uint32_t magic, uint8_t version,
                          const struct oob_envelope *env);
/* Its last: env's nonce and echo, then the MAC keyed with key (the
 * receiver's token). */
void oob_envelope_seal(uint8_t *buf, const struct oob_envelope *env,
                       const uint8_t key[OPENIB_AUTH_TOKEN_LEN]);

/* Encode m (its q only for REQ and REP) and seal it with key (the
 * receiver's token). size must hold a frame (OOB_MSG_SIZE). */
int oob_msg_encode(uint8_t *buf, size_t size, const struct oob_msg *m,
                   const uint8_t key[OPENIB_AUTH_TOKEN_LEN]);
/* Layout only, no MAC check. BAD_PARAM: not an oob message, truncated or
 * malformed; NOT_SUPPORTED: oob's magic with another version. */
int oob_msg_decode(const uint8_t *buf, size_t size, struct oob_msg *out);

/* ---- what a receiver checks, in this order (pure: unit-tested) ---- */

/* The head every channel frame of ours starts with (oob and xoob messages,
 * UD frames): u32 magic and u8 version at p, 5 bytes there. BAD_PARAM for
 * another magic (not this kind of frame), NOT_SUPPORTED for another version
 * of it. */
int oob_frame_check_head(const uint8_t *p, uint32_t magic, uint8_t version);

/* Why a frame was refused: enum openib_refusal (wire_refusal.h). */

/* Is src a process of the job? Of our own job (the jobid half of the
 * name): a vpid below job_size (0 = size unknown: any), never ourselves.
 * A name of another job (MPI_Comm_spawn, connect/accept) cannot be judged
 * by the name: it must prove, with the MAC, that PMIx gave it our modex. */
bool oob_is_member(const uint8_t src[OOB_ID_LEN], const uint8_t self[OOB_ID_LEN],
                   uint32_t job_size);

/* A frame its CPC's decoder took for a message its receiver expects, as
 * the checks below see it: the sealed frame and the envelope's fields the
 * rules read (pointers into the frame). Made by oob_msg_view and
 * xoob_msg_view; for any other frame they give oob_frame_none (no frame),
 * which the checks refuse as malformed. */
struct oob_frame_view {
    const uint8_t *frame;
    const uint8_t *src, *dst, *nonce, *echo;
};
extern const struct oob_frame_view oob_frame_none;

/* The view of buf when the envelope's type is a or b, oob_frame_none
 * otherwise: for the CPCs' view functions, once their decoder has accepted
 * buf. */
struct oob_frame_view oob_envelope_view(const uint8_t *buf, uint8_t a, uint8_t b);

/* What a receiver checks, in this order. A frame on an accepted session
 * (oob: REQ or RTU; xoob: REQ): malformed (no frame), wrong-dst, not-member,
 * bad-mac under own_token, replay ((src, nonce) seen before in replay;
 * remembered only when every earlier check passed). */
enum openib_refusal oob_check_request_frame(struct oob_frame_view f,
                                            const uint8_t self[OOB_ID_LEN], uint32_t job_size,
                                            const uint8_t own_token[OPENIB_AUTH_TOKEN_LEN],
                                            struct openib_auth_replay *replay);
/* An answer on a session we opened (REP or REJ): malformed (no frame),
 * wrong-dst, wrong-src (not peer), bad-mac under own_token, replay (echo is
 * not `asked`, the nonce of our request). */
enum openib_refusal oob_check_answer_frame(struct oob_frame_view f,
                                           const uint8_t self[OOB_ID_LEN],
                                           const uint8_t peer[OOB_ID_LEN],
                                           const uint8_t own_token[OPENIB_AUTH_TOKEN_LEN],
                                           const uint8_t asked[OPENIB_AUTH_NONCE_LEN]);
/* Decodes buf into *out (oob_msg_decode) and views it for those checks
 * when it is an oob message of type a or b; oob_frame_none when not. */
struct oob_frame_view oob_msg_view(const uint8_t *buf, size_t size, enum oob_type a,
                                   enum oob_type b, struct oob_msg *out);

/* The session's source address (network order) among the addresses the
 * claimed sender published? */
enum openib_refusal oob_check_source(const uint32_t *published, int n, uint32_t source);

/* A UD frame's source, from its completion, among what the claimed
 * sender published: its side channel's QP (blob) and its port's GID (when
 * the frame came with a GRH) or LID (modex). */
enum openib_refusal oob_check_ud_source(uint32_t published_qpn, const uint8_t published_gid[16],
                                        uint16_t published_lid, const struct oob_ud_addr *from);

/* ---- UD side-channel frames (cpc_oob_channel_ud.c) ---- */

/* A session over UD is a TCP session's twin: each channel frame goes in
 * one datagram behind this header, numbered, and is sent again until
 * the peer's thread acknowledges it (one frame in flight per session). */
enum oob_ud_kind {
    OOB_UD_OPEN = 1,  /* a new session's first frame (seq 0); dst is OOB_UD_NO_SID */
    OOB_UD_DATA = 2,  /* the session's next frame */
    OOB_UD_ACK = 3,   /* frame `seq` arrived; src names the acknowledging session */
    OOB_UD_CLOSE = 4, /* the sender closed the session (after its last frame was acked) */
    OOB_UD_RESET = 5, /* no such session here (freed, or never was) */
};
#define OOB_UD_NO_SID 0xffffffffu
#define OOB_UD_HDR_LEN 24
#define OOB_UD_FRAME_MAX (OOB_UD_HDR_LEN + OOB_MSG_SIZE)

struct oob_ud_hdr {
    uint8_t kind;     /* enum oob_ud_kind */
    uint32_t src_sid; /* the sender's session handle */
    uint32_t dst_sid; /* the receiver's session handle, or OOB_UD_NO_SID */
    uint32_t seq;     /* OPEN/DATA: this frame's number; ACK: the number acked */
};

/* payload: OOB_MSG_SIZE bytes for OPEN and DATA, NULL for the others. */
int oob_ud_encode(uint8_t *buf, size_t cap, const struct oob_ud_hdr *h, const uint8_t *payload,
                  size_t *len);
/* BAD_PARAM: not a frame of ours (magic, length, kind); NOT_SUPPORTED:
 * another version. *payload points into buf (NULL without one). */
int oob_ud_decode(const uint8_t *buf, size_t len, struct oob_ud_hdr *h, const uint8_t **payload);

/* ---- the channel's keepalive frames ---- */

enum oob_ka_type {
    OOB_KA_PING = 1, /* "are you there?": sent on a session silent for a while */
    OOB_KA_PONG = 2, /* "alive": answered by the peer's side-channel thread */
};

struct oob_ka {
    uint8_t type;
    /* PONG: how many of the session's messages still wait for the
     * answering process to take them (it is not in MPI: busy). */
    uint16_t pending;
};

int oob_ka_encode(uint8_t *buf, size_t size, const struct oob_ka *k);
/* NOT_FOUND: not a keepalive (a CPC's message: pass it on); BAD_PARAM:
 * truncated or unknown type; NOT_SUPPORTED: a keepalive of another version. */
int oob_ka_decode(const uint8_t *buf, size_t size, struct oob_ka *k);

#endif
