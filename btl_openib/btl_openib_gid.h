/*
 * btl_openib_gid.h - which GID of an Ethernet (RoCE) port to use.
 *
 * By type, not by position: RoCE v2 (UDP/IP encapsulation) is what routes
 * between hosts, and its IPv4 entry is what rdma_cm addresses. ConnectX-
 * style tables list each address twice, RoCE v1 first, so "the first
 * IPv4-mapped entry" is the v1 one, which only works inside one L2 domain
 * and talks to no v2-only peer. Preference: RoCE v2 IPv4, RoCE v2 IPv6
 * global, RoCE v2 link-local, then RoCE v1; the lowest index among equals.
 *
 * Device-free so the choice is unit-tested on real-looking tables.
 */
#ifndef BTL_OPENIB_GID_H
#define BTL_OPENIB_GID_H

#include <infiniband/verbs.h>

/* How good entry e is for RoCE traffic: 0 (unusable) to 4. */
int openib_gid_rank(const struct ibv_gid_entry *e);

/* The position in entries[0..n) of the best one, or -1 if none is usable. */
int openib_gid_pick(const struct ibv_gid_entry *entries, int n);

#endif
