/*
 * The link types rxpath reads (rxp_decap_link), as the fuzz targets that
 * take one per input choose them: an input byte below FZ_NLT picks one,
 * other bytes stand for themselves (gen_frame_corpus.py keeps this order).
 */
#ifndef RXP_FZ_LINKTYPES_H
#define RXP_FZ_LINKTYPES_H

#include <stdint.h>

#include "rxpath/decap.h"

static const uint32_t fz_linktypes[] = {
	RXP_LINKTYPE_ETHERNET, RXP_LINKTYPE_LINUX_SLL,	RXP_LINKTYPE_LINUX_SLL2,
	RXP_LINKTYPE_NULL,     RXP_LINKTYPE_LOOP,	RXP_LINKTYPE_PPP,
	RXP_LINKTYPE_PPP_HDLC, RXP_LINKTYPE_PPP_ETHER,	RXP_LINKTYPE_C_HDLC,
	RXP_LINKTYPE_RAW,      RXP_LINKTYPE_IPV4,	RXP_LINKTYPE_IPV6,
	RXP_LINKTYPE_NFLOG,    RXP_LINKTYPE_IEEE802_11, RXP_LINKTYPE_IEEE802_11_RADIOTAP,
};
#define FZ_NLT (sizeof(fz_linktypes) / sizeof(fz_linktypes[0]))

#endif
