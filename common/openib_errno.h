/*
 * openib_errno.h - the component's one error convention and its two
 * edges.
 *
 * Inside the component every function that fails returns an OPAL_* code
 * (opal/constants.h: OPAL_SUCCESS is 0, every error is negative). Two kinds
 * of code around it speak errno instead, and each is converted in exactly
 * one place:
 *
 *   verbs edge   libibverbs returns an errno value, librdmacm and the C
 *                library set errno: openib_err_from_errno(), called right
 *                where the call returns.
 *   ABI edge     the installed HMEM header (openib/openib_hmem.h) and
 *                openib_abi_check_size() (openib/openib_abi.h) return
 *                negative errno values, which plug-ins and applications
 *                compare against: openib_err_to_abi_errno() on the way out,
 *                openib_err_from_errno(-rc) on the way in.
 *
 * The CPC and completion-record ABIs (OPENIB_CPC_*, OPENIB_WC_*) need no
 * conversion: their values are OPAL codes (asserted in
 * openib_errno.c).
 *
 * The two functions share one table: for every errno in it the round trip
 * errno -> OPAL -> errno gives the errno back, so an HMEM result that goes
 * inside and out again is unchanged (tests/unit/test_errno.c).
 */
#ifndef OPENIB_ERRNO_H
#define OPENIB_ERRNO_H

/* errno value (> 0; what ibv_* returns, or errno after a failed call) ->
 * OPAL_* code. 0 -> OPAL_SUCCESS; an errno the table lacks (and anything
 * negative, which is no errno) -> OPAL_ERROR. Never 0 for a non-zero e, so
 * callers that only test "failed?" see the same answer as before. Leaves
 * errno alone. */
int openib_err_from_errno(int e);

/* OPAL_* code -> the negative errno the public ABI returns. Non-negative
 * values (OPAL_SUCCESS, byte counts) pass through unchanged; an OPAL code
 * the table lacks (OPAL_ERROR included) -> -EIO. */
int openib_err_to_abi_errno(int opal);

#endif /* OPENIB_ERRNO_H */
