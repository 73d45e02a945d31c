/* Names of the drop reasons (include/rxpath/drop.h). */
#include "rxpath/drop.h"

static const char *const names[RXP_DROP_MAX] = {
#define RXP_DROP_NAME(name, str) [RXP_DROP_##name] = str,
	RXP_DROP_REASONS(RXP_DROP_NAME)
#undef RXP_DROP_NAME
};

const char *rxp_drop_reason_name(unsigned reason)
{
	return reason < RXP_DROP_MAX ? names[reason] : "?";
}
