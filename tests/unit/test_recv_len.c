/*
 * test_recv_len.c - the receive length check (wire/data_hdr.h): a receive
 * shorter than openib's header has no payload length (it is dropped, never
 * handed to the PML), and no length wraps around.
 */
#include <stdint.h>

#include "wire/data_hdr.h"
#include "tests/unit/unit.h"

int main(void)
{
    uint32_t len;

    for (len = 0; len < sizeof(struct openib_hdr); ++len) {
        CHECK(-1 == openib_recv_payload_len(len));
    }
    CHECK(0 == openib_recv_payload_len(8));
    CHECK(1 == openib_recv_payload_len(9));
    CHECK(4096 - 8 == openib_recv_payload_len(4096));
    CHECK((int64_t) UINT32_MAX - 8 == openib_recv_payload_len(UINT32_MAX));
    return unit_finish("test_recv_len");
}
