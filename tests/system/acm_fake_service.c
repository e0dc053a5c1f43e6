// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A stand-in ibacm service for the VM tests (ibacm itself refuses RoCE
 * ports): it speaks the client protocol on a Unix socket and answers a
 * resolve request with a RoCE path record between the IPv4/IPv6 source and
 * destination (their GIDs are the addresses themselves), or for a name
 * given on the command line as name=address.  Every request is logged on
 * stdout as "request <dst> from <src>: answered|refused".
 *
 *   acm_fake_service SOCKET MTU_CODE [name=address ...]
 *
 * MTU_CODE "hang" makes a hung service: it reads each request, logs it as
 * "held", and never answers nor closes the connection.
 *
 * It serves until killed.  Test-only: it trusts its input more than the
 * library does.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "acm/acm.h"

static char **names;
static int num_names;
static int mtu_code;
static bool hang;

static void ip_to_gid(uint16_t type, const uint8_t *addr, uint8_t *gid)
{
	memset(gid, 0, 16);
	if (type == CMA_ACM_INFO_IP) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, addr, 4);
	} else {
		memcpy(gid, addr, 16);
	}
}

/* The GID of a name=address argument.  0 or -1. */
static int name_to_gid(const char *name, uint8_t *gid)
{
	uint8_t a[16];
	size_t len = strlen(name);
	int i;

	for (i = 0; i < num_names; i++) {
		if (strncmp(names[i], name, len) || names[i][len] != '=')
			continue;
		if (inet_pton(AF_INET, names[i] + len + 1, a) == 1)
			ip_to_gid(CMA_ACM_INFO_IP, a, gid);
		else if (inet_pton(AF_INET6, names[i] + len + 1, a) == 1)
			ip_to_gid(CMA_ACM_INFO_IP6, a, gid);
		else
			return -1;
		return 0;
	}
	return -1;
}

/* The source the kernel would use towards @dgid (an IPv4-mapped GID). */
static int source_for(const uint8_t *dgid, uint8_t *sgid)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(9)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM, 0), ret;

	memcpy(&sin.sin_addr, dgid + 12, 4);
	ret = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	      getsockname(fd, (struct sockaddr *)&sin, &len);
	close(fd);
	if (ret)
		return -1;
	ip_to_gid(CMA_ACM_INFO_IP, (uint8_t *)&sin.sin_addr, sgid);
	return 0;
}

static int answer(uint8_t *msg, size_t *len)
{
	struct cma_acm_wire_hdr hdr;
	struct cma_acm_wire_ep ep, path;
	uint8_t sgid[16] = {0}, dgid[16] = {0};
	bool have_src = false, have_dst = false;
	size_t off;

	memcpy(&hdr, msg, sizeof(hdr));
	for (off = CMA_ACM_HDR_LEN; off < *len; off += CMA_ACM_EP_LEN) {
		memcpy(&ep, msg + off, sizeof(ep));
		if (ep.type == CMA_ACM_INFO_NAME &&
		    (ep.flags & CMA_ACM_FLAG_DEST)) {
			ep.info.name[63] = '\0';
			have_dst = !name_to_gid(ep.info.name, dgid);
		} else if (ep.type == CMA_ACM_INFO_IP ||
			   ep.type == CMA_ACM_INFO_IP6) {
			if (ep.flags & CMA_ACM_FLAG_SOURCE) {
				ip_to_gid(ep.type, ep.info.addr, sgid);
				have_src = true;
			} else {
				ip_to_gid(ep.type, ep.info.addr, dgid);
				have_dst = true;
			}
		}
	}
	if (have_dst && !have_src)
		have_src = !source_for(dgid, sgid);
	hdr.opcode |= CMA_ACM_OP_ACK;
	if (!have_dst || !have_src || *len + CMA_ACM_EP_LEN > CMA_ACM_MSG_MAX) {
		hdr.status = 3;
		memcpy(msg, &hdr, sizeof(hdr));
		return -1;
	}
	memset(&path, 0, sizeof(path));
	path.type = CMA_ACM_INFO_PATH;
	path.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
		     IBV_PATH_FLAG_BIDIRECTIONAL;
	memcpy(path.info.path.sgid.raw, sgid, 16);
	memcpy(path.info.path.dgid.raw, dgid, 16);
	path.info.path.pkey = htobe16(0xffff);
	path.info.path.flowlabel_hoplimit = htobe32(64);
	path.info.path.reversible_numpath = 0x81;
	path.info.path.mtu = (2 << 6) | mtu_code;
	path.info.path.rate = (2 << 6) | 3;
	path.info.path.packetlifetime = (2 << 6) | 16;
	memcpy(msg + *len, &path, sizeof(path));
	*len += sizeof(path);
	hdr.length = (uint16_t)*len;
	memcpy(msg, &hdr, sizeof(hdr));
	return 0;
}

/* Answer one request; false when the connection is to be held open. */
static bool serve(int fd)
{
	uint8_t msg[CMA_ACM_MSG_MAX + CMA_ACM_EP_LEN];
	struct cma_acm_wire_hdr hdr;
	size_t got = 0;
	ssize_t n;
	int ret;

	while (got < CMA_ACM_HDR_LEN ||
	       got < ((struct cma_acm_wire_hdr *)msg)->length) {
		n = read(fd, msg + got, sizeof(msg) - got);
		if (n <= 0)
			return true;
		got += (size_t)n;
		memcpy(&hdr, msg, sizeof(hdr));
		if (got >= CMA_ACM_HDR_LEN && hdr.length > CMA_ACM_MSG_MAX)
			return true;
	}
	if (hang) {
		printf("request of %zu bytes: held\n", got);
		fflush(stdout);
		return false;
	}
	ret = answer(msg, &got);
	memcpy(&hdr, msg, sizeof(hdr));
	printf("request of %zu bytes: %s\n", got, ret ? "refused" : "answered");
	fflush(stdout);
	if (write(fd, msg, hdr.length ? hdr.length : got) < 0)
		perror("write");
	return true;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int lfd, fd;

	if (argc < 3 || strlen(argv[1]) >= sizeof(sun.sun_path)) {
		fprintf(stderr,
			"usage: %s SOCKET MTU_CODE [name=address ...]\n",
			argv[0]);
		return 2;
	}
	hang = !strcmp(argv[2], "hang");
	mtu_code = atoi(argv[2]);
	names = argv + 3;
	num_names = argc - 3;
	strcpy(sun.sun_path, argv[1]);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(lfd, 16)) {
		perror(argv[1]);
		return 1;
	}
	printf("listening on %s\n", argv[1]);
	fflush(stdout);
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (serve(fd))
			close(fd);
	}
}
