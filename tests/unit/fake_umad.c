// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The fake libibumad: see fake_umad.h.  Each function has the name and
 * signature of the libibumad call it replaces.  One port and one agent at
 * a time, one answer waiting at most: the library's queries are one MAD
 * and its answer.
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <infiniband/umad.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>

#include "fake_umad.h"

#define FAKE_PORTID 3
#define FAKE_AGENT 5

static struct fake_umad_state st;
static fake_umad_sa_fn sa_fn;
static enum fake_umad_fail fail;
static uint8_t answer[FAKE_UMAD_ANSWER_MAX];
static size_t answer_len;

/* Offsets in a SubnAdm MAD: method, status, then the record at 56. */
#define MAD_METHOD 3
#define MAD_STATUS 4
#define SA_DATA 56
#define PR_DGID 8
#define PR_SGID 24

size_t fake_umad_path_reply(const uint8_t *req, uint8_t *resp, uint16_t status)
{
	struct ibv_path_record pr;
	uint16_t st_be = htobe16(status);

	memcpy(resp, req, FAKE_UMAD_MAD_LEN);
	resp[MAD_METHOD] = 0x81; /* GetResp */
	memcpy(resp + MAD_STATUS, &st_be, 2);
	memset(&pr, 0, sizeof(pr));
	memcpy(&pr.dgid, req + SA_DATA + PR_DGID, 16);
	memcpy(&pr.sgid, req + SA_DATA + PR_SGID, 16);
	pr.dlid = htobe16(5);
	pr.slid = htobe16(3);
	pr.pkey = htobe16(0xffff);
	pr.mtu = (2 << 6) | IBV_MTU_2048; /* exactly */
	memcpy(resp + SA_DATA, &pr, sizeof(pr));
	return FAKE_UMAD_MAD_LEN;
}

void fake_umad_install(fake_umad_sa_fn sa)
{
	memset(&st, 0, sizeof(st));
	sa_fn = sa;
	fail = FAKE_UMAD_OK;
	answer_len = 0;
}

struct fake_umad_state fake_umad_state(void)
{
	return st;
}

void fake_umad_fail(enum fake_umad_fail what)
{
	fail = what;
}

/* Whether @what is the failure asked for; it is used up. */
static bool fake_fails(enum fake_umad_fail what)
{
	if (fail != what)
		return false;
	fail = FAKE_UMAD_OK;
	return true;
}

int umad_init(void)
{
	return fake_fails(FAKE_UMAD_FAIL_INIT) ? -1 : 0;
}

int umad_open_port(const char *ca_name, int portnum)
{
	(void)ca_name;
	(void)portnum;
	if (fake_fails(FAKE_UMAD_FAIL_OPEN))
		return -ENODEV;
	st.opens++;
	return FAKE_PORTID;
}

int umad_close_port(int portid)
{
	if (portid != FAKE_PORTID)
		return -EINVAL;
	st.closes++;
	return 0;
}

int umad_register(int portid, int mgmt_class, int mgmt_version,
		  uint8_t rmpp_version, long method_mask[16 / sizeof(long)])
{
	(void)method_mask;
	if (portid != FAKE_PORTID || fake_fails(FAKE_UMAD_FAIL_REGISTER))
		return -EINVAL;
	st.registers++;
	st.mgmt_class = mgmt_class;
	st.class_version = mgmt_version;
	st.rmpp = rmpp_version;
	return FAKE_AGENT;
}

int umad_unregister(int portid, int agentid)
{
	if (portid != FAKE_PORTID || agentid != FAKE_AGENT)
		return -EINVAL;
	st.unregisters++;
	return 0;
}

size_t umad_size(void)
{
	return sizeof(struct ib_user_mad);
}

void *umad_get_mad(void *umad)
{
	return ((struct ib_user_mad *)umad)->data;
}

int umad_status(void *umad)
{
	return (int)((struct ib_user_mad *)umad)->status;
}

int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey)
{
	(void)umad;
	st.dlid = dlid;
	st.dqp = dqp;
	st.sl = sl;
	st.qkey = (uint32_t)qkey;
	return 0;
}

int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms,
	      int retries)
{
	(void)timeout_ms;
	(void)retries;
	if (portid != FAKE_PORTID || agentid != FAKE_AGENT ||
	    fake_fails(FAKE_UMAD_FAIL_SEND))
		return -EINVAL;
	st.sends++;
	memset(st.last_mad, 0, sizeof(st.last_mad));
	memcpy(st.last_mad, umad_get_mad(umad),
	       length < FAKE_UMAD_MAD_LEN ? (size_t)length : FAKE_UMAD_MAD_LEN);
	answer_len = sa_fn ? sa_fn(st.last_mad, answer) : 0;
	return 0;
}

/*
 * The answer, if the SA gave one; else, as the kernel does when a send's
 * retries ran out, the request comes back with status ETIMEDOUT.
 */
int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
	struct ib_user_mad *m = umad;
	size_t n = answer_len;

	(void)timeout_ms;
	if (portid != FAKE_PORTID)
		return -EINVAL;
	if (!n) {
		m->status = ETIMEDOUT;
		*length = 0;
		return FAKE_AGENT;
	}
	if ((size_t)*length < n) {
		*length = (int)n;
		return -ENOSPC;
	}
	m->status = 0;
	m->agent_id = FAKE_AGENT;
	memcpy(m->data, answer, n);
	*length = (int)n;
	answer_len = 0;
	return FAKE_AGENT;
}
