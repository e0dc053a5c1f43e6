// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The address file: the name/IP -> GID table ibacm preloads, in its
 * format, so files administrators already distribute work unchanged.
 *
 *   # comment (also after an entry)
 *   <address> <GID> [<QPN>]
 *
 * where <address> is a host name, an IPv4 or an IPv6 address, <GID> is
 * written like an IPv6 address, and <QPN> (decimal or 0x-hex, at most 24
 * bits) is optional and otherwise unused here.  Fields are separated by
 * blanks.  A malformed line is skipped and counted, never fatal.  Names
 * match case-insensitively; the first entry for an address wins.  Entries
 * are hashed, so a file of n lines loads in O(n).
 *
 * The file is untrusted input as far as parsing goes (the parser is
 * fuzzed); a file that anyone may write is not used at all.
 */
#include <config.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acm.h"
#include "cm/cma.h"
#include "util/env.h"
#include "util/fork_fresh.h"

#define ACM_TABLE_DEFAULT_PATH "/etc/rdma/ibacm_hosts.data"
#define ACM_TABLE_MAX_BYTES (16u << 20)
#define ACM_TABLE_MAX_ENTRIES (1u << 20)
#define ACM_TOKEN_MAX 64 /* longest accepted field, NUL included */

/* --- parsing (pure) ------------------------------------------------------- */

static bool acm_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool acm_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

/*
 * Split one line (without its newline, comment already cut) into at most
 * @max fields.  Returns the number of fields, or -1 if there are more or
 * one is too long or holds a NUL byte.
 */
static int acm_split(const char *line, size_t len, char fields[][ACM_TOKEN_MAX],
		     int max)
{
	size_t i = 0, start;
	int n = 0;

	for (;;) {
		while (i < len && acm_is_blank(line[i]))
			i++;
		if (i == len)
			return n;
		if (n == max)
			return -1;
		start = i;
		while (i < len && !acm_is_blank(line[i])) {
			if (!line[i])
				return -1;
			i++;
		}
		if (i - start >= ACM_TOKEN_MAX)
			return -1;
		memcpy(fields[n], line + start, i - start);
		fields[n][i - start] = '\0';
		n++;
	}
}

/* An address field: IPv4, IPv6, or a host name.  0 or -1. */
static int acm_parse_addr(const char *s, struct cma_acm_ep *ep)
{
	size_t i, len = strlen(s);

	memset(ep, 0, sizeof(*ep));
	if (inet_pton(AF_INET, s, ep->ip4) == 1) {
		ep->type = CMA_ACM_EP_IP4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, ep->ip6) == 1) {
		ep->type = CMA_ACM_EP_IP6;
		return 0;
	}
	if (!len || len >= CMA_ACM_NAME_MAX)
		return -1;
	for (i = 0; i < len; i++) {
		if (!acm_name_char(s[i]))
			return -1;
		ep->name[i] = (char)tolower((unsigned char)s[i]);
	}
	ep->type = CMA_ACM_EP_NAME;
	return 0;
}

static int acm_parse_qpn(const char *s, uint32_t *qpn)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v > 0xffffff)
		return -1;
	*qpn = (uint32_t)v;
	return 0;
}

/* One line into @e.  1: an entry, 0: nothing on it, -1: malformed. */
static int acm_parse_line(const char *line, size_t len,
			  struct cma_acm_table_entry *e)
{
	char fields[3][ACM_TOKEN_MAX];
	const char *hash = memchr(line, '#', len);
	int n;

	if (hash)
		len = (size_t)(hash - line);
	n = acm_split(line, len, fields, 3);
	if (n <= 0)
		return n;
	if (n < 2)
		return -1;
	memset(e, 0, sizeof(*e));
	if (acm_parse_addr(fields[0], &e->addr))
		return -1;
	if (inet_pton(AF_INET6, fields[1], e->gid.raw) != 1)
		return -1;
	if (n == 3 && acm_parse_qpn(fields[2], &e->qpn))
		return -1;
	return 1;
}

/* --- the table and its hash index ----------------------------------------- */

static bool acm_ep_equal(const struct cma_acm_ep *a, const struct cma_acm_ep *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case CMA_ACM_EP_NAME:
		return !strncasecmp(a->name, b->name, CMA_ACM_NAME_MAX);
	case CMA_ACM_EP_IP4:
		return !memcmp(a->ip4, b->ip4, 4);
	case CMA_ACM_EP_IP6:
		return !memcmp(a->ip6, b->ip6, 16);
	}
	return false;
}

