/*
 * btl_openib_port_speed.h - the figures ob1 weighs a port by: its data
 * rate as the module's btl_bandwidth (ob1 splits a large message across
 * rails, several ports or openib beside another BTL, in proportion to it)
 * and its kind of link as btl_latency (ob1 sends first fragments only on
 * the rails of the lowest latency to a peer).
 */
#ifndef BTL_OPENIB_PORT_SPEED_H
#define BTL_OPENIB_PORT_SPEED_H

#include <stdint.h>

#include <infiniband/verbs.h>

/* The port's data rate in Mb/s (lanes x lane rate after line coding), or 0
 * when it cannot be told from the port's speed and width. */
uint32_t openib_port_bandwidth(const struct ibv_port_attr *pa);

/* The port's small-message latency class in microseconds (ob1's unit, as
 * vader's 1 and tcp's 100) from its transport (IBV_TRANSPORT_*) and link
 * layer (IBV_LINK_LAYER_*), or 0 when neither tells. */
uint32_t openib_port_latency(int transport, uint8_t link_layer);

#endif
