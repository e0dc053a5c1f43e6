// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * /etc/rdma/rsocket/preload_config: which sockets go over RDMA.
 *
 * The format is rdma-core's: one rule per line,
 *     program  domain  type  protocol
 * with '#' starting a comment line and '*' matching anything; domain is
 * INET, INET6 or IB (optionally AF_/PF_ prefixed), type STREAM or DGRAM
 * (optionally SOCK_), protocol TCP or UDP (optionally IPPROTO_), all case
 * blind; a program matches when its short name starts with the rule's.
 * Lines that do not parse are ignored, as rdma-core does, but reported in
 * the debug log.  No file, or a file without rules: every socket the
 * preload can carry is carried.  With rules, a socket is carried only when
 * one matches.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "preload.h"

static struct rsp_rule *rules;
static int nrules;

/* "AF_INET" / "PF_INET" / "INET": the part after an optional prefix. */
static const char *strip(const char *word, const char *const *prefixes)
{
	size_t n;

	for (; *prefixes; prefixes++) {
		n = strlen(*prefixes);
		if (!strncasecmp(word, *prefixes, n))
			return word + n;
	}
	return word;
}

static int parse_domain(const char *w, int *out)
{
	static const char *const pre[] = {"AF_", "PF_", NULL};

	if (!strcmp(w, "*"))
		*out = 0;
	else if (!strcasecmp(strip(w, pre), "INET"))
		*out = AF_INET;
	else if (!strcasecmp(strip(w, pre), "INET6"))
		*out = AF_INET6;
	else if (!strcasecmp(strip(w, pre), "IB"))
		*out = AF_IB;
	else
		return -1;
	return 0;
}

static int parse_type(const char *w, int *out)
{
	static const char *const pre[] = {"SOCK_", NULL};

	if (!strcmp(w, "*"))
		*out = 0;
	else if (!strcasecmp(strip(w, pre), "STREAM"))
		*out = SOCK_STREAM;
	else if (!strcasecmp(strip(w, pre), "DGRAM"))
		*out = SOCK_DGRAM;
	else
		return -1;
	return 0;
}

static int parse_proto(const char *w, int *out)
{
	static const char *const pre[] = {"IPPROTO_", NULL};

	if (!strcmp(w, "*"))
		*out = 0;
	else if (!strcasecmp(strip(w, pre), "TCP"))
		*out = IPPROTO_TCP;
	else if (!strcasecmp(strip(w, pre), "UDP"))
		*out = IPPROTO_UDP;
	else
		return -1;
	return 0;
}

int rsp_parse_rule(const char *line, struct rsp_rule *r)
{
	char prog[64], dom[16], type[16], proto[16];

	memset(r, 0, sizeof(*r));
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line == '#' || *line == '\n' || !*line)
		return 1;
	if (sscanf(line, "%63s %15s %15s %15s", prog, dom, type, proto) != 4 ||
	    parse_domain(dom, &r->domain) || parse_type(type, &r->type) ||
	    parse_proto(proto, &r->protocol))
		return -1;
	if (strcmp(prog, "*"))
		memcpy(r->prog, prog, sizeof(r->prog));
	return 0;
}

int rsp_load_rules(const char *path, struct rsp_rule **out)
{
	struct rsp_rule r, *all = NULL, *grown;
	char line[256];
	int n = 0, lineno = 0, ret;
	FILE *f = fopen(path, "re");

	*out = NULL;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		ret = rsp_parse_rule(line, &r);
		if (ret > 0)
			continue;
		if (ret < 0) {
			rsp_log("%s:%d: ignoring '%.*s'", path, lineno,
				(int)strcspn(line, "\n"), line);
			continue;
		}
		grown = realloc(all, (n + 1) * sizeof(*all));
		if (!grown)
			break;
		all = grown;
		all[n++] = r;
	}
	fclose(f);
	*out = all;
	return n;
}

bool rsp_rules_match(const struct rsp_rule *r, int n, const char *prog,
		     int domain, int type, int protocol)
{
	int i;

	if (!n)
		return true;
	type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!protocol)
		protocol = type == SOCK_STREAM	? IPPROTO_TCP
			   : type == SOCK_DGRAM ? IPPROTO_UDP
						: 0;
	for (i = 0; i < n; i++) {
		if ((!r[i].prog[0] ||
		     !strncasecmp(r[i].prog, prog, strlen(r[i].prog))) &&
		    (!r[i].domain || r[i].domain == domain) &&
		    (!r[i].type || r[i].type == type) &&
		    (!r[i].protocol || r[i].protocol == protocol))
			return true;
	}
	return false;
}

void rsp_read_rules(void)
{
	nrules = rsp_load_rules(RSP_CONF_DIR "/preload_config", &rules);
	if (nrules)
		rsp_log("%d rule(s) from " RSP_CONF_DIR "/preload_config",
			nrules);
}

bool rsp_socket_wanted(int domain, int type, int protocol)
{
	return rsp_rules_match(rules, nrules, program_invocation_short_name,
			       domain, type, protocol);
}