/* FNV-1a over the type and the address; names folded to lower case. */
static uint32_t acm_ep_hash(const struct cma_acm_ep *ep)
{
	uint32_t h = (2166136261u ^ ep->type) * 16777619u;
	const uint8_t *p = NULL;
	size_t i, n = 0;

	switch (ep->type) {
	case CMA_ACM_EP_NAME:
		for (i = 0; i < CMA_ACM_NAME_MAX && ep->name[i]; i++)
			h = (h ^ (uint8_t)tolower((unsigned char)ep->name[i])) *
			    16777619u;
		return h;
	case CMA_ACM_EP_IP4:
		p = ep->ip4;
		n = 4;
		break;
	case CMA_ACM_EP_IP6:
		p = ep->ip6;
		n = 16;
		break;
	}
	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* The slot holding @ep's entry, or the empty slot where it would go. */
static uint32_t *acm_table_slot(const struct cma_acm_table *t,
				const struct cma_acm_ep *ep, size_t *probes)
{
	size_t mask = t->nslots - 1, i = acm_ep_hash(ep) & mask;

	while (t->slots[i]) {
		++*probes;
		if (acm_ep_equal(&t->entries[t->slots[i] - 1].addr, ep))
			break;
		i = (i + 1) & mask;
	}
	return &t->slots[i];
}

/* Keep the index at most half full: twice the slots, every entry again. */
static int acm_table_grow_index(struct cma_acm_table *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 32, i, probes = 0;
	uint32_t *old = t->slots;

	t->slots = calloc(n, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -1;
	}
	t->nslots = n;
	for (i = 0; i < t->count; i++)
		*acm_table_slot(t, &t->entries[i].addr, &probes) =
			(uint32_t)i + 1;
	free(old);
	return 0;
}

static int acm_table_add(struct cma_acm_table *t, size_t *cap,
			 const struct cma_acm_table_entry *e)
{
	struct cma_acm_table_entry *grown;
	size_t ncap;

	if (t->count == *cap) {
		ncap = *cap ? *cap * 2 : 16;
		grown = realloc(t->entries, ncap * sizeof(*grown));
		if (!grown)
			return -1;
		t->entries = grown;
		*cap = ncap;
	}
	if ((t->count + 1) * 2 > t->nslots && acm_table_grow_index(t))
		return -1;
	t->entries[t->count] = *e;
	*acm_table_slot(t, &e->addr, &t->probes) = (uint32_t)++t->count;
	return 0;
}

/* @ep's entry through the hash index, adding comparisons to @probes. */
static const struct cma_acm_table_entry *
acm_table_get(const struct cma_acm_table *t, const struct cma_acm_ep *ep,
	      size_t *probes)
{
	uint32_t *slot;

	if (!t->nslots)
		return NULL;
	slot = acm_table_slot(t, ep, probes);
	return *slot ? &t->entries[*slot - 1] : NULL;
}

int cma_acm_table_parse(const char *buf, size_t len, struct cma_acm_table *t)
{
	struct cma_acm_table_entry e;
	size_t pos = 0, cap = 0, line_len;
	const char *nl;
	int ret;

	memset(t, 0, sizeof(*t));
	while (pos < len) {
		nl = memchr(buf + pos, '\n', len - pos);
		line_len = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		ret = acm_parse_line(buf + pos, line_len, &e);
		pos += line_len + (nl ? 1 : 0);
		if (ret < 0) {
			t->bad_lines++;
			continue;
		}
		if (!ret || acm_table_get(t, &e.addr, &t->probes))
			continue; /* empty, or a later duplicate */
		if (t->count == ACM_TABLE_MAX_ENTRIES) {
			t->bad_lines++;
			continue;
		}
		if (acm_table_add(t, &cap, &e)) {
			cma_acm_table_clear(t);
			return cma_err(ENOMEM);
		}
	}
	return 0;
}

void cma_acm_table_clear(struct cma_acm_table *t)
{
	free(t->entries);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

const struct cma_acm_table_entry *
cma_acm_table_find(const struct cma_acm_table *t, const struct cma_acm_ep *ep)
{
	size_t probes = 0;

	return acm_table_get(t, ep, &probes);
}

/* --- the process's table ---------------------------------------------------- */

/*
 * A leaf held across fork (util/fork_fresh.h): its holders read a regular
 * file and allocate, nothing more; what they would log is logged after
 * it is dropped (the log may be a pipe that blocks).
 */
CMA_LEAF_MUTEX(acm_table_lock)
static struct cma_acm_table acm_table;
static struct stat acm_table_stat; /* of the file loaded; st_ino 0: none */

/* A line for the ACM log, written once acm_table_lock is dropped. */
struct acm_table_note {
	char line[256];
};

__attribute__((format(printf, 2, 3))) static void
acm_table_note(struct acm_table_note *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(n->line, sizeof(n->line), fmt, ap);
	va_end(ap);
}

static const char *acm_table_path(void)
{
	const char *p = cma_env("RDMA_CM_ACM_HOSTS");

	return p ? p : ACM_TABLE_DEFAULT_PATH;
}

static bool acm_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Read a whole regular file of at most ACM_TABLE_MAX_BYTES. NULL/errno. */
static char *acm_read_file(int fd, size_t size)
{
	size_t got = 0;
	ssize_t n;
	char *buf;

	buf = malloc(size ? size : 1);
	if (!buf)
		return NULL;
	while (got < size) {
		n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shrank meanwhile: parse what is there */
		got += (size_t)n;
	}
	if (got < size)
		memset(buf + got, '\n', size - got);
	return buf;
}

static void acm_table_load(const char *path, const struct stat *st, int fd,
			   struct acm_table_note *note)
{
	struct cma_acm_table t;
	char *buf;

	cma_acm_table_clear(&acm_table);
	acm_table_stat = *st;
	if (!S_ISREG(st->st_mode) || st->st_size > ACM_TABLE_MAX_BYTES) {
		acm_table_note(
			note,
			"table %s: not a regular file of at most %u bytes",
			path, ACM_TABLE_MAX_BYTES);
		return;
	}
	if (st->st_mode & S_IWOTH) {
		acm_table_note(note, "table %s: writable by anyone, not used",
			       path);
		return;
	}
	buf = acm_read_file(fd, (size_t)st->st_size);
	if (!buf || cma_acm_table_parse(buf, (size_t)st->st_size, &t)) {
		free(buf);
		acm_table_note(note, "table %s: out of memory", path);
		return;
	}
	free(buf);
	acm_table = t;
	acm_table_note(note,
		       "table %s: %zu entries, %zu malformed lines skipped",
		       path, t.count, t.bad_lines);
}

/* Make acm_table match the file (absent file: empty table).  Locked. */
static void acm_table_refresh(struct acm_table_note *note)
{
	const char *path = acm_table_path();
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (acm_table_stat.st_ino || acm_table.count)
			acm_table_note(note, "table %s: %m; table dropped",
				       path);
		cma_acm_table_clear(&acm_table);
		memset(&acm_table_stat, 0, sizeof(acm_table_stat));
		return;
	}
	if (!fstat(fd, &st) && !acm_same_file(&st, &acm_table_stat))
		acm_table_load(path, &st, fd, note);
	close(fd);
}

/*
 * An IP address without a line of its own is still known when a name's
 * GID is that address's RoCE GID (v4-mapped for IPv4): a name the table
 * resolved leads to this lookup next, for its address.
 */
static const struct cma_acm_table_entry *
acm_table_find_by_ip_gid(const struct cma_acm_table *t,
			 const struct cma_acm_ep *ep)
{
	union ibv_gid gid;
	size_t i;

	memset(&gid, 0, sizeof(gid));
	if (ep->type == CMA_ACM_EP_IP4) {
		gid.raw[10] = 0xff;
		gid.raw[11] = 0xff;
		memcpy(gid.raw + 12, ep->ip4, 4);
	} else if (ep->type == CMA_ACM_EP_IP6) {
		memcpy(gid.raw, ep->ip6, 16);
	} else {
		return NULL;
	}
	for (i = 0; i < t->count; i++)
		if (!memcmp(&t->entries[i].gid, &gid, sizeof(gid)))
			return &t->entries[i];
	return NULL;
}

int cma_acm_table_lookup(const struct cma_acm_ep *ep, union ibv_gid *gid)
{
	struct acm_table_note note = {""};
	const struct cma_acm_table_entry *e;
	int ret = -1;

	pthread_mutex_lock(&acm_table_lock);
	acm_table_refresh(&note);
	e = cma_acm_table_find(&acm_table, ep);
	if (!e)
		e = acm_table_find_by_ip_gid(&acm_table, ep);
	if (e) {
		*gid = e->gid;
		ret = 0;
	}
	pthread_mutex_unlock(&acm_table_lock);
	if (note.line[0])
		cma_acm_log("%s", note.line);
	return ret ? cma_err(ENODATA) : 0;
}

void cma_acm_table_forget(void)
{
	pthread_mutex_lock(&acm_table_lock);
	cma_acm_table_clear(&acm_table);
	memset(&acm_table_stat, 0, sizeof(acm_table_stat));
	pthread_mutex_unlock(&acm_table_lock);
}
