/*
 * rxpath: the command-line front end. Dispatches to subcommands registered by
 * the tools/cmd_*.c files (see cmd.h); owns only --help and --version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

extern const struct rxp_command __start_rxp_cmds[];
extern const struct rxp_command __stop_rxp_cmds[];

static void usage(FILE *f)
{
	fprintf(f, "usage: rxpath [--help] [--version] <command> [options]\n\n"
		   "The Linux network receive path in userspace: buffers and pools, receive\n"
		   "rings, IPv4/IPv6 reassembly, IP IDs and TIPC, checked against the kernel.\n\n"
		   "commands:\n");
	for (const struct rxp_command *c = __start_rxp_cmds; c < __stop_rxp_cmds; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\n`rxpath <command> --help` describes each command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "rxpath: which command? (see rxpath --help)\n");
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 3) {
			fprintf(stderr, "rxpath: help takes one command\n");
			return 2;
		}
		if (argc > 2) { /* help CMD, --help CMD, -h CMD */
			char *hargv[] = {argv[2], "--help", NULL};

			for (const struct rxp_command *c = __start_rxp_cmds; c < __stop_rxp_cmds;
			     c++)
				if (!strcmp(c->name, argv[2]))
					return c->main(2, hargv);
			fprintf(stderr, "rxpath: unknown command '%s' (see rxpath --help)\n",
				argv[2]);
			return 2;
		}
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		if (argc > 2) {
			fprintf(stderr, "rxpath: unexpected argument '%s' after %s\n", argv[2],
				argv[1]);
			return 2;
		}
		printf("rxpath %s\n", RXP_VERSION);
		return 0;
	}
	for (const struct rxp_command *c = __start_rxp_cmds; c < __stop_rxp_cmds; c++)
		if (!strcmp(c->name, argv[1]))
			return c->main(argc - 1, argv + 1);
	fprintf(stderr, "rxpath: unknown command '%s' (see rxpath --help)\n", argv[1]);
	return 2;
}
