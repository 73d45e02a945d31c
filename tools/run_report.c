/*
 * rxpath run's report (see run_report.h): the live line and the summary,
 * text or JSON. Every counter printed here is documented in
 * docs/run.schema.json; the drop reasons are the packet pool's.
 */
#include <stdio.h>
#include <string.h>

#include "rxpath/drop.h"
#include "run_report.h"

/* Every drop of a packet or of a frame a device saw is counted once, by
 * reason, on the packet pool (devices count their frame drops there too). */
uint64_t run_drops_total(const struct totals *t)
{
	uint64_t d = 0;

	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		d += t->pool.drops[r];
	return d;
}

static uint64_t not_for_us(const struct rxp_worker_stats *w)
{
	return w->not_ip + w->icmp + w->icmpv6 + w->ndp + w->tcp + w->other_proto;
}

void run_live_line(const struct totals *t, const struct totals *prev, double el, double dt)
{
	fprintf(stderr,
		"\r%6.1fs %9.0f frames/s %7.2f Gbit/s %8.0f dgram/s %8.0f msg/s drops %llu "
		"pkts %llu pages %llu   ",
		el, (double)(t->w.rx_frames - prev->w.rx_frames) / dt,
		(double)(t->w.rx_bytes - prev->w.rx_bytes) * 8 / dt / 1e9,
		(double)(t->w.datagrams - prev->w.datagrams) / dt,
		(double)(t->w.messages - prev->w.messages) / dt,
		(unsigned long long)run_drops_total(t),
		(unsigned long long)(t->pool.pkts.outstanding +
				     (t->pool.embedded_alloc > t->pool.embedded_free
					      ? t->pool.embedded_alloc - t->pool.embedded_free
					      : 0)),
		(unsigned long long)t->dev.pp_outstanding);
}

/* "N (x/s)" or, with a capture's span, "N (x/s wall, y/s capture time)". */
static void rate(FILE *f, const struct result *r, double n, const char *unit)
{
	if (r->span > 0)
		fprintf(f, "(%.0f%s/s, %.0f%s/s in capture time)", n / r->wall, unit, n / r->span,
			unit);
	else
		fprintf(f, "(%.0f%s/s)", n / r->wall, unit);
}

/* What the ledger says, for the built-in workload (text). */
static void ledger_text(FILE *f, const struct rxp_ledger_tally *a)
{
	fprintf(f,
		"  sent        %llu datagrams, %llu messages, %llu frames; delivered %llu + %llu; "
		"cut at the end %llu\n",
		U(a->datagrams), U(a->messages), U(a->frames), U(a->delivered_datagrams),
		U(a->delivered_messages), U(a->cut));
	fprintf(f, "  lost        %llu:", U(a->lost_total));
	if (a->lost[RXP_DROP_FAULT_INJECT])
		fprintf(f, " injected_loss %llu", U(a->lost[RXP_DROP_FAULT_INJECT]));
	for (unsigned d = 0; d < RXP_DROP_MAX; d++)
		if (a->lost[d] && d != RXP_DROP_FAULT_INJECT)
			fprintf(f, " %s %llu", rxp_drop_reason_name(d), U(a->lost[d]));
	fprintf(f, "\n  unaccounted %llu%s\n", U(a->unaccounted + a->phantom),
		a->unaccounted || a->phantom ? " (a datagram or message vanished or appeared "
					       "without a counted reason: a bug)"
					     : "");
}

