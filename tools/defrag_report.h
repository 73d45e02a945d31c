/*
 * What happens to each datagram in `rxpath defrag`, from the reassembly
 * table's events (rxp_defrag_config.event_cb): the --report JSON Lines file
 * and the end-of-run summary table in tshark's -z style.
 *
 * --report FILE: one JSON object per line, "event" one of
 *   reassembled    family, src, dst, id, protocol (IPv4), zone (when not 0),
 *                  length (payload bytes), fragments, frames (the fragments'
 *                  frame numbers, as tshark numbers them), first_time_ns,
 *                  last_time_ns
 *   given_up       the same, and reason: timeout, overlap, eviction, memory,
 *                  queue_limit, max_dist, end_of_input, or a drop reason name
 *   overlap        the datagram's identity, frame, off and end (payload
 *                  range received twice), kind: fragment_inconsistency when
 *                  the bytes differ, fragment_overlap when not (Zeek's
 *                  names), dup (wholly inside data already held)
 *   refused        a fragment the table did not take: identity, frame, off,
 *                  end, reason
 *   tiny_fragment  a fragment other than the last with under 64 payload bytes
 *   df_fragment    a fragment with DF set
 *   policy_difference  (--policy all) see defrag_policies.h
 */
#ifndef RXPATH_TOOLS_DEFRAG_REPORT_H
#define RXPATH_TOOLS_DEFRAG_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "rxpath/defrag.h"

struct drep;

/* Datagrams lost, by what lost them (for the loss messages). */
struct drep_losses {
	uint64_t timeout, overlap, evicted, memory, queue_limit, max_dist, end_of_input, other;
	uint64_t refused; /* fragments refused (any reason) */
	uint64_t refused_memory; /* of them, at the memory or queue cap */
};

/* report: the JSON Lines file, or NULL for the counts alone. NULL, errno. */
struct drep *drep_create(FILE *report);
/* The events drep_event needs (rxp_defrag_config.event_mask): a fragment's
 * own (RXP_DEFRAG_EV_FRAG) only for a report, which lists them; the
 * counts take what the table counts. */
uint32_t drep_event_mask(const struct drep *d);
/* The table's counters at the end, for the counts its events do not give
 * (tiny and DF fragments). */
void drep_counters(struct drep *d, const struct rxp_defrag_counters *k);
/* The frame now being fed to the table (its events carry its number). */
void drep_frame(struct drep *d, uint64_t number, uint64_t ts_ns);
/* rxp_defrag_config.event_cb; arg is the struct drep. */
void drep_event(void *arg, const struct rxp_defrag_event *ev);
void drep_losses(const struct drep *d, struct drep_losses *l);
/* The summary table on f. */
void drep_table(const struct drep *d, FILE *f);
/* ,"families":{...},"overlaps":...,"losses":{...} for the JSON summary. */
void drep_json(const struct drep *d, FILE *f);
/* Whether every report line was written (a write error sticks). */
int drep_error(const struct drep *d);
void drep_destroy(struct drep *d);

#endif
