/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * A fake libibumad with a subnet administrator behind it, for unit tests
 * of the SA queries (src/acm/acm_sa.c, src/addrinfo/addrinfo_sa.c).  Linking
 * fake_umad.o into a test program interposes the umad_* calls the library
 * makes, as fake_verbs does for ibv_*.  The test answers each MAD sent
 * (fake_umad_set_sa) or leaves it unanswered, and can make the device
 * calls fail; everything sent is recorded.
 */
#ifndef FAKE_UMAD_H
#define FAKE_UMAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_UMAD_MAD_LEN 256
/* The longest answer (an RMPP one spans several MADs). */
#define FAKE_UMAD_ANSWER_MAX 8192

/* What the fake saw and holds. */
struct fake_umad_state {
	int opens, closes; /* ports */
	int registers, unregisters; /* agents */
	int mgmt_class, class_version, rmpp;
	int sends;
	uint8_t last_mad[FAKE_UMAD_MAD_LEN]; /* the last MAD sent */
	int dlid, dqp, sl;
	uint32_t qkey;
};

/*
 * The SA: called for every MAD sent with the request; it writes the
 * answer into @resp (up to FAKE_UMAD_ANSWER_MAX bytes) and returns its
 * length, or 0 for no answer (the receive then times out).
 */
typedef size_t (*fake_umad_sa_fn)(const uint8_t *req, uint8_t *resp);

/*
 * A PathRecord SA's answer to @req (a Get(PathRecord)): GetResp with MAD
 * status @status and the path asked for, LIDs 3 -> 5, 2048-byte MTU.
 */
size_t fake_umad_path_reply(const uint8_t *req, uint8_t *resp, uint16_t status);

/* Reset; @sa answers (NULL: an SA that never answers). */
void fake_umad_install(fake_umad_sa_fn sa);
struct fake_umad_state fake_umad_state(void);

/* Which device call fails next (once). */
enum fake_umad_fail {
	FAKE_UMAD_OK,
	FAKE_UMAD_FAIL_INIT,
	FAKE_UMAD_FAIL_OPEN,
	FAKE_UMAD_FAIL_REGISTER,
	FAKE_UMAD_FAIL_SEND,
};
void fake_umad_fail(enum fake_umad_fail what);

#endif /* FAKE_UMAD_H */
