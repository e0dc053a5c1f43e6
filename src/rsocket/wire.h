/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The rsocket wire protocol, byte for byte the one rdma-core's rsockets
 * speak, so that either end of a connection may run either library.
 *
 * Stream sockets (RC QPs) exchange struct rs_wire_conn as connection private
 * data, then move bytes with RDMA writes into the peer's receive buffer.
 * Every write that the peer must notice carries a 32-bit immediate: the top
 * 3 bits say what it is (enum rs_op), the low 29 bits carry a byte count, a
 * credit limit, an iomap index or a control code.
 *
 * Datagram sockets (UD QPs) prefix each datagram with struct ds_wire_hdr
 * (the sender's IP address and port); the first datagrams to an unknown
 * peer travel over UDP behind struct ds_wire_udp_hdr, which also tells the
 * receiver the sender's UD QP number.
 *
 * The functions here are pure: they take bytes and lengths and never trust
 * what they parse.  They are unit-tested and fuzzed.
 */
#ifndef RS_WIRE_H
#define RS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

/* --- immediate data ------------------------------------------------------ */

enum rs_op {
	RS_OP_DATA = 0, /* data written; low bits: its length */
	RS_OP_RSVD_DATA_MORE = 1,
	RS_OP_WRITE = 2, /* never sent: marks local riowrite completions */
	RS_OP_RSVD_DRA_MORE = 3,
	RS_OP_SGL = 4, /* credits; low bits: new send sequence limit */
	RS_OP_RSVD = 5,
	RS_OP_IOMAP_SGL = 6, /* an iomap slot was written; low bits: index */
	RS_OP_CTRL = 7, /* low bits: enum rs_ctrl */
};

enum rs_ctrl {
	RS_CTRL_DISCONNECT = 0,
	RS_CTRL_KEEPALIVE = 1,
	RS_CTRL_SHUTDOWN = 2,
	/*
	 * This library's own (quiesce.c), sent only to a peer that
	 * advertised RS_CONN_FLAG_QUIESCE: the sender's last RDMA message.
	 */
	RS_CTRL_QUIESCE = 3,
};

#define RS_MSG_DATA_MASK 0x1fffffffu

static inline uint32_t rs_msg(enum rs_op op, uint32_t data)
{
	return ((uint32_t)op << 29) | (data & RS_MSG_DATA_MASK);
}

static inline enum rs_op rs_msg_op(uint32_t msg)
{
	return (enum rs_op)(msg >> 29);
}

static inline uint32_t rs_msg_data(uint32_t msg)
{
	return msg & RS_MSG_DATA_MASK;
}

/*
 * Where the transport has no immediate data (iWARP), a message travels as
 * the payload of a SEND of RS_MSG_SEND_SIZE bytes, after the RDMA write (if
 * any) it describes.  The 32 bits are in the sender's byte order, as
 * rdma-core writes them; a receiver that knows the peer's order differs
 * (@swap) converts.  Decoding returns -1 for a payload too short to hold one.
 */
#define RS_MSG_SEND_SIZE 4

void rs_msg_send_encode(uint8_t out[RS_MSG_SEND_SIZE], uint32_t msg);
int rs_msg_send_decode(const void *buf, size_t len, bool swap, uint32_t *msg);

/* --- stream connection data ---------------------------------------------- */

#define RS_WIRE_VERSION 1
#define RS_CONN_FLAG_NET 0x01 /* the sender is big-endian */
#define RS_CONN_FLAG_IOMAP 0x02 /* target_iomap_size is meaningful */
/* The sender understands RS_CTRL_QUIESCE (rdma-core's ignore the bit). */
#define RS_CONN_FLAG_QUIESCE 0x04
/* Entries in the target SGL each side advertises. */
#define RS_SGL_SIZE 2

/* A remote buffer: written in the writer's byte order into SGL slots. */
struct rs_wire_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* One iomap slot: the peer may write at offset .. offset + sge.length. */
struct rs_wire_iomap {
	uint64_t offset;
	struct rs_wire_sge sge;
};

/* Connection private data; every multi-byte field in network order. */
struct rs_wire_conn {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t target_iomap_size; /* rs_iomap_size_to_wire() */
	struct rs_wire_sge target_sgl; /* addr, rkey, entry count */
	struct rs_wire_sge data_buf; /* the first receive buffer */
};

_Static_assert(sizeof(struct rs_wire_sge) == 16, "rs_wire_sge");
_Static_assert(sizeof(struct rs_wire_iomap) == 24, "rs_wire_iomap");
_Static_assert(sizeof(struct rs_wire_conn) == 40, "rs_wire_conn");

/* What one side tells the other at connection time, in host order. */
struct rs_conn_params {
	uint16_t credits;
	bool big_endian; /* the peer's byte order */
	bool has_iomap;
	bool can_quiesce; /* RS_CONN_FLAG_QUIESCE */
	uint16_t iomap_size; /* entries in the peer's target iomap */
	struct rs_wire_sge target_sgl; /* .length: entries in the SGL */
	struct rs_wire_sge data_buf;
};

void rs_conn_encode(struct rs_wire_conn *out, const struct rs_conn_params *p);
/*
 * Parse connection private data of @len bytes.  0, or -1 with errno EINVAL
 * (too short or inconsistent) or ENOTSUP (another protocol version).
 */
int rs_conn_decode(const void *buf, size_t len, struct rs_conn_params *p);

/* The 8-bit encoding of an iomap size: exact up to 128, coarse above. */
uint8_t rs_iomap_size_to_wire(unsigned int entries);
unsigned int rs_iomap_size_from_wire(uint8_t wire);

static inline bool rs_host_big_endian(void)
{
	return htonl(1) == 1;
}

/* Convert an SGE or iomap slot between host order and the peer's order. */
void rs_sge_swap(struct rs_wire_sge *sge);
void rs_iomap_swap(struct rs_wire_iomap *iom);

/*
 * 16-bit sequence arithmetic of the credit scheme: the sender may post
 * data while its sequence number differs from the limit the receiver
 * granted, and the receiver grants more once it has consumed half.
 */
static inline bool rs_seq_reached(uint16_t seq, uint16_t limit)
{
	return (int16_t)(uint16_t)(seq - limit) >= 0;
}

/* --- datagrams ----------------------------------------------------------- */

#define DS_UDP_TAG 0x55555555u
#define DS_IPV4_HDR_LEN 8
#define DS_IPV6_HDR_LEN 24
#define DS_UDP_IPV4_HDR_LEN 16
#define DS_UDP_IPV6_HDR_LEN 28
/* The largest datagram payload plus header one UD receive buffer holds. */
#define DS_MSG_SIZE 2048

/* Ahead of every datagram on a UD QP: who sent it. */
struct ds_wire_hdr {
	uint8_t version; /* 4 or 6 */
	uint8_t length; /* DS_IPV4_HDR_LEN or DS_IPV6_HDR_LEN */
	uint16_t port; /* network order */
	union {
		uint32_t ipv4;
		struct {
			uint32_t flowinfo;
			uint8_t addr[16];
		} ipv6;
	} addr;
};

/* Ahead of datagrams sent over UDP while the peer's QP is unknown. */
struct ds_wire_udp_hdr {
	uint32_t tag; /* DS_UDP_TAG, network order */
	uint8_t version;
	uint8_t op; /* RS_OP_DATA (payload follows) or RS_OP_CTRL (reply) */
	uint8_t length; /* DS_UDP_IPV4_HDR_LEN or DS_UDP_IPV6_HDR_LEN */
	uint8_t reserved;
	uint32_t qpn; /* network order, low 24 bits */
	union {
		uint32_t ipv4;
		uint8_t ipv6[16];
	} addr;
};

_Static_assert(sizeof(struct ds_wire_hdr) == 24, "ds_wire_hdr");
_Static_assert(sizeof(struct ds_wire_udp_hdr) == 28, "ds_wire_udp_hdr");

union rs_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr_storage ss;
};

