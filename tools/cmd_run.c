/*
 * rxpath run: the main job. Until the receive pipeline (workers, devices,
 * reassembly) lands, it runs the pool benchmark and says so.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

int rxp_bench_exec(const char *name, int argc, char **argv);

static int run_main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: rxpath run [benchmark options]\n\n"
		       "The receive pipeline is not built yet; for now `rxpath run` runs the\n"
		       "packet-pool benchmark (`rxpath bench pool`) and passes its options on.\n");
		return 0;
	}
	fprintf(stderr, "rxpath run: the receive pipeline is not built yet; "
			"running the pool benchmark (rxpath bench pool) instead\n");
	return rxp_bench_exec("pool", argc - 1, argv + 1);
}

RXP_COMMAND(run, "run", "the main job (for now: the pool benchmark)", run_main);
