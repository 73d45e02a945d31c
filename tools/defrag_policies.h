/*
 * rxpath defrag --policy all: every frame also goes through one table per
 * target-based overlap policy (first, last, bsd, bsd-right, linux, windows,
 * solaris) beside the strict one that writes OUT, and the datagrams whose
 * bytes differ between policies are reported, naming which targets would
 * see which payload (the evasion check of Novak's "Target-Based Fragmentation
 * Reassembly").
 */
#ifndef RXPATH_TOOLS_DEFRAG_POLICIES_H
#define RXPATH_TOOLS_DEFRAG_POLICIES_H

#include <stdint.h>
#include <stdio.h>

#include "defrag_frame.h"
#include "defrag_io.h"
#include "rxpath/defrag.h"

struct dpol;

/* Tables like base (its policy and hooks aside) on pool pp. NULL, errno set. */
struct dpol *dpol_create(const struct rxp_defrag_config *base, struct rxp_pktpool *pp);
/* Feed frame r to every policy's table at clock now; main is what the strict
 * table made of it (NULL: no datagram). Differences go to out as lines
 * ("rxpath defrag: ...", at most 50, then a count) and, when report is not
 * NULL, as JSON Lines objects {"event":"policy_difference",...}. */
void dpol_frame(struct dpol *p, const struct dio_rec *r, const struct dfr_frame *fr, uint64_t now,
		const struct dfr_out *main, FILE *out, FILE *report);
uint64_t dpol_differences(const struct dpol *p);
/* Destroys the tables first, then their frame layers. */
void dpol_destroy(struct dpol *p);

#endif
