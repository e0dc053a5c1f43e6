// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * RAI_SA: rdma_getaddrinfo and rdma_resolve_addrinfo answered by the
 * InfiniBand subnet administrator.  The service (a numeric service ID or a
 * service name) is looked up with one SubnAdmGetTable(ServiceRecord) sent
 * through libibumad from a local InfiniBand port, and every record the SA
 * returns becomes one AF_IB entry: the service's GID, P_Key and ID as the
 * destination, the port's GID as the source.
 *
 * rdma-core 65 asks the kernel to run this query (a command of Linux 6.15);
 * sending the MAD from here works on every kernel, as acm_sa.c does for
 * PathRecords, and needs read/write access to /dev/infiniband/umad* (the
 * query fails with EACCES otherwise).
 *
 * The MAD is encoded and decoded by pure functions, unit tested against
 * constructed MADs; the decoder checks every field it relies on.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/ib.h>
#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include "acm/acm.h"
#include "util/be_bytes.h"
#include "cm/cma.h"

#define SA_SVC_REQ_LEN 256
#define SA_SVC_HDR_LEN 56 /* MAD header 24 + RMPP 12 + SA header 20 */
#define SA_SVC_QKEY 0x80010000u
#define SA_SVC_ATTR 0x0031 /* ServiceRecord */
#define SA_SVC_REC_LEN 176 /* IBA 15.2.5.14 */
#define SA_SVC_MAX_RESP (64 * 1024) /* bound on what one answer may hold */
#define SA_STATUS_NO_RECORDS 3 /* SA-specific status (bits 8-14) */

/* ServiceRecord component mask bits and field offsets. */
#define SA_SVC_COMP_ID (1ull << 0)
#define SA_SVC_COMP_NAME (1ull << 6)
#define SA_SVC_OFF_ID 0
#define SA_SVC_OFF_GID 8
#define SA_SVC_OFF_PKEY 24
#define SA_SVC_OFF_NAME 48

int cma_sa_svc_parse_service(const char *service, struct cma_sa_svc *svc)
{
	char *end;
	size_t len;

	memset(svc, 0, sizeof(*svc));
	if (!service || !*service)
		return cma_err(EINVAL);
	errno = 0;
	svc->id = strtoull(service, &end, 0);
	if (!*end && !errno && service[0] != '-') {
		svc->by_id = true;
		return 0;
	}
	/* A name: it must fit the record's 64 bytes with its terminator. */
	len = strlen(service);
	if (len >= sizeof(svc->name))
		return cma_err(EINVAL);
	memcpy(svc->name, service, len);
	return 0;
}

void cma_sa_svc_build(uint8_t mad[256], uint64_t tid,
		      const struct cma_sa_svc *svc)
{
	uint8_t *rec = mad + SA_SVC_HDR_LEN;

	memset(mad, 0, SA_SVC_REQ_LEN);
	mad[0] = 1; /* base version */
	mad[1] = UMAD_CLASS_SUBN_ADM;
	mad[2] = UMAD_SA_CLASS_VERSION;
	mad[3] = UMAD_SA_METHOD_GET_TABLE;
	cma_put_be64(mad + 8, tid);
	mad[16] = SA_SVC_ATTR >> 8;
	mad[17] = SA_SVC_ATTR & 0xff;
	/* RMPP header left zero: the request is one unsegmented MAD. */
	if (svc->by_id) {
		cma_put_be64(mad + 48, SA_SVC_COMP_ID);
		cma_put_be64(rec + SA_SVC_OFF_ID, svc->id);
	} else {
		cma_put_be64(mad + 48, SA_SVC_COMP_NAME);
		memcpy(rec + SA_SVC_OFF_NAME, svc->name, sizeof(svc->name));
	}
}

static bool sa_zero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return false;
	return true;
}

