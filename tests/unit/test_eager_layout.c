/* Eager-RDMA slot layout: every message a slot can hold ends exactly at the
 * footer, starts 8-byte aligned, never overlaps the footer, and what does
 * not fit is refused; ring offsets wrap; offers are validated. */
#include <stdint.h>

#include "wire/eager_ring.h"
#include "tests/unit/unit.h"

static void check_slot(uint32_t slot_size)
{
    const uint32_t ft = (uint32_t) sizeof(struct openib_eager_footer);
    uint32_t size, fits = 0;

    for (size = 0; size <= slot_size + 16; ++size) {
        int64_t off = openib_eager_msg_offset(slot_size, size);
        if (off < 0) {
            /* refused only when message + pad + footer really do not fit */
            CHECK(openib_eager_padded(size) + ft > slot_size);
            continue;
        }
        fits++;
        CHECK(off % 8 == 0);
        CHECK((uint64_t) off + size <= slot_size - ft);                 /* no overlap */
        CHECK((uint64_t) off + openib_eager_padded(size) + ft == slot_size); /* ends at the end */
    }
    CHECK(fits == slot_size - ft + 1); /* sizes 0 .. slot - footer all fit */
    /* the largest message is slot - footer, the smallest refused one byte more */
    CHECK(openib_eager_msg_offset(slot_size, slot_size - ft) == 0);
    CHECK(openib_eager_msg_offset(slot_size, slot_size - ft + 1) < 0);
}

int main(void)
{
    struct openib_eager_offer o = {
        .version = OPENIB_EAGER_OFFER_VERSION, .size = sizeof(o), .rkey = 7,
        .addr = 0x1000, .slots = 32, .slot_size = 256,
    };
    struct openib_eager_offer bad;

    check_slot(64);
    check_slot(256);
    check_slot(4096);

    /* an 8-byte MPI message behind ob1's 14-byte match header: 40 bytes on the wire */
    CHECK(openib_eager_msg_offset(256, 22) == 256 - 24 - 16);
    CHECK(openib_eager_padded(0) == 0 && openib_eager_padded(1) == 8 && openib_eager_padded(8) == 8);

    /* ring offsets wrap after `slots` messages, including at 2^32 */
    CHECK(openib_eager_slot_offset(32, 256, 0) == 0);
    CHECK(openib_eager_slot_offset(32, 256, 31) == 31 * 256);
    CHECK(openib_eager_slot_offset(32, 256, 32) == 0);
    CHECK(openib_eager_slot_offset(32, 256, UINT32_MAX) == (UINT32_MAX % 32) * 256);

    /* offers */
    CHECK(openib_eager_offer_valid(&o, sizeof(o)));
    CHECK(!openib_eager_offer_valid(&o, sizeof(o) - 1));                /* truncated */
    bad = o; bad.version = 0;             CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    bad = o; bad.size = sizeof(o) - 4;    CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    bad = o; bad.rkey = 0;                CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    bad = o; bad.addr = 0;                CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    bad = o; bad.slots = 1;               CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    bad = o; bad.slots = OPENIB_EAGER_MAX_SLOTS + 1; CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    bad = o; bad.slot_size = 260;         CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    bad = o; bad.slot_size = 32;          CHECK(!openib_eager_offer_valid(&bad, sizeof(bad)));
    /* a newer sender's longer offer is accepted (fields are only appended) */
    bad = o; bad.version = 2;             CHECK(openib_eager_offer_valid(&bad, sizeof(bad) + 8));

    return unit_finish("test_eager_layout");
}
