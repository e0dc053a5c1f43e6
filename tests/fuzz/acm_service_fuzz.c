// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/acm/acm_sa.c
/*
 * How the library finds and reads the ibacm service, beyond the answer
 * parser the acm_msg target covers: the RDMA_CM_ACM_SERVICE string, the
 * port file ibacm writes (/run/ibacm.port, here a file of this target's),
 * and the framing of an answer read from the service's socket (the
 * header's length, then that many bytes), followed by its parse.
 *
 * Input: byte 0 picks the mode (mod 3) and, for the port file, its mode
 * bits (bit 2: writable by others, which must be refused); the rest is
 * the RDMA_CM_ACM_SERVICE value, the port file's content, or what the
 * service sends (then its end of the connection closes).
 */
#include <config.h>

#include <stdio.h>
#include <sys/socket.h>

static char fuzz_port_file[64], fuzz_unix_path[64];
#define ACM_PORT_FILE fuzz_port_file
#define ACM_UNIX_PATH fuzz_unix_path
#include "../../src/acm/acm_service.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void cma_acm_log(const char *fmt, ...)
{
	(void)fmt;
}

unsigned int cma_acm_service_timeout_ms(void)
{
	return 1000;
}

unsigned int cma_acm_sa_timeout_ms(void)
{
	return 1;
}

static char dir[32];

static void cleanup(void)
{
	unlink(fuzz_port_file);
	rmdir(dir);
}

static void setup(void)
{
	strcpy(dir, "/tmp/acm_fuzz.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(fuzz_port_file, sizeof(fuzz_port_file), "%s/port", dir);
	/* never created: the port file is the way in */
	snprintf(fuzz_unix_path, sizeof(fuzz_unix_path), "%s/sock", dir);
	cma_acm_service_set_trusted_uid(getuid());
	unsetenv("RDMA_CM_ACM_SERVICE");
	atexit(cleanup);
}

/* Whatever acm_locate accepted must be a usable, printable endpoint. */
static void check_ep(const struct acm_endpoint *ep)
{
	if (!memchr(ep->desc, '\0', sizeof(ep->desc)))
		abort();
	if (ep->is_unix) {
		if (ep->sun.sun_family != AF_UNIX || !ep->sun.sun_path[0] ||
		    !memchr(ep->sun.sun_path, '\0', sizeof(ep->sun.sun_path)))
			abort();
	} else if (!ep->port) {
		abort();
	}
}

static void service_string(const uint8_t *p, size_t n)
{
	struct acm_endpoint ep;
	char *s = malloc(n + 1);

	if (!s)
		return;
	memcpy(s, p, n);
	s[n] = '\0';
	if (*s && strlen(s) == n)
		setenv("RDMA_CM_ACM_SERVICE", s, 1);
	memset(&ep, 0xa5, sizeof(ep));
	if (!acm_locate(&ep))
		check_ep(&ep);
	unsetenv("RDMA_CM_ACM_SERVICE");
	free(s);
}

static void port_file(uint8_t flags, const uint8_t *p, size_t n)
{
	struct acm_endpoint ep;
	int fd;

	unlink(fuzz_port_file);
	fd = open(fuzz_port_file, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		abort();
	if (n && write(fd, p, n) != (ssize_t)n)
		abort();
	fchmod(fd, flags & 4 ? 0666 : 0644);
	close(fd);
	memset(&ep, 0xa5, sizeof(ep));
	if (!acm_locate(&ep)) {
		check_ep(&ep);
		if (flags & 4 || ep.is_unix)
			abort(); /* a file others may write is never trusted */
	}
}

static void answer(const uint8_t *p, size_t n)
{
	uint8_t buf[CMA_ACM_MSG_MAX];
	struct cma_acm_answer ans;
	int sv[2], len;

	if (n > 4096)
		n = 4096; /* within the socket's buffer: the writer never blocks */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		abort();
	if (n && write(sv[1], p, n) != (ssize_t)n)
		abort();
	close(sv[1]);
	len = acm_recv_answer(sv[0], buf, acm_ms_now() + 1000);
	close(sv[0]);
	if (len < 0)
		return;
	if (len < CMA_ACM_HDR_LEN || len > CMA_ACM_MSG_MAX || (size_t)len > n)
		abort();
	(void)cma_acm_msg_parse(buf, (size_t)len, &ans);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!fuzz_port_file[0])
		setup();
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		service_string(data + 1, size - 1);
		break;
	case 1:
		port_file(data[0], data + 1, size - 1);
		break;
	default:
		answer(data + 1, size - 1);
		break;
	}
	return 0;
}