void run_summary_text(FILE *f, const struct totals *t, const struct result *r)
{
	fprintf(f, "rxpath run: %.3f s", r->wall);
	if (r->span > 0 || !strcmp(r->input, "pcap"))
		fprintf(f, ", the capture spans %.3f s", r->span);
	fprintf(f, "\n  frames      %llu ", U(t->w.rx_frames));
	rate(f, r, (double)t->w.rx_frames, "");
	fprintf(f, ", %.3f Gbit/s\n", (double)t->w.rx_bytes * 8 / r->wall / 1e9);
	fprintf(f, "  datagrams   %llu ", U(t->w.datagrams));
	rate(f, r, (double)t->w.datagrams, "");
	fprintf(f, ", %llu bytes\n", U(t->w.datagram_bytes));
	fprintf(f, "  messages    %llu ", U(t->w.messages));
	rate(f, r, (double)t->w.messages, "");
	fprintf(f, ", TIPC\n");
	fprintf(f, "  corrupted   %llu%s\n", U(t->corrupted),
		t->unverified ? " (payloads without rxpath's check header are not checked)" : "");
	fprintf(f,
		"  not for us  %llu (not IP %llu of which ARP %llu; ICMP %llu, ICMPv6 %llu, NDP "
		"%llu, TCP %llu, other %llu): counted, not dropped\n",
		U(not_for_us(&t->w)), U(t->w.not_ip), U(t->w.arp), U(t->w.icmp), U(t->w.icmpv6),
		U(t->w.ndp), U(t->w.tcp), U(t->w.other_proto));
	fprintf(f, "  steered     %llu between workers; slept %llu times when idle\n",
		U(t->w.steered_out), U(t->w.sleeps));
	fprintf(f, "  device      rx_no_buffer %llu, zero-length descriptors %llu, dropped %llu\n",
		U(t->dev.rx_no_buffer), U(t->dev.zero_len_descs), U(t->dev.rx_dropped));
	if (t->dev.rx_outgoing)
		fprintf(f,
			"  outgoing    %llu frames the capturing host sent, skipped (a live "
			"AF_PACKET socket does not receive them)\n",
			U(t->dev.rx_outgoing));
	if (t->dev.fault_lost || t->dev.fault_duplicated || t->dev.fault_reordered)
		fprintf(f,
			"  faults      lost %llu, duplicated %llu, reordered %llu (fault "
			"wrapper)\n",
			U(t->dev.fault_lost), U(t->dev.fault_duplicated),
			U(t->dev.fault_reordered));
	fprintf(f, "  page pool   fast %llu, slow %llu, recycled %llu, waived %llu\n",
		U(t->dev.pp_fast), U(t->dev.pp_slow), U(t->dev.pp_recycled), U(t->dev.pp_waived));
	fprintf(f,
		"  reassembly  ReasmReqds %llu ReasmOKs %llu ReasmFails %llu ReasmTimeout %llu "
		"ReasmOverlaps %llu\n",
		U(t->reasm.ReasmReqds), U(t->reasm.ReasmOKs), U(t->reasm.ReasmFails),
		U(t->reasm.ReasmTimeout), U(t->reasm.ReasmOverlaps));
	fprintf(f, "              duplicates %llu evictions %llu mem_high_water %llu\n",
		U(t->reasm.duplicates), U(t->reasm.evictions), U(t->reasm.mem_high_water));
	fprintf(f, "  udp         InDatagrams %llu InCsumErrors %llu", U(t->udp.InDatagrams),
		U(t->udp.InCsumErrors));
	if (t->udp.InCsumOffload || t->udp.InCsumUnchecked || t->udp.csum_auto_off)
		fprintf(f, ", offloaded checksums accepted %llu, unchecked %llu%s",
			U(t->udp.InCsumOffload), U(t->udp.InCsumUnchecked),
			t->udp.csum_auto_off ? " (auto: over 1 in 10 wrong, checking stopped)"
					     : "");
	fputc('\n', f);
	fprintf(f,
		"  tipc        packets %llu bundles %llu bundled %llu fragments %llu "
		"reassembled %llu delivered %llu drops %llu\n",
		U(t->tipc.packets), U(t->tipc.bundles), U(t->tipc.bundled_msgs),
		U(t->tipc.fragments), U(t->tipc.reassembled), U(t->tipc.delivered),
		U(t->tipc.drops));
	if (r->ledger)
		ledger_text(f, &r->acct);
	fprintf(f, "  drops by reason:%s\n", run_drops_total(t) ? "" : " none");
	for (unsigned d = 0; d < RXP_DROP_MAX; d++)
		if (t->pool.drops[d])
			fprintf(f, "    %-28s %llu\n", rxp_drop_reason_name(d),
				U(t->pool.drops[d]));
	fprintf(f, "  outstanding packets %llu, pages %llu\n", U(r->pkts_out), U(r->pages_out));
}

static void ledger_json(FILE *f, const struct rxp_ledger_tally *a);