/* One AF_IB entry for one ServiceRecord.  NULL/ENOMEM. */
static struct rdma_addrinfo *sa_svc_entry(const uint8_t *rec,
					  const struct rdma_addrinfo *tmpl,
					  const struct cma_acm_port *port)
{
	struct rdma_addrinfo *rai = calloc(1, sizeof(*rai));
	struct sockaddr_ib *dst = calloc(1, sizeof(*dst));
	struct sockaddr_ib *src = port ? calloc(1, sizeof(*src)) : NULL;
	char name[65];

	if (!rai || !dst || (port && !src))
		goto nomem;
	rai->ai_flags = tmpl->ai_flags;
	rai->ai_family = AF_IB;
	rai->ai_qp_type = tmpl->ai_qp_type ? tmpl->ai_qp_type : IBV_QPT_RC;
	rai->ai_port_space =
		tmpl->ai_port_space ? tmpl->ai_port_space : RDMA_PS_IB;

	dst->sib_family = AF_IB;
	memcpy(&dst->sib_pkey, rec + SA_SVC_OFF_PKEY, 2);
	memcpy(&dst->sib_addr, rec + SA_SVC_OFF_GID, 16);
	memcpy(&dst->sib_sid, rec + SA_SVC_OFF_ID, 8);
	dst->sib_sid_mask = htobe64(~0ull);
	rai->ai_dst_addr = (struct sockaddr *)dst;
	rai->ai_dst_len = sizeof(*dst);
	if (src) {
		src->sib_family = AF_IB;
		src->sib_pkey = htobe16(port->pkey);
		memcpy(&src->sib_addr, port->gid.raw, 16);
		rai->ai_src_addr = (struct sockaddr *)src;
		rai->ai_src_len = sizeof(*src);
	}
	/* The service's name, when it has one, as the canonical name. */
	memcpy(name, rec + SA_SVC_OFF_NAME, 64);
	name[64] = '\0';
	if (name[0]) {
		rai->ai_dst_canonname = strdup(name);
		if (!rai->ai_dst_canonname) {
			rdma_freeaddrinfo(rai);
			errno = ENOMEM;
			return NULL;
		}
	}
	return rai;
nomem:
	free(rai);
	free(dst);
	free(src);
	errno = ENOMEM;
	return NULL;
}

int cma_sa_svc_parse(const uint8_t *mad, size_t len, uint64_t tid,
		     const struct rdma_addrinfo *tmpl,
		     const struct cma_acm_port *port,
		     struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *head = NULL, **tail = &head;
	size_t stride, off;
	uint16_t status;

	if (len < SA_SVC_HDR_LEN)
		return cma_err(EPROTO);
	if (mad[1] != UMAD_CLASS_SUBN_ADM ||
	    mad[3] != UMAD_SA_METHOD_GET_TABLE_RESP ||
	    cma_get_be64(mad + 8) != tid ||
	    cma_get_be16(mad + 16) != SA_SVC_ATTR)
		return cma_err(EPROTO);
	status = cma_get_be16(mad + 4);
	if (status)
		return cma_err(((status >> 8) & 0x7f) == SA_STATUS_NO_RECORDS
				       ? ENOENT
				       : EIO);
	/* AttributeOffset: the records' spacing, in 8-byte words. */
	stride = (size_t)cma_get_be16(mad + 44) * 8;
	if (len - SA_SVC_HDR_LEN >= SA_SVC_REC_LEN && stride < SA_SVC_REC_LEN)
		return cma_err(EPROTO);
	for (off = SA_SVC_HDR_LEN; stride && off + SA_SVC_REC_LEN <= len;
	     off += stride) {
		/* RMPP pads the last segment with zeros: no service there. */
		if (sa_zero(mad + off + SA_SVC_OFF_GID, 16))
			continue;
		*tail = sa_svc_entry(mad + off, tmpl, port);
		if (!*tail) {
			rdma_freeaddrinfo(head);
			return -1;
		}
		tail = &(*tail)->ai_next;
	}
	if (!head)
		return cma_err(ENOENT);
	*res = head;
	return 0;
}

