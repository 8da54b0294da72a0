/*
 * btl_openib_release_log.h - a log of the address ranges the process gave
 * back to the kernel (munmap, madvise(DONTNEED), brk), written from Open
 * MPI's memory hooks in whatever thread frees memory, read by the
 * registration path under openib_lock.
 *
 * Why openib keeps one: Open MPI 4.1's grdma invalidates a cached
 * registration from the memory hook of the thread that frees the memory,
 * while other threads use the cache. Its interval tree rotates nodes in
 * place under readers, and a cache hit clears a registration's flag word
 * with a plain read-modify-write. Either can lose the invalidation. The
 * registration then stays cached, pinning the pages the range had before.
 * A later buffer at the same addresses hits it, and the NIC reads or writes
 * the old pages: wrong bytes and no error. t-nodes-openib-threads caught
 * this with mt_stress. btl_openib_reg.c replays this log into the cache,
 * under the lock that serializes every use of the cache, before each
 * lookup (openib_reg_catch_up).
 *
 * Producers never block and never allocate (the hook may run inside
 * malloc). The log is a ring. A reader that fell more than the ring's
 * length behind cannot know what it missed, and is told to invalidate
 * everything.
 */
#ifndef BTL_OPENIB_RELEASE_LOG_H
#define BTL_OPENIB_RELEASE_LOG_H

#include <stddef.h>
#include <stdint.h>

/* entries the ring holds; a reader this far behind starts over */
#define OPENIB_RELEASE_LOG_LEN 4096

/* A reader's place in the log: the next entry it has not replayed. */
struct openib_release_cursor {
    uint64_t next;
};

/* The range a replay reports when the reader lost entries: all memory. */
#define OPENIB_RELEASE_ALL_BASE ((uintptr_t) 0)
#define OPENIB_RELEASE_ALL_LEN SIZE_MAX

/* Note a released range (any thread, any context, lock-free). The same as
 * a claim, then a fill of the entry claimed. */
void openib_release_log_note(const void *base, size_t len);
uint64_t openib_release_log_claim(void);
void openib_release_log_fill(uint64_t entry, const void *base, size_t len);
/* entries claimed so far (for tests) */
uint64_t openib_release_log_claim_count(void);

/* A cursor that sees only what is noted from now on. */
void openib_release_cursor_init(struct openib_release_cursor *c);

/* Call FN for each range noted since C's last replay, oldest first, or once
 * with OPENIB_RELEASE_ALL_* when some were overwritten before this reader
 * saw them. An entry still being written is passed over: its range is not
 * unmapped yet (the hook runs before the unmap), so nothing can be using
 * it. The next replay reports it, and the entries after it again. One
 * reader per cursor at a time. Returns the number of calls made. */
int openib_release_log_replay(struct openib_release_cursor *c,
                              void (*fn)(void *ctx, uintptr_t base, size_t len), void *ctx);

#endif
