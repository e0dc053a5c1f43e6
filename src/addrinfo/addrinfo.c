// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Address translation: rdma_getaddrinfo turns a host and service into a
 * list of rdma_addrinfo entries, ready for rdma_create_ep, and the
 * RDMACM_1.4 calls keep such a list on an id.
 *
 * Names go through getaddrinfo(3) (RAI_DNS, the default; RAI_SA asks the
 * InfiniBand SA for service records instead, addrinfo_sa.c), unless the ACM
 * resolver is on
 * (RDMA_CM_USE_IB_ACM=1, acm_cm.c): then ACM is asked first and may
 * answer with an AF_IB address and a route (ai_route).  Otherwise ai_route
 * is only ever what the caller put in the hints; AF_IB endpoints are
 * described by addresses in the hints, which are copied through.
 *
 * The hints are first turned into a template (defaults filled in, lengths
 * checked); every entry returned is a deep copy of the template with the
 * looked-up address placed on the side the caller asked for: the source
 * for RAI_PASSIVE (an address to bind), the destination otherwise.
 *
 * Errors are -1 with errno, like every other call of the library, so
 * getaddrinfo()'s EAI_* codes are mapped by cma_gai_errno().
 */
#include <config.h>

#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "acm/acm.h"
#include "cm/cma.h"

/*
 * errno for a getaddrinfo() failure:
 *   EAI_NONAME, EAI_NODATA, EAI_ADDRFAMILY, EAI_SERVICE -> ENOENT
 *	(the name or service does not exist, or has no address of the
 *	family asked for, or RAI_NUMERICHOST was given a name)
 *   EAI_AGAIN  -> EAGAIN (temporary; the caller may retry)
 *   EAI_MEMORY -> ENOMEM
 *   EAI_FAMILY -> EAFNOSUPPORT
 *   EAI_FAIL   -> EIO (the name server failed for good)
 *   EAI_SYSTEM -> the errno getaddrinfo() left (EIO if none)
 *   anything else (EAI_BADFLAGS, EAI_SOCKTYPE, ...) -> EINVAL
 * Must be called before anything else can change errno.
 */
int cma_gai_errno(int gai_err)
{
	switch (gai_err) {
	case EAI_NONAME:
	case EAI_SERVICE:
#ifdef EAI_NODATA
	case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
	case EAI_ADDRFAMILY:
#endif
		return ENOENT;
	case EAI_AGAIN:
		return EAGAIN;
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_FAMILY:
		return EAFNOSUPPORT;
	case EAI_FAIL:
		return EIO;
	case EAI_SYSTEM:
		return errno ? errno : EIO;
	}
	return EINVAL;
}

CMA_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res; res = next) {
		next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
	}
}

/*
 * Copy @len bytes of an address into a buffer no smaller than its family's
 * sockaddr, so code that trusts sa_family never reads past the end of a
 * short copy.
 */