/* Wait for the answer, growing the buffer for a long (RMPP) one. */
static void *sa_svc_recv(int portid, int timeout, int *len)
{
	size_t cap = 4096;
	void *umad;
	int ret;

	for (;;) {
		umad = calloc(1, umad_size() + cap);
		if (!umad) {
			errno = ENOMEM;
			return NULL;
		}
		*len = (int)cap;
		/* libibumad returns -errno; errno itself may be stale. */
		ret = umad_recv(portid, umad, len, timeout);
		if (ret >= 0)
			break;
		free(umad);
		/* Too small a buffer: *len says what the answer needs. */
		if (*len <= (int)cap) {
			errno = ETIMEDOUT;
			return NULL;
		}
		if (*len > SA_SVC_MAX_RESP) {
			errno = EMSGSIZE;
			return NULL;
		}
		cap = (size_t)*len;
	}
	if (umad_status(umad)) {
		free(umad);
		errno = ETIMEDOUT; /* a send that timed out comes back so */
		return NULL;
	}
	return umad;
}

static int sa_svc_exchange(int portid, int agent,
			   const struct cma_acm_port *port, const uint8_t *mad,
			   uint64_t tid, const struct rdma_addrinfo *tmpl,
			   struct rdma_addrinfo **res)
{
	int timeout = (int)cma_acm_sa_timeout_ms();
	void *umad;
	int len, ret;

	umad = calloc(1, umad_size() + SA_SVC_REQ_LEN);
	if (!umad)
		return cma_err(ENOMEM);
	memcpy(umad_get_mad(umad), mad, SA_SVC_REQ_LEN);
	umad_set_addr(umad, port->sm_lid, 1, port->sm_sl, SA_SVC_QKEY);
	ret = umad_send(portid, agent, umad, SA_SVC_REQ_LEN, timeout, 1);
	free(umad);
	if (ret < 0)
		return cma_err(EIO);
	umad = sa_svc_recv(portid, timeout * 2, &len);
	if (!umad)
		return -1;
	ret = cma_sa_svc_parse(umad_get_mad(umad), (size_t)len, tid, tmpl, port,
			       res);
	free(umad);
	return ret;
}

/* Ask @port's SA.  0 or -1/errno. */
static int cma_sa_svc_query(const struct cma_acm_port *port,
			    const struct cma_sa_svc *svc,
			    const struct rdma_addrinfo *tmpl,
			    struct rdma_addrinfo **res)
{
	static uint64_t next_tid;
	uint8_t mad[SA_SVC_REQ_LEN];
	int portid, agent, ret, err;
	uint64_t tid;

	if (port->link_layer != IBV_LINK_LAYER_INFINIBAND || !port->sm_lid)
		return cma_err(ENODEV);
	/* RMPP: a table of records may take several segments. */
	portid = cma_sa_agent_open(port, true, &agent);
	if (portid < 0)
		return -1;
	tid = __atomic_add_fetch(&next_tid, 1, __ATOMIC_RELAXED) |
	      ((uint64_t)getpid() << 32) | (1ull << 63);
	cma_sa_svc_build(mad, tid, svc);
	ret = sa_svc_exchange(portid, agent, port, mad, tid, tmpl, res);
	err = errno;
	cma_sa_agent_close(portid, agent);
	return ret ? cma_err(err) : 0;
}

int cma_sa_getaddrinfo(const char *node, const char *service,
		       const struct rdma_addrinfo *tmpl,
		       const union ibv_gid *sgid, struct rdma_addrinfo **res)
{
	struct cma_acm_port port;
	struct cma_sa_svc svc;

	/* A service is looked up, never a host; one resolver at a time. */
	if (node || (tmpl->ai_flags & RAI_DNS))
		return cma_err(EOPNOTSUPP);
	if (cma_sa_svc_parse_service(service, &svc))
		return -1;
	if (sgid ? cma_acm_port_by_gid(sgid, &port)
		 : cma_acm_port_first_ib(&port))
		return cma_err(ENODEV);
	if (port.link_layer != IBV_LINK_LAYER_INFINIBAND)
		return cma_err(EINVAL); /* RoCE and iWARP have no SA */
	return cma_sa_svc_query(&port, &svc, tmpl, res);
}
