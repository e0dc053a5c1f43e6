// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Encoding and parsing of the rsocket wire formats (see wire.h).  Nothing
 * here touches a device: every function is a pure transformation, so the
 * parsers can be fed arbitrary bytes by the unit tests and the fuzzer.
 */
#include <byteswap.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "wire.h"

static uint64_t rs_hton64(uint64_t v)
{
	return rs_host_big_endian() ? v : bswap_64(v);
}

#define rs_ntoh64 rs_hton64

static void sge_to_net(struct rs_wire_sge *out, const struct rs_wire_sge *in)
{
	out->addr = rs_hton64(in->addr);
	out->key = htonl(in->key);
	out->length = htonl(in->length);
}

static void sge_from_net(struct rs_wire_sge *out, const struct rs_wire_sge *in)
{
	out->addr = rs_ntoh64(in->addr);
	out->key = ntohl(in->key);
	out->length = ntohl(in->length);
}

void rs_msg_send_encode(uint8_t out[RS_MSG_SEND_SIZE], uint32_t msg)
{
	memcpy(out, &msg, RS_MSG_SEND_SIZE);
}

int rs_msg_send_decode(const void *buf, size_t len, bool swap, uint32_t *msg)
{
	uint32_t v;

	if (!buf || len < RS_MSG_SEND_SIZE)
		return -1;
	memcpy(&v, buf, sizeof(v));
	*msg = swap ? bswap_32(v) : v;
	return 0;
}

void rs_conn_encode(struct rs_wire_conn *out, const struct rs_conn_params *p)
{
	memset(out, 0, sizeof(*out));
	out->version = RS_WIRE_VERSION;
	out->flags = RS_CONN_FLAG_IOMAP | RS_CONN_FLAG_QUIESCE;
	if (rs_host_big_endian())
		out->flags |= RS_CONN_FLAG_NET;
	out->credits = htons(p->credits);
	out->target_iomap_size = rs_iomap_size_to_wire(p->iomap_size);
	sge_to_net(&out->target_sgl, &p->target_sgl);
	sge_to_net(&out->data_buf, &p->data_buf);
}

int rs_conn_decode(const void *buf, size_t len, struct rs_conn_params *p)
{
	struct rs_wire_conn c;

	if (!buf || len < sizeof(c)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&c, buf, sizeof(c));
	if (c.version != RS_WIRE_VERSION) {
		errno = ENOTSUP;
		return -1;
	}
	memset(p, 0, sizeof(*p));
	p->credits = ntohs(c.credits);
	p->big_endian = c.flags & RS_CONN_FLAG_NET;
	p->has_iomap = c.flags & RS_CONN_FLAG_IOMAP;
	p->can_quiesce = c.flags & RS_CONN_FLAG_QUIESCE;
	p->iomap_size =
		p->has_iomap ? rs_iomap_size_from_wire(c.target_iomap_size) : 0;
	sge_from_net(&p->target_sgl, &c.target_sgl);
	sge_from_net(&p->data_buf, &c.data_buf);
	/*
	 * A peer without credits or buffers could never receive; an SGL of
	 * no entries could never be updated.  Refuse rather than stall.
	 */
	if (!p->credits || !p->data_buf.length || !p->target_sgl.length) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

uint8_t rs_iomap_size_to_wire(unsigned int entries)
{
	if (entries <= 0x80)
		return (uint8_t)entries;
	if (entries > 0x7f << 8)
		entries = 0x7f << 8;
	return (uint8_t)(0x80 | (entries >> 8));
}

unsigned int rs_iomap_size_from_wire(uint8_t wire)
{
	if (wire <= 0x80)
		return wire;
	return (unsigned int)(wire & 0x7f) << 8;
}

void rs_sge_swap(struct rs_wire_sge *sge)
{
	sge->addr = bswap_64(sge->addr);
	sge->key = bswap_32(sge->key);
	sge->length = bswap_32(sge->length);
}

void rs_iomap_swap(struct rs_wire_iomap *iom)
{
	iom->offset = bswap_64(iom->offset);
	rs_sge_swap(&iom->sge);
}

size_t ds_hdr_encode(struct ds_wire_hdr *hdr, const union rs_sockaddr *addr)
{
	memset(hdr, 0, sizeof(*hdr));
	if (addr->sa.sa_family == AF_INET) {
		hdr->version = 4;
		hdr->length = DS_IPV4_HDR_LEN;
		hdr->port = addr->sin.sin_port;
		hdr->addr.ipv4 = addr->sin.sin_addr.s_addr;
	} else {
		hdr->version = 6;
		hdr->length = DS_IPV6_HDR_LEN;
		hdr->port = addr->sin6.sin6_port;
		hdr->addr.ipv6.flowinfo = addr->sin6.sin6_flowinfo;
		memcpy(hdr->addr.ipv6.addr, &addr->sin6.sin6_addr, 16);
	}
	return hdr->length;
}

size_t ds_hdr_decode(const void *buf, size_t len, union rs_sockaddr *src)
{
	struct ds_wire_hdr hdr;

	if (!buf || len < DS_IPV4_HDR_LEN)
		return 0;
	memset(&hdr, 0, sizeof(hdr));
	memcpy(&hdr, buf, len < sizeof(hdr) ? len : sizeof(hdr));
	memset(src, 0, sizeof(*src));
	if (hdr.version == 4 && hdr.length == DS_IPV4_HDR_LEN) {
		src->sin.sin_family = AF_INET;
		src->sin.sin_port = hdr.port;
		src->sin.sin_addr.s_addr = hdr.addr.ipv4;
		return DS_IPV4_HDR_LEN;
	}
	if (hdr.version == 6 && hdr.length == DS_IPV6_HDR_LEN &&
	    len >= DS_IPV6_HDR_LEN) {
		src->sin6.sin6_family = AF_INET6;
		src->sin6.sin6_port = hdr.port;
		src->sin6.sin6_flowinfo = hdr.addr.ipv6.flowinfo;
		memcpy(&src->sin6.sin6_addr, hdr.addr.ipv6.addr, 16);
		return DS_IPV6_HDR_LEN;
	}
	return 0;
}

int ds_addr_in_family(union rs_sockaddr *a, int family)
{
	union rs_sockaddr v;

	if (a->sa.sa_family == family)
		return 0;
	memset(&v, 0, sizeof(v));
	if (family == AF_INET6 && a->sa.sa_family == AF_INET) {
		v.sin6.sin6_family = AF_INET6;
		v.sin6.sin6_port = a->sin.sin_port;
		v.sin6.sin6_addr.s6_addr[10] = 0xff;
		v.sin6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&v.sin6.sin6_addr.s6_addr[12], &a->sin.sin_addr, 4);
	} else if (family == AF_INET && a->sa.sa_family == AF_INET6 &&
		   IN6_IS_ADDR_V4MAPPED(&a->sin6.sin6_addr)) {
		v.sin.sin_family = AF_INET;
		v.sin.sin_port = a->sin6.sin6_port;
		memcpy(&v.sin.sin_addr, &a->sin6.sin6_addr.s6_addr[12], 4);
	} else {
		return -1;
	}
	*a = v;
	return 0;
}

