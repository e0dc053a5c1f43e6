// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A PathRecord query to the subnet administrator, sent by the library
 * itself through libibumad, so InfiniBand fabrics need no ACM daemon: one
 * SubnAdmGet(PathRecord) for SGID/DGID, reversible, one path, to the SM's
 * LID on QP1, bounded by RDMA_CM_ACM_SA_TIMEOUT_MS.
 *
 * Only InfiniBand ports have an SA; RoCE ports never get here.  Opening
 * the umad device usually needs privileges: without them the query fails
 * at once and resolution goes on to the kernel, which asks the SA itself.
 *
 * The MAD is encoded and decoded by two pure functions (unit tested; the
 * decoder checks every field it trusts).
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include "acm.h"
#include "util/be_bytes.h"
#include "cm/cma.h"

#define ACM_SA_MAD_LEN 256
#define ACM_SA_DATA_OFF 56 /* MAD header 24 + RMPP 12 + SA header 20 */
#define ACM_SA_QKEY 0x80010000u
#define ACM_SA_RETRIES 1

/* PathRecord component mask bits (IBA 15.2.5.16). */
#define ACM_PR_DGID (1ull << 2)
#define ACM_PR_SGID (1ull << 3)
#define ACM_PR_REVERSIBLE (1ull << 11)
#define ACM_PR_NUMBPATH (1ull << 12)
#define ACM_PR_PKEY (1ull << 13)

void cma_acm_sa_build(uint8_t mad[256], uint64_t tid, const union ibv_gid *sgid,
		      const union ibv_gid *dgid, uint16_t pkey)
{
	struct ibv_path_record pr;
	uint64_t mask =
		ACM_PR_DGID | ACM_PR_SGID | ACM_PR_REVERSIBLE | ACM_PR_NUMBPATH;

	memset(mad, 0, ACM_SA_MAD_LEN);
	mad[0] = 1; /* base version */
	mad[1] = UMAD_CLASS_SUBN_ADM;
	mad[2] = UMAD_SA_CLASS_VERSION;
	mad[3] = UMAD_METHOD_GET;
	cma_put_be64(mad + 8, tid);
	cma_put_be16(mad + 16, UMAD_SA_ATTR_PATH_REC);

	memset(&pr, 0, sizeof(pr));
	pr.sgid = *sgid;
	pr.dgid = *dgid;
	pr.reversible_numpath = 0x80 | 1;
	if (pkey) {
		pr.pkey = htobe16(pkey);
		mask |= ACM_PR_PKEY;
	}
	cma_put_be64(mad + 48, mask);
	memcpy(mad + ACM_SA_DATA_OFF, &pr, sizeof(pr));
}

int cma_acm_sa_parse(const uint8_t *mad, size_t len, uint64_t tid,
		     struct ibv_path_record *path)
{
	uint8_t mtu;

	if (len < ACM_SA_DATA_OFF + sizeof(*path))
		return cma_err(EPROTO);
	if (mad[1] != UMAD_CLASS_SUBN_ADM || mad[3] != UMAD_METHOD_GET_RESP ||
	    cma_get_be64(mad + 8) != tid ||
	    cma_get_be16(mad + 16) != UMAD_SA_ATTR_PATH_REC)
		return cma_err(EPROTO);
	if (cma_get_be16(mad + 4))
		return cma_err(ENODATA); /* the SA's status: no such path */
	memcpy(path, mad + ACM_SA_DATA_OFF, sizeof(*path));
	mtu = path->mtu & 0x3f;
	if (!path->dlid || !path->pkey || mtu < IBV_MTU_256 ||
	    mtu > IBV_MTU_4096)
		return cma_err(EPROTO);
	return 0;
}

/* Send the query and wait for its answer.  0 or -1/errno. */
static int acm_sa_exchange(int portid, int agent,
			   const struct cma_acm_port *port, const uint8_t *mad,
			   uint64_t tid, struct ibv_path_record *path)
{
	int timeout = (int)cma_acm_sa_timeout_ms();
	size_t size = umad_size() + ACM_SA_MAD_LEN;
	void *umad;
	int len, ret = -1;

	umad = calloc(1, size);
	if (!umad)
		return cma_err(ENOMEM);
	memcpy(umad_get_mad(umad), mad, ACM_SA_MAD_LEN);
	umad_set_addr(umad, port->sm_lid, 1, port->sm_sl, ACM_SA_QKEY);
	if (umad_send(portid, agent, umad, ACM_SA_MAD_LEN, timeout,
		      ACM_SA_RETRIES) < 0) {
		errno = EIO;
		goto out;
	}
	len = ACM_SA_MAD_LEN;
	/* A send that timed out comes back with a status instead. */
	if (umad_recv(portid, umad, &len, timeout * (ACM_SA_RETRIES + 1)) < 0 ||
	    umad_status(umad)) {
		errno = ETIMEDOUT;
		goto out;
	}
	ret = cma_acm_sa_parse(umad_get_mad(umad), (size_t)len, tid, path);
out:
	free(umad);
	return ret;
}

int cma_sa_agent_open(const struct cma_acm_port *port, bool rmpp, int *agent)
{
	int portid;

	if (umad_init() < 0)
		return cma_err(ENODEV);
	portid = umad_open_port(port->dev_name, port->port_num);
	if (portid < 0)
		return cma_err(EACCES);
	*agent = umad_register(portid, UMAD_CLASS_SUBN_ADM,
			       UMAD_SA_CLASS_VERSION, rmpp ? 1 : 0, NULL);
	if (*agent < 0) {
		umad_close_port(portid);
		return cma_err(EACCES);
	}
	return portid;
}

void cma_sa_agent_close(int portid, int agent)
{
	umad_unregister(portid, agent);
	umad_close_port(portid);
}

int cma_acm_sa_query(const struct cma_acm_port *port, const union ibv_gid *dgid,
		     struct ibv_path_data *out)
{
	static uint64_t next_tid;
	uint8_t mad[ACM_SA_MAD_LEN];
	uint64_t tid;
	int portid, agent, ret, err;

	if (port->link_layer != IBV_LINK_LAYER_INFINIBAND || !port->sm_lid)
		return cma_err(ENODATA);
	portid = cma_sa_agent_open(port, false, &agent);
	if (portid < 0)
		return -1;
	tid = __atomic_add_fetch(&next_tid, 1, __ATOMIC_RELAXED) |
	      ((uint64_t)getpid() << 32);
	cma_acm_sa_build(mad, tid, &port->gid, dgid, port->pkey);
	memset(out, 0, sizeof(*out));
	ret = acm_sa_exchange(portid, agent, port, mad, tid, &out->path);
	err = errno;
	cma_sa_agent_close(portid, agent);
	if (ret)
		return cma_err(err);
	out->flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
		     IBV_PATH_FLAG_BIDIRECTIONAL;
	return 0;
}