void run_summary_json(FILE *f, const struct totals *t, const struct result *r)
{
	bool first = true;

	fprintf(f,
		"{\"input\":\"%s\",\"seconds\":%.6f,\"capture_seconds\":%.6f,\"frames\":%llu,"
		"\"rx_bytes\":%llu,\"datagrams\":%llu,\"datagram_bytes\":%llu,\"messages\":%llu,"
		"\"message_bytes\":%llu,\"corrupted\":%llu,\"unverified\":%llu,"
		"\"packets_outstanding\":%llu,\"pages_outstanding\":%llu,",
		r->input, r->wall, r->span, U(t->w.rx_frames), U(t->w.rx_bytes), U(t->w.datagrams),
		U(t->w.datagram_bytes), U(t->w.messages), U(t->w.message_bytes), U(t->corrupted),
		U(t->unverified), U(r->pkts_out), U(r->pages_out));
	fprintf(f,
		"\"not_for_us\":{\"not_ip\":%llu,\"arp\":%llu,\"icmp\":%llu,\"icmpv6\":%llu,"
		"\"ndp\":%llu,\"tcp\":%llu,\"other\":%llu},",
		U(t->w.not_ip), U(t->w.arp), U(t->w.icmp), U(t->w.icmpv6), U(t->w.ndp), U(t->w.tcp),
		U(t->w.other_proto));
	fprintf(f, "\"drops\":{");
	for (unsigned d = 0; d < RXP_DROP_MAX; d++) {
		if (!t->pool.drops[d])
			continue;
		fprintf(f, "%s\"%s\":%llu", first ? "" : ",", rxp_drop_reason_name(d),
			U(t->pool.drops[d]));
		first = false;
	}
	fprintf(f, "},");
	fprintf(f,
		"\"reasm\":{\"ReasmReqds\":%llu,\"ReasmOKs\":%llu,\"ReasmFails\":%llu,"
		"\"ReasmTimeout\":%llu,\"ReasmOverlaps\":%llu,\"evictions\":%llu,"
		"\"duplicates\":%llu,\"policy_overlaps\":%llu,\"invalid\":%llu,"
		"\"mem_drops\":%llu,\"mem_high_water\":%llu},",
		U(t->reasm.ReasmReqds), U(t->reasm.ReasmOKs), U(t->reasm.ReasmFails),
		U(t->reasm.ReasmTimeout), U(t->reasm.ReasmOverlaps), U(t->reasm.evictions),
		U(t->reasm.duplicates), U(t->reasm.policy_overlaps), U(t->reasm.invalid),
		U(t->reasm.mem_drops), U(t->reasm.mem_high_water));
	fprintf(f,
		"\"tipc\":{\"packets\":%llu,\"bundles\":%llu,\"bundled_msgs\":%llu,"
		"\"fragments\":%llu,\"reassembled\":%llu,\"delivered\":%llu,\"drops\":%llu},",
		U(t->tipc.packets), U(t->tipc.bundles), U(t->tipc.bundled_msgs),
		U(t->tipc.fragments), U(t->tipc.reassembled), U(t->tipc.delivered),
		U(t->tipc.drops));
	fprintf(f,
		"\"ip\":{\"InReceives\":%llu,\"InHdrErrors\":%llu,\"InCsumErrors\":%llu,"
		"\"InTruncatedPkts\":%llu,\"InUnknownProtos\":%llu,\"InDelivers\":%llu},",
		U(t->ip4.InReceives + t->ip6.InReceives),
		U(t->ip4.InHdrErrors + t->ip6.InHdrErrors), U(t->ip4.InCsumErrors),
		U(t->ip4.InTruncatedPkts + t->ip6.InTruncatedPkts),
		U(t->ip4.InUnknownProtos + t->ip6.InUnknownProtos),
		U(t->ip4.InDelivers + t->ip6.InDelivers));
	fprintf(f,
		"\"udp\":{\"InDatagrams\":%llu,\"NoPorts\":%llu,\"InErrors\":%llu,"
		"\"InCsumErrors\":%llu,\"InCsumOffload\":%llu,\"InCsumUnchecked\":%llu,"
		"\"csum_auto_off\":%s},",
		U(t->udp.InDatagrams), U(t->udp.NoPorts), U(t->udp.InErrors),
		U(t->udp.InCsumErrors), U(t->udp.InCsumOffload), U(t->udp.InCsumUnchecked),
		t->udp.csum_auto_off ? "true" : "false");
	fprintf(f,
		"\"workers\":{\"steered\":%llu,\"sleeps\":%llu,\"polls\":%llu,"
		"\"tipc_peers_full\":%llu},",
		U(t->w.steered_out), U(t->w.sleeps), U(t->w.polls), U(t->w.tipc_peers_full));
	fprintf(f,
		"\"device\":{\"rx_no_buffer\":%llu,\"rx_dropped\":%llu,\"rx_outgoing\":%llu,"
		"\"zero_len_descs\":%llu,"
		"\"fault_lost\":%llu,\"fault_duplicated\":%llu,\"fault_reordered\":%llu,"
		"\"pp_fast\":%llu,\"pp_slow\":%llu,\"pp_recycled\":%llu}",
		U(t->dev.rx_no_buffer), U(t->dev.rx_dropped), U(t->dev.rx_outgoing),
		U(t->dev.zero_len_descs), U(t->dev.fault_lost), U(t->dev.fault_duplicated),
		U(t->dev.fault_reordered), U(t->dev.pp_fast), U(t->dev.pp_slow),
		U(t->dev.pp_recycled));
	if (r->ledger)
		ledger_json(f, &r->acct);
	fputs("}\n", f);
}

/* The ledger's keys (built-in workload only): inserted before the final
 * "device" object's closing brace by summary_json. */
static void ledger_json(FILE *f, const struct rxp_ledger_tally *a)
{
	fprintf(f,
		",\"sent\":{\"datagrams\":%llu,\"messages\":%llu,\"frames\":%llu},"
		"\"delivered\":{\"datagrams\":%llu,\"messages\":%llu},"
		"\"lost\":{\"injected_loss\":%llu,\"cut_at_end\":%llu",
		U(a->datagrams), U(a->messages), U(a->frames), U(a->delivered_datagrams),
		U(a->delivered_messages), U(a->lost[RXP_DROP_FAULT_INJECT]), U(a->cut));
	for (unsigned d = 0; d < RXP_DROP_MAX; d++)
		if (a->lost[d] && d != RXP_DROP_FAULT_INJECT)
			fprintf(f, ",\"%s\":%llu", rxp_drop_reason_name(d), U(a->lost[d]));
	fprintf(f, "},\"unaccounted\":%llu,\"unidentified_drops\":%llu",
		U(a->unaccounted + a->phantom), U(a->unidentified));
}
