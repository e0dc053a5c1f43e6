// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): the scenario table.  The scripts name the
 * scenarios (run-in-guest.sh, run-fault.sh); the words of each usage text
 * before '[' are the arguments it needs.
 */
#include "cm_sys.h"

static const struct hx_scenario scenarios[] = {
	{"rc_async", "<addr> [<client-src>]", cmd_rc_async},
	{"rc_server_disconnect", "<addr> [<client-src>]",
	 cmd_rc_server_disconnect},
	{"page_cross", "<addr> [<client-src>]", cmd_page_cross},
	{"rc_sync", "<addr> [<client-src>]", cmd_rc_sync},
	{"sync_reject", "<addr>", cmd_sync_reject},
	{"reject", "<addr> [<client-src>]", cmd_reject},
	{"reject_ece", "<addr> [<client-src>]", cmd_reject_ece},
	{"srq", "<addr> [<client-src>]", cmd_srq},
	{"timewait", "<addr> [<client-src>]", cmd_timewait},
	{"addr_change", "<addr-on-a-bond> <fail-over-command>",
	 cmd_addr_change},
	{"ud_reject", "<addr> [<client-src>]", cmd_ud_reject},
	{"unreachable", "<silent-peer-addr> <local-src>", cmd_unreachable},
	{"connect_error", "<addr> [<client-src>]", cmd_connect_error},
	{"migrate", "<addr>", cmd_migrate},
	{"libevents", "<addr>", cmd_libevents},
	{"cycles", "<addr> [<N>=200] [<client-src>]", cmd_cycles},
	{"errors", "<addr>", cmd_errors},
	{"ud", "<addr> [<client-src>]", cmd_ud},
	{"mcast", "<addr> <group> [<addr2>]", cmd_mcast},
	{"iwarp_errors", "<addr> <group>", cmd_iwarp_errors},
	{"whichlib", "", cmd_whichlib},
};

int main(int argc, char **argv)
{
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
