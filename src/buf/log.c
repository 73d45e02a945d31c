/*
 * The optional log callback (include/rxpath/log.h). The library reports
 * through it and never writes to stdout or stderr itself.
 */
#include <stdarg.h>
#include <stdio.h>

#include "rxpath/log.h"

static rxp_log_fn log_fn;
static void *log_arg;

void rxp_set_log(rxp_log_fn fn, void *arg)
{
	log_fn = fn;
	log_arg = arg;
}

void rxp_log(enum rxp_log_level level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(level, buf, log_arg);
}