static int cma_dup_addr(struct sockaddr **dst, socklen_t *dst_len,
			const struct sockaddr *src, socklen_t len)
{
	socklen_t size = cma_addr_len(src);

	*dst = NULL;
	*dst_len = 0;
	if (!src || !len)
		return 0;
	*dst = calloc(1, size > len ? size : len);
	if (!*dst)
		return -1;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static int cma_dup_mem(void **dst, size_t *dst_len, const void *src, size_t len)
{
	*dst = NULL;
	*dst_len = 0;
	if (!src || !len)
		return 0;
	*dst = malloc(len);
	if (!*dst)
		return -1;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static int cma_dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -1;
}

/* A deep copy of one entry, without its successors.  NULL/ENOMEM. */
static struct rdma_addrinfo *cma_ai_dup_one(const struct rdma_addrinfo *src)
{
	struct rdma_addrinfo *rai;

	rai = calloc(1, sizeof(*rai));
	if (!rai)
		goto nomem;
	rai->ai_flags = src->ai_flags;
	rai->ai_family = src->ai_family;
	rai->ai_qp_type = src->ai_qp_type;
	rai->ai_port_space = src->ai_port_space;
	if (cma_dup_addr(&rai->ai_src_addr, &rai->ai_src_len, src->ai_src_addr,
			 src->ai_src_len) ||
	    cma_dup_addr(&rai->ai_dst_addr, &rai->ai_dst_len, src->ai_dst_addr,
			 src->ai_dst_len) ||
	    cma_dup_str(&rai->ai_src_canonname, src->ai_src_canonname) ||
	    cma_dup_str(&rai->ai_dst_canonname, src->ai_dst_canonname) ||
	    cma_dup_mem(&rai->ai_route, &rai->ai_route_len, src->ai_route,
			src->ai_route_len) ||
	    cma_dup_mem(&rai->ai_connect, &rai->ai_connect_len, src->ai_connect,
			src->ai_connect_len)) {
		rdma_freeaddrinfo(rai); /* what was copied so far */
		goto nomem;
	}
	return rai;
nomem:
	errno = ENOMEM;
	return NULL;
}

/* A deep copy of a whole list.  NULL/ENOMEM (or NULL for an empty list). */
struct rdma_addrinfo *cma_ai_dup_list(const struct rdma_addrinfo *list)
{
	struct rdma_addrinfo *head = NULL, **tail = &head;

	for (; list; list = list->ai_next) {
		*tail = cma_ai_dup_one(list);
		if (!*tail) {
			rdma_freeaddrinfo(head);
			errno = ENOMEM;
			return NULL;
		}
		tail = &(*tail)->ai_next;
	}
	return head;
}

static bool cma_ai_passive(const struct rdma_addrinfo *rai)
{
	return rai->ai_flags & RAI_PASSIVE;
}

/*
 * An address given without a length gets its family's; one whose length
 * is unknown or implausible (too short to hold even the family) is
 * refused.
 */
static int cma_ai_check_addr(const struct sockaddr *addr, socklen_t *len)
{
	if (!addr) {
		*len = 0;
		return 0;
	}
	if (!*len)
		*len = cma_addr_len(addr);
	if (*len < sizeof(sa_family_t) ||
	    *len > sizeof(struct sockaddr_storage))
		return cma_err(EINVAL);
	return 0;
}

/*
 * Port space and QP type: each follows from the other when only one is
 * given (a datagram QP lives in RDMA_PS_UDP, RDMA_PS_UDP and RDMA_PS_IPOIB
 * use UD QPs), and RDMA_PS_TCP with RC QPs when neither is.  A QP type
 * that disagrees with the port space is left for the kernel to judge.
 */
static int cma_ai_fill_types(struct rdma_addrinfo *tmpl)
{
	enum ibv_qp_type qp_type;

	if (!tmpl->ai_port_space)
		tmpl->ai_port_space = tmpl->ai_qp_type == IBV_QPT_UD
					      ? RDMA_PS_UDP
					      : RDMA_PS_TCP;
	if (cma_ps_qp_type(tmpl->ai_port_space, &qp_type))
		return -1; /* an unknown port space */
	if (!tmpl->ai_qp_type)
		tmpl->ai_qp_type = qp_type;
	return 0;
}

/*
 * The caller's hints, checked, as the template of every entry.  Only the
 * template's own members are copied (shallowly): the caller's list and
 * canonical names are not inputs.
 */
static int cma_ai_template(const struct rdma_addrinfo *hints,
			   struct rdma_addrinfo *tmpl)
{
	memset(tmpl, 0, sizeof(*tmpl));
	if (hints) {
		*tmpl = *hints;
		tmpl->ai_src_canonname = NULL;
		tmpl->ai_dst_canonname = NULL;
		tmpl->ai_next = NULL;
	}
	if (cma_ai_check_addr(tmpl->ai_src_addr, &tmpl->ai_src_len) ||
	    cma_ai_check_addr(tmpl->ai_dst_addr, &tmpl->ai_dst_len))
		return -1;
	/* Route and connect data need both a pointer and a length. */
	if (!tmpl->ai_route || !tmpl->ai_route_len) {
		tmpl->ai_route = NULL;
		tmpl->ai_route_len = 0;
	}
	if (!tmpl->ai_connect || !tmpl->ai_connect_len) {
		tmpl->ai_connect = NULL;
		tmpl->ai_connect_len = 0;
	}
	return cma_ai_fill_types(tmpl);
}

/*
 * One entry: the template with @ai's address (and the canonical name of
 * the lookup) on the passive or active side.  NULL/ENOMEM.
 */
struct rdma_addrinfo *cma_ai_from_addrinfo(const struct addrinfo *ai,
					   const char *canonname,
					   const struct rdma_addrinfo *tmpl)
{
	struct rdma_addrinfo *rai;
	struct sockaddr **addr;
	socklen_t *len;
	char **canon;

	rai = cma_ai_dup_one(tmpl);
	if (!rai)
		return NULL;
	if (cma_ai_passive(rai)) {
		addr = &rai->ai_src_addr;
		len = &rai->ai_src_len;
		canon = &rai->ai_src_canonname;
	} else {
		addr = &rai->ai_dst_addr;
		len = &rai->ai_dst_len;
		canon = &rai->ai_dst_canonname;
	}
	/* The looked-up address replaces a hint for the same side. */
	free(*addr);
	rai->ai_family = ai->ai_family;
	if (cma_dup_addr(addr, len, ai->ai_addr, ai->ai_addrlen) ||
	    cma_dup_str(canon, canonname)) {
		rdma_freeaddrinfo(rai);
		errno = ENOMEM;
		return NULL;
	}
	return rai;
}

static bool cma_is_ip_family(int family)
{
	return family == AF_INET || family == AF_INET6;
}

/*
 * The family to ask getaddrinfo() for.  AF_IB is not something it can
 * produce: a strict (RAI_FAMILY) request for it fails, a plain one falls
 * back to IP addresses, which AF_IB capable devices also accept.  With no
 * family given, a hint address for the other side decides, because the
 * kernel refuses to pair a source and a destination of different
 * families.
 */
static int cma_ai_lookup_family(const struct rdma_addrinfo *tmpl, int *family)
{
	const struct sockaddr *other;

	switch (tmpl->ai_family) {
	case AF_INET:
	case AF_INET6:
		*family = tmpl->ai_family;
		return 0;
	case AF_IB:
		if (tmpl->ai_flags & RAI_FAMILY)
			return cma_err(EAFNOSUPPORT);
		break;
	case AF_UNSPEC:
		break;
	default:
		return cma_err(EAFNOSUPPORT);
	}
	other = cma_ai_passive(tmpl) ? tmpl->ai_dst_addr : tmpl->ai_src_addr;
	if (other && cma_is_ip_family(other->sa_family))
		*family = other->sa_family;
	else
		*family = AF_UNSPEC;
	return 0;
}

/*
 * One socket type only, so that getaddrinfo() does not repeat every
 * address once per type: the one matching the QP, which also finds
 * services registered for a single protocol.  The canonical name is
 * always asked for when there is a node (for a numeric one, getaddrinfo()
 * just copies the string; it costs no extra lookup).
 */
static int cma_ai_gai_hints(const char *node, const struct rdma_addrinfo *tmpl,
			    struct addrinfo *gai)
{
	memset(gai, 0, sizeof(*gai));
	if (cma_ai_lookup_family(tmpl, &gai->ai_family))
		return -1;
	gai->ai_socktype =
		tmpl->ai_qp_type == IBV_QPT_UD ? SOCK_DGRAM : SOCK_STREAM;
	if (cma_ai_passive(tmpl))
		gai->ai_flags |= AI_PASSIVE;
	if (tmpl->ai_flags & RAI_NUMERICHOST)
		gai->ai_flags |= AI_NUMERICHOST;
	if (node)
		gai->ai_flags |= AI_CANONNAME;
	return 0;
}

/*
 * Whether @list already has an entry for this address: hosts files and
 * resolvers can return one address several times.
 */
static bool cma_ai_listed(const struct rdma_addrinfo *list,
			  const struct addrinfo *ai)
{
	const struct sockaddr *addr;
	socklen_t len;

	for (; list; list = list->ai_next) {
		addr = cma_ai_passive(list) ? list->ai_src_addr
					    : list->ai_dst_addr;
		len = cma_ai_passive(list) ? list->ai_src_len
					   : list->ai_dst_len;
		if (len == ai->ai_addrlen && !memcmp(addr, ai->ai_addr, len))
			return true;
	}
	return false;
}

static bool cma_ai_wanted(const struct addrinfo *ai,
			  const struct rdma_addrinfo *tmpl,
			  const struct rdma_addrinfo *list)
{
	if (!ai->ai_addr || !cma_is_ip_family(ai->ai_family))
		return false;
	if ((tmpl->ai_flags & RAI_FAMILY) && ai->ai_family != tmpl->ai_family)
		return false;
	return !cma_ai_listed(list, ai);
}

/* Entries from a getaddrinfo() result.  NULL/errno; ENOENT if none fit. */
struct rdma_addrinfo *cma_ai_convert(const struct addrinfo *res,
				     const struct rdma_addrinfo *tmpl)
{
	struct rdma_addrinfo *head = NULL, **tail = &head;
	const char *canonname = NULL;
	const struct addrinfo *ai;

	for (ai = res; ai; ai = ai->ai_next) {
		/* getaddrinfo() names only the first entry; all get it. */
		if (ai->ai_canonname)
			canonname = ai->ai_canonname;
		if (!cma_ai_wanted(ai, tmpl, head))
			continue;
		*tail = cma_ai_from_addrinfo(ai, canonname, tmpl);
		if (!*tail) {
			rdma_freeaddrinfo(head);
			errno = ENOMEM;
			return NULL;
		}
		tail = &(*tail)->ai_next;
	}
	if (!head)
		errno = ENOENT;
	return head;
}

struct rdma_addrinfo *cma_ai_lookup(const char *node, const char *service,
				    const struct rdma_addrinfo *tmpl)
{
	struct rdma_addrinfo *list;
	struct addrinfo gai, *res;
	int ret;

	if (cma_ai_gai_hints(node, tmpl, &gai))
		return NULL;
	ret = getaddrinfo(node, service, &gai, &res);
	if (ret) {
		errno = cma_gai_errno(ret);
		return NULL;
	}
	list = cma_ai_convert(res, tmpl);
	freeaddrinfo(res); /* free() leaves errno alone */
	return list;
}

/*
 * Nothing to look up: the hints' own addresses are the answer (this is how
 * AF_IB endpoints, and IP ones already in binary form, are described).
 */
static struct rdma_addrinfo *cma_ai_from_hints(const struct rdma_addrinfo *tmpl)
{
	const struct sockaddr *main_addr, *other;
	struct rdma_addrinfo *rai;

	main_addr =
		cma_ai_passive(tmpl) ? tmpl->ai_src_addr : tmpl->ai_dst_addr;
	other = cma_ai_passive(tmpl) ? tmpl->ai_dst_addr : tmpl->ai_src_addr;
	if (!main_addr && !other) {
		errno = EINVAL;
		return NULL;
	}
	rai = cma_ai_dup_one(tmpl);
	if (rai)
		rai->ai_family = (main_addr ? main_addr : other)->sa_family;
	return rai;
}

int cma_getaddrinfo_from(const char *node, const char *service,
			 const struct rdma_addrinfo *hints,
			 const union ibv_gid *sgid, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo tmpl, *list;

	if (!res)
		return cma_err(EINVAL);
	if (cma_ai_template(hints, &tmpl))
		return -1;
	if (tmpl.ai_flags & RAI_SA)
		return cma_sa_getaddrinfo(node, service, &tmpl, sgid, res);
	if (node && !cma_ai_passive(&tmpl) && cma_acm_enabled())
		list = cma_acm_ai_lookup(node, service, &tmpl);
	else if (node || service)
		list = cma_ai_lookup(node, service, &tmpl);
	else
		list = cma_ai_from_hints(&tmpl);
	if (!list)
		return -1;
	*res = list;
	return 0;
}

/*
 * RAI_DNS (rdma-core 60) names the default resolver: getaddrinfo(3), or ACM
 * when it is on.  RAI_SA asks the InfiniBand SA instead (addrinfo_sa.c).
 */
CMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints,
				struct rdma_addrinfo **res)
{
	return cma_getaddrinfo_from(node, service, hints, NULL, res);
}

/*
 * The list is handed over, as rdma-core does: the caller frees it, and the
 * id keeps nothing, so a second call says ENOENT until the next
 * resolution.  No copy is made, so the call cannot fail for memory.
 */
CMA_EXPORT int rdma_query_addrinfo(struct rdma_cm_id *id,
				   struct rdma_addrinfo **info)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct cma_id_rare *rare;
	struct rdma_addrinfo *list;

	if (cma_check_id(id) || !info)
		return cma_err(EINVAL);

	rare = cma_id_rare_of(id_priv);
	if (!rare)
		return cma_err(ENOENT);
	pthread_mutex_lock(&id_priv->mut);
	list = rare->resolved_ai;
	rare->resolved_ai = NULL;
	pthread_mutex_unlock(&id_priv->mut);
	if (!list)
		return cma_err(ENOENT);
	*info = list;
	return 0;
}
