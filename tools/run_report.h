/*
 * What rxpath run reports (run_report.c): the totals it collects from the
 * workers, device and pool, the live line, and the summary at the end, as
 * text or JSON (docs/run.schema.json).
 */
#ifndef RXPATH_TOOLS_RUN_REPORT_H
#define RXPATH_TOOLS_RUN_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rxpath/worker.h"
#include "rxpath/workload.h"

struct totals {
	struct rxp_worker_stats w;
	struct rxp_ip_stats ip4, ip6;
	struct rxp_udp_stats udp;
	struct rxp_defrag_counters reasm;
	struct rxp_tipc_link_stats tipc;
	struct rxp_dev_stats dev;
	struct rxp_pktpool_stats pool;
	uint64_t corrupted, unverified;
};

struct result {
	double wall; /* seconds of the run */
	double span; /* seconds the capture covers (pcap), else 0 */
	uint64_t pkts_out, pages_out;
	const char *input; /* "workload", "pcap", "iface", "dev" */
	bool ledger; /* acct holds the built-in workload's accounting */
	struct rxp_ledger_tally acct;
};

/* Every drop of a packet or of a frame a device saw, all reasons. */
uint64_t run_drops_total(const struct totals *t);
/* One line on stderr, rates since prev (el: seconds so far, dt: since prev). */
void run_live_line(const struct totals *t, const struct totals *prev, double el, double dt);
void run_summary_text(FILE *f, const struct totals *t, const struct result *r);
void run_summary_json(FILE *f, const struct totals *t, const struct result *r);

#define U(x) ((unsigned long long)(x))

#endif
