/*
 * Subcommand registration: each tools/cmd_*.c declares its command with
 * RXP_COMMAND(); main.c finds them all through a linker section, so adding a
 * subcommand touches no other file.
 */
#ifndef RXPATH_TOOLS_CMD_H
#define RXPATH_TOOLS_CMD_H

struct rxp_command {
	const char *name;
	const char *summary; /* one line for `rxpath --help` */
	int (*main)(int argc, char **argv); /* argv[0] is the command name */
};

#define RXP_COMMAND(ident, cname, csummary, fn)                            \
	static const struct rxp_command rxp_cmd_##ident                    \
		__attribute__((used, section("rxp_cmds"), aligned(8))) = { \
			.name = cname, .summary = csummary, .main = fn}

/* Exit statuses shared by the commands. */
#define RXP_EXIT_OK 0
#define RXP_EXIT_FAIL 1 /* the job ran and found a problem (leak, corruption) */
#define RXP_EXIT_USAGE 2 /* bad option or unreadable input */

#endif
