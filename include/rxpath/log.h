/*
 * The library never prints. Anything worth telling a person (a leak report,
 * a device falling back) goes to an optional callback set here.
 */
#ifndef RXPATH_LOG_H
#define RXPATH_LOG_H

#include "rxpath/compiler.h"

RXP_BEGIN_DECLS

enum rxp_log_level { RXP_LOG_ERR, RXP_LOG_WARN, RXP_LOG_INFO, RXP_LOG_DEBUG };

typedef void (*rxp_log_fn)(enum rxp_log_level level, const char *msg, void *arg);

/* Install (or with fn NULL remove) the process-wide log callback. */
void rxp_set_log(rxp_log_fn fn, void *arg);
/* printf-style; a no-op without a callback. */
void rxp_log(enum rxp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

RXP_END_DECLS

#endif
