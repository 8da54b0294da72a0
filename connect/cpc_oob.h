/*
 * cpc_oob.h - the oob CPC's progress hook (called from the BTL's progress).
 */
#ifndef CPC_OOB_H
#define CPC_OOB_H

/* Handle side-channel messages and timers; cheap when nothing is pending. */
int openib_cpc_oob_progress(void);

#endif
