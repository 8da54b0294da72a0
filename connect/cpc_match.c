/*
 * cpc_match.c - which CPC a connection uses, computed by each side alone.
 *
 * Rule: among the CPC ids both lists contain, take the one whose priority is
 * highest, where a CPC's priority is the larger of the two sides' values for
 * it; on equal priorities the lower wire id wins. Every step is symmetric in
 * the two lists, so pick(a, b) == pick(b, a) and both ends agree without a
 * message. (The larger of the two values, not the smaller, so that one side
 * raising a priority is enough to steer the choice.)
 */
#include "opal_config.h"
#include "opal/constants.h"

#include "connect/cpc_internal.h"

/* The best priority `list` gives `id`, or -1 when absent. Duplicates should
 * not occur, but taking the maximum keeps the rule symmetric even then. */
static int priority_in(const struct openib_modex_cpc *list, int n, uint8_t id)
{
    int best = -1, i;

    for (i = 0; i < n; ++i) {
        if (list[i].id == id && (int) list[i].priority > best) {
            best = list[i].priority;
        }
    }
    return best;
}

int openib_connect_pick(const struct openib_modex_cpc *a, int na,
                        const struct openib_modex_cpc *b, int nb)
{
    int best_id = -1, best_prio = -1;
    int i;

    if (NULL == a || NULL == b || na <= 0 || nb <= 0) {
        return -1;
    }
    for (i = 0; i < na; ++i) {
        uint8_t id = a[i].id;
        int pa, pb, p;

        if (0 == id) {
            continue; /* 0 is never a CPC */
        }
        pb = priority_in(b, nb, id);
        if (pb < 0) {
            continue;
        }
        pa = priority_in(a, na, id);
        p = pa > pb ? pa : pb;
        if (p > best_prio || (p == best_prio && id < best_id)) {
            best_prio = p;
            best_id = id;
        }
    }
    return best_id;
}

int openib_connect_match(struct openib_cpc_module *const *mods, int nmods,
                         const struct openib_modex_port *peer,
                         struct openib_cpc_module **local,
                         const struct openib_modex_cpc **remote)
{
    struct openib_modex_cpc mine[CPC_MAX_COMPONENTS];
    int n = 0, i, id, peer_n;

    if (NULL == peer || NULL == local || NULL == remote || nmods < 0 ||
        (nmods > 0 && NULL == mods)) {
        return OPAL_ERR_BAD_PARAM;
    }
    *local = NULL;
    *remote = NULL;
    for (i = 0; i < nmods && n < CPC_MAX_COMPONENTS; ++i) {
        if (NULL == mods[i] || NULL == mods[i]->component) {
            continue;
        }
        mine[n].id = mods[i]->component->id;
        mine[n].priority = mods[i]->priority;
        mine[n].blob_len = 0;
        ++n;
    }
    peer_n = peer->num_cpcs < OPENIB_MODEX_MAX_CPCS ? peer->num_cpcs : OPENIB_MODEX_MAX_CPCS;

    if (0 == n || 0 == peer_n) {
        return OPAL_ERR_NOT_FOUND;
    }
    id = openib_connect_pick(mine, n, peer->cpcs, peer_n);
    if (id < 0) {
        return OPAL_ERR_NOT_FOUND;
    }
    /* Our module and the peer's entry for that id (the best-priority one,
     * should either list hold it twice). */
    for (i = 0; i < nmods; ++i) {
        if (NULL != mods[i] && NULL != mods[i]->component && mods[i]->component->id == id &&
            (NULL == *local || mods[i]->priority > (*local)->priority)) {
            *local = mods[i];
        }
    }
    for (i = 0; i < peer_n; ++i) {
        if (peer->cpcs[i].id == id &&
            (NULL == *remote || peer->cpcs[i].priority > (*remote)->priority)) {
            *remote = &peer->cpcs[i];
        }
    }
    return OPAL_SUCCESS;
}
