/*
 * btl_openib_port_speed.h - a port's data rate, which ob1 reads as the
 * module's btl_bandwidth: it splits a large message across rails (several
 * ports, or openib beside another BTL) in proportion to it.
 */
#ifndef BTL_OPENIB_PORT_SPEED_H
#define BTL_OPENIB_PORT_SPEED_H

#include <stdint.h>

#include <infiniband/verbs.h>

/* The port's data rate in Mb/s (lanes x lane rate after line coding), or 0
 * when it cannot be told from the port's speed and width. */
uint32_t openib_port_bandwidth(const struct ibv_port_attr *pa);

#endif
