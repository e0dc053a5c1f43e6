// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The unit test runner: every suite of suites.h in one Check SRunner, each
 * test in a process of its own (Check's fork mode).  One line per test
 * (Check's verbose output) and a summary; the exit status says whether
 * anything failed.
 *
 *   unit_runner                   every suite
 *   unit_runner SUITE [CASE]      one suite, or one test case of it
 *
 * Check's own environment works too: CK_RUN_SUITE, CK_RUN_CASE,
 * CK_VERBOSITY (silent, minimal, normal, verbose), CK_FORK=no.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static const struct {
	const char *flag;
	int (*run)(int argc, char **argv);
} children[] = {
#define UNIT_SUITE(name)
#define UNIT_CHILD(flag, fn) {flag, fn},
#include "suites.h"
#undef UNIT_SUITE
#undef UNIT_CHILD
};

int main(int argc, char **argv)
{
	enum print_output mode = getenv("CK_VERBOSITY") ? CK_ENV : CK_VERBOSE;
	SRunner *sr;
	size_t i;
	int ran, failed;

	for (i = 0; i < sizeof(children) / sizeof(children[0]); i++)
		if (argc >= 2 && !strcmp(argv[1], children[i].flag))
			return children[i].run(argc, argv);
	if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [SUITE [CASE]]\n", argv[0]);
		return 2;
	}
	/* Line-buffered: no half-printed line is copied into a test's fork. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	sr = srunner_create(NULL);
#define UNIT_SUITE(name) srunner_add_suite(sr, name##_suite());
#define UNIT_CHILD(flag, fn)
#include "suites.h"
#undef UNIT_SUITE
#undef UNIT_CHILD
	srunner_run(sr, argc > 1 ? argv[1] : NULL, argc > 2 ? argv[2] : NULL,
		    mode);
	ran = srunner_ntests_run(sr);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (!ran) {
		fprintf(stderr, "%s: no test ran (no such suite or case?)\n",
			argv[0]);
		return EXIT_FAILURE;
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