/* Fill @hdr for a sender bound to @addr; returns the header length. */
size_t ds_hdr_encode(struct ds_wire_hdr *hdr, const union rs_sockaddr *addr);
/*
 * Parse the header at the start of a received datagram of @len bytes into
 * the sender's address; returns the header length, or 0 if malformed.
 */
size_t ds_hdr_decode(const void *buf, size_t len, union rs_sockaddr *src);

/*
 * Write @a in @family, as a socket of that family names a sender: an IPv4
 * address as IPv4-mapped IPv6, an IPv4-mapped IPv6 one as IPv4.  0, or -1
 * when it has no such form (IPv6 for an IPv4 socket).
 */
int ds_addr_in_family(union rs_sockaddr *a, int family);

/* Build the UDP header for @qpn sending from @src; returns its length. */
size_t ds_udp_hdr_encode(struct ds_wire_udp_hdr *hdr, uint8_t op, uint32_t qpn,
			 const union rs_sockaddr *src);
/*
 * Parse a UDP-carried header of a datagram of @len bytes that arrived from
 * an address of family @from_family.  Returns the header length (the
 * payload follows it) and the op and QP number, or 0 if malformed.
 */
size_t ds_udp_hdr_decode(const void *buf, size_t len, int from_family,
			 uint8_t *op, uint32_t *qpn);

/* The GRH every UD receive starts with, present or not on the wire. */
#define DS_WIRE_GRH_LEN 40

/* A datagram received on a UD QP, as the receive buffer holds it. */
struct ds_ud_msg {
	union rs_sockaddr src; /* the sender's rsocket address */
	uint32_t offset; /* of the payload, from the start of the buffer */
	uint32_t length; /* payload bytes */
};

/*
 * Parse a UD receive of @byte_len bytes (the completion's count, GRH
 * included) in a buffer of @bufsize bytes.  0, or -1 if malformed: too
 * short, longer than the buffer, or a header that is not a valid
 * struct ds_wire_hdr.
 */
int ds_ud_msg_parse(const void *buf, size_t byte_len, size_t bufsize,
		    struct ds_ud_msg *m);

/* A message received on an rsocket's UDP socket. */
struct ds_udp_msg {
	uint8_t op; /* RS_OP_DATA or RS_OP_CTRL */
	uint32_t qpn; /* the sender's UD QP */
	uint32_t offset; /* of the payload (RS_OP_DATA) */
	uint32_t length;
};

/*
 * Parse a UDP message of @len bytes from an address of family
 * @from_family.  0, or -1 if malformed: wrong tag, version, length or op,
 * a reserved QP number (0 or 1), or a payload larger than DS_MSG_SIZE.
 */
int ds_udp_msg_parse(const void *buf, size_t len, int from_family,
		     struct ds_udp_msg *m);

#endif /* RS_WIRE_H */
