/*
 * What the workload tells the ledger (src/core/ledger.c), and the shape of
 * the workload the ledger knows: the address planes of its producers, their
 * flow counts and their payload sequence spaces. Internal to src/core.
 */
#ifndef RXPATH_CORE_LEDGER_INTERNAL_H
#define RXPATH_CORE_LEDGER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/workload.h"

/* The producers (payload seq = base + number) and their address planes
 * (rxp_gen_config.net; TIPC peers are 10.1.0.(1+i) -> 10.2.0.1). */
enum led_kind { LED_STD, LED_JUMBO, LED_TIPC };
#define LED_STD_BASE 0u
#define LED_JUMBO_BASE (1u << 30)
#define LED_TIPC_BASE (2u << 30)
#define LED_STD_NET 0
#define LED_JUMBO_NET 1
#define LED_STD_FLOWS 64
#define LED_JUMBO_FLOWS 16
#define LED_TIPC_PEERS 4

unsigned rxp_ledger_nqueues(const struct rxp_ledger *l);
/* Does queue q of the ledger's sim NIC keep this frame (its RSS steering)? */
bool rxp_ledger_ours(const struct rxp_ledger *l, unsigned q, const uint8_t *frame, uint32_t len);
/* Queue q emitted a frame of a generator datagram (kind LED_STD or
 * LED_JUMBO): payload seq, flow, IP ID; last: its datagram's last frame. */
void rxp_ledger_sent_udp(struct rxp_ledger *l, unsigned q, enum led_kind kind, uint32_t seq,
			 uint32_t flow, uint32_t id, bool last);
/* Queue q emitted a TIPC frame of peer with IP ID ip_id carrying messages
 * [first, first + n); whole: each of them is now sent whole. */
void rxp_ledger_sent_tipc(struct rxp_ledger *l, unsigned q, unsigned peer, uint16_t ip_id,
			  uint32_t first, uint32_t n, bool whole);
/* A frame that carries no datagram of its own (a duplicate or overlapping
 * twin of a fragment): counted as a frame sent. */
void rxp_ledger_sent_twin(struct rxp_ledger *l, unsigned q);

/* Queue q's hardware side dropped this frame before it became a packet. */
void rxp_ledger_frame_dropped(struct rxp_ledger *l, unsigned q, const uint8_t *frame, uint32_t len,
			      enum rxp_drop_reason reason);

#endif
