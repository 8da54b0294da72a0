/*
 * btl_openib_pack.h - copying the bytes a convertor describes into a send
 * fragment, correct at every byte position ob1 may leave the convertor at.
 * Device-free (core library), so unit tests drive it with real convertors.
 */
#ifndef BTL_OPENIB_PACK_H
#define BTL_OPENIB_PACK_H

#include <stddef.h>

struct opal_convertor_t;
struct openib_hmem_object;
struct openib_pack_cache;

/*
 * Pack up to *size bytes from the convertor's current position into dst
 * (host memory); *size gets the bytes packed and the convertor stands just
 * after them. Non-contiguous data is packed in whole basic elements, as
 * opal_convertor_pack does (so fewer bytes may come back: ob1 sends what
 * was packed and positions the next fragment there). Contiguous data is
 * one hook copy of exactly the bytes asked for; non-contiguous data is
 * packed by opal_convertor_pack when copying it would be a plain memcpy
 * (openib_hmem_is_plain_host), otherwise it goes through h's copy_from hook
 * as iovecs made right for the position (*cache: cursors that keep that
 * cheap; NULL at first, created on demand, freed by openib_pack_cache_free).
 * Returns OPAL_SUCCESS or a negative OPAL code (nothing was sent; the
 * convertor's position is then unspecified).
 */
int openib_pack(const struct openib_hmem_object *h, struct openib_pack_cache **cache,
                struct opal_convertor_t *conv, void *dst, size_t *size);

/* Free what openib_pack created in *cache (NULL: nothing) and clear it. */
void openib_pack_cache_free(struct openib_pack_cache **cache);

#endif