size_t ds_udp_hdr_encode(struct ds_wire_udp_hdr *hdr, uint8_t op, uint32_t qpn,
			 const union rs_sockaddr *src)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->tag = htonl(DS_UDP_TAG);
	hdr->op = op;
	hdr->qpn = htonl(qpn & 0xffffff);
	if (src->sa.sa_family == AF_INET) {
		hdr->version = 4;
		hdr->length = DS_UDP_IPV4_HDR_LEN;
		hdr->addr.ipv4 = src->sin.sin_addr.s_addr;
	} else {
		hdr->version = 6;
		hdr->length = DS_UDP_IPV6_HDR_LEN;
		memcpy(hdr->addr.ipv6, &src->sin6.sin6_addr, 16);
	}
	return hdr->length;
}

size_t ds_udp_hdr_decode(const void *buf, size_t len, int from_family,
			 uint8_t *op, uint32_t *qpn)
{
	struct ds_wire_udp_hdr hdr;

	if (!buf || len < DS_UDP_IPV4_HDR_LEN)
		return 0;
	memset(&hdr, 0, sizeof(hdr));
	memcpy(&hdr, buf, len < sizeof(hdr) ? len : sizeof(hdr));
	if (ntohl(hdr.tag) != DS_UDP_TAG)
		return 0;
	if (!(hdr.version == 4 && from_family == AF_INET &&
	      hdr.length == DS_UDP_IPV4_HDR_LEN) &&
	    !(hdr.version == 6 && from_family == AF_INET6 &&
	      hdr.length == DS_UDP_IPV6_HDR_LEN))
		return 0;
	if (len < hdr.length)
		return 0;
	if (hdr.op != RS_OP_DATA && hdr.op != RS_OP_CTRL)
		return 0;
	*op = hdr.op;
	*qpn = ntohl(hdr.qpn) & 0xffffff;
	return hdr.length;
}

int ds_ud_msg_parse(const void *buf, size_t byte_len, size_t bufsize,
		    struct ds_ud_msg *m)
{
	size_t hlen;

	if (!buf || byte_len > bufsize || byte_len < DS_WIRE_GRH_LEN)
		return -1;
	hlen = ds_hdr_decode((const uint8_t *)buf + DS_WIRE_GRH_LEN,
			     byte_len - DS_WIRE_GRH_LEN, &m->src);
	if (!hlen)
		return -1;
	m->offset = (uint32_t)(DS_WIRE_GRH_LEN + hlen);
	m->length = (uint32_t)(byte_len - m->offset);
	return 0;
}

int ds_udp_msg_parse(const void *buf, size_t len, int from_family,
		     struct ds_udp_msg *m)
{
	size_t hlen = ds_udp_hdr_decode(buf, len, from_family, &m->op, &m->qpn);

	/* QP numbers 0 and 1 are the management QPs: never a peer's. */
	if (!hlen || m->qpn < 2)
		return -1;
	if (len - hlen > DS_MSG_SIZE)
		return -1;
	m->offset = (uint32_t)hlen;
	m->length = m->op == RS_OP_DATA ? (uint32_t)(len - hlen) : 0;
	return 0;
}
