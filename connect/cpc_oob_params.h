/*
 * cpc_oob_params.h - the MCA parameters of the oob/xoob side channel
 * (shared by both CPCs): which interfaces it uses and the limits it puts
 * on sessions nobody has vouched for yet.
 */
#ifndef CPC_OOB_PARAMS_H
#define CPC_OOB_PARAMS_H

/* Register btl_openib_oob_* on the BTL component (from the oob CPC's
 * register_params). */
void oob_params_register(void);

/* btl_openib_oob_side_channel: what carries oob's handshakes. A value
 * not among these is said once (help) and is OOB_SIDE_BAD: oob declines. */
enum oob_side { OOB_SIDE_AUTO = 0, OOB_SIDE_UD, OOB_SIDE_TCP, OOB_SIDE_BAD };
int oob_params_side_channel(void);

/* Seconds-based limits, in ms / counts, as the channel uses them. */
int oob_params_idle_ms(void);
int oob_params_per_source(void);

/* Tests: override the values without the MCA system (NULL / <= 0 = keep)
 * and forget the cached interface selection. */
void oob_params_set_if(const char *include, const char *exclude);
void oob_params_set_limits(int idle_ms, int per_source);
void oob_params_set_side_channel(const char *value);
/* Tests: select again (from the MCA values) on the next oob_local_addrs. */
void oob_params_forget(void);

#endif
