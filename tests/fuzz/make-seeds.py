#!/usr/bin/env python3
# Writes the hand-made seed inputs of the fuzz targets in this directory
# into corpus/<target>/.  The layouts are the ones each target's header
# comment describes; sizes are those of the x86_64 kernel ABI structures.
# Run it again after changing a target's input layout; with target names
# as arguments only those targets' seeds are written.
import os
import struct
import socket
import sys

here = os.path.dirname(os.path.abspath(__file__))
only = set(sys.argv[1:])


def put(target, name, data):
    if only and target not in only:
        return
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- options: flags, level, optname, value --------------------------------
def opt(flags, level, name, value):
    return struct.pack("<BiI", flags, level, name) + value


put("options", "tos", opt(0, 0, 0, b"\x20"))
put("options", "reuseaddr", opt(0, 0, 1, struct.pack("<i", 1)))
put("options", "afonly", opt(0, 0, 2, struct.pack("<i", 1)))
put("options", "ack_timeout", opt(0, 0, 3, b"\x0e"))
put("options", "ib_path", opt(0, 1, 1, bytes(72)))
put("options", "ib_two_paths", opt(0, 1, 1, bytes(144)))
put("options", "null_value", opt(1, 0, 0, b"\x20"))
put("options", "bad_level", opt(0, 7, 0, b"\x00"))


# --- getaddrinfo: 5 header bytes, then length-prefixed parts -------------
def part(b):
    return bytes([len(b)]) + b


def sin(addr, port):
    return struct.pack("<H", socket.AF_INET) + struct.pack(">H", port) + \
        socket.inet_pton(socket.AF_INET, addr) + bytes(8)


def sin6(addr, port):
    return struct.pack("<H", socket.AF_INET6) + struct.pack(">HI", port, 0) + \
        socket.inet_pton(socket.AF_INET6, addr) + struct.pack("<I", 0)


def sib(sid):
    # sockaddr_ib: family, pkey, flowinfo, gid, sid, sid_mask, scope_id
    return struct.pack("<HHI", 27, 0xffff, 0) + bytes(15) + b"\x01" + \
        struct.pack(">QQ", sid, 0xffffffffffffffff) + struct.pack("<Q", 0)


PRESENT_SRC, PRESENT_DST, PRESENT_ROUTE, PRESENT_CONNECT = 1, 2, 4, 8
PRESENT_NODE, PRESENT_SERVICE, ZERO_LEN, NO_HINTS = 16, 32, 64, 128

put("getaddrinfo", "ipv4_active",
    bytes([0, 1, 0, 1, PRESENT_NODE | PRESENT_SERVICE]) +
    part(b"192.0.2.1") + part(b"7471"))
put("getaddrinfo", "ipv6_passive",
    bytes([1, 2, 0, 1, PRESENT_NODE | PRESENT_SERVICE]) +
    part(b"2001:db8::1") + part(b"7471"))
put("getaddrinfo", "ipv6_scope",
    bytes([0, 0, 0, 0, PRESENT_NODE]) + part(b"fe80::1%lo"))
put("getaddrinfo", "service_name_udp",
    bytes([1, 0, 4, 2, PRESENT_SERVICE]) + part(b"echo"))
put("getaddrinfo", "no_hints_service",
    bytes([0, 0, 0, 0, PRESENT_SERVICE | NO_HINTS]) + part(b"7471"))
put("getaddrinfo", "src_and_node",
    bytes([0, 0, 0, 0, PRESENT_SRC | PRESENT_NODE | PRESENT_SERVICE]) +
    part(sin("192.0.2.2", 0)) + part(b"192.0.2.1") + part(b"1"))
put("getaddrinfo", "af_ib_hints",
    bytes([8, 3, 0, 3, PRESENT_DST | PRESENT_ROUTE | PRESENT_CONNECT]) +
    part(sib(0x0106000000001234)) + part(bytes(72)) + part(b"hello"))
put("getaddrinfo", "ipv6_hint_zero_len",
    bytes([0, 0, 0, 0, PRESENT_DST | ZERO_LEN]) +
    part(sin6("2001:db8::2", 7471)))


# --- event: per GET_EVENT 2 selectors + event_resp, then query answers ----
RESP = 336
PARAM = 20


def event(ev, subject, status=0, pdata=b"", extra=b""):
    resp = bytearray(RESP)
    struct.pack_into("<QIII", resp, 0, 0, 5, ev, status & 0xffffffff)
    if pdata:
        resp[PARAM:PARAM + len(pdata)] = pdata
        resp[PARAM + 264] = len(pdata)
    return bytes([ev, subject]) + bytes(resp) + extra


def query_route(num_paths, guid=0):
    r = bytearray(208)
    struct.pack_into("<Q", r, 0, guid)
    r[8:8 + 16] = sin("192.0.2.2", 7471)
    r[136:136 + 16] = sin("192.0.2.1", 7471)
    struct.pack_into("<I", r, 192, num_paths)
    r[196] = 1  # port_num
    return bytes(r)


put("event", "addr_resolved", event(0, 1, extra=query_route(1)))
put("event", "route_resolved_two_paths", event(2, 1, extra=query_route(2)))
put("event", "established_pdata", event(9, 1, pdata=b"welcome"))
put("event", "rejected", event(8, 1, status=28, pdata=b"go away"))
put("event", "conn_request",
    event(4, 0, pdata=b"hi") + query_route(1, guid=0x1122334455667788))
put("event", "ud_established", event(9, 2, pdata=b"ud"))
put("event", "mcast_join", event(12, 1))
put("event", "mcast_error", event(13, 0, status=-110))
put("event", "sequence",
    event(0, 1, extra=query_route(1)) + event(2, 1, extra=query_route(1)) +
    event(9, 1) + event(10, 1) + event(15, 1))


# --- ds_msg: selector byte, then a UD receive or a UDP resolver message ---
def ds_hdr4(addr, port):
    return struct.pack("!BBH", 4, 8, port) + socket.inet_aton(addr)


def ds_hdr6(addr, port):
    return (struct.pack("!BBHI", 6, 24, port, 0) +
            socket.inet_pton(socket.AF_INET6, addr))


def ds_udp(op, qpn, family, addr):
    if family == socket.AF_INET:
        return struct.pack("!IBBBBI", 0x55555555, 4, op, 16, 0, qpn) + \
            socket.inet_aton(addr)
    return struct.pack("!IBBBBI", 0x55555555, 6, op, 28, 0, qpn) + \
        socket.inet_pton(socket.AF_INET6, addr)


grh = bytes(40)
put("ds_msg", "ud4", b"\x00" + grh + ds_hdr4("192.0.2.2", 7472) + b"ping")
put("ds_msg", "ud6", b"\x00" + grh + ds_hdr6("2001:db8::2", 7472) + b"ping")
put("ds_msg", "ud4_empty", b"\x00" + grh + ds_hdr4("192.0.2.2", 1))
put("ds_msg", "udp4_data",
    b"\x01" + ds_udp(0, 0x11, socket.AF_INET, "192.0.2.2") + b"hello")
put("ds_msg", "udp4_ctrl",
    b"\x01" + ds_udp(7, 0x12, socket.AF_INET, "192.0.2.1"))
put("ds_msg", "udp6_data",
    b"\x03" + ds_udp(0, 0x13, socket.AF_INET6, "2001:db8::2") + b"hello")


# --- rs_stream: 9 header bytes, the peer's connect data, operations -------
def rs_hdr(flags, sq=64, rq=64, inline=64, shift=0x11, iomap=0):
    return struct.pack("<BHHHBB", flags, sq, rq, inline, shift, iomap)


def rs_conn(credits=64, iomap=0, sgl_len=2, buf_len=4096, flags=0):
    flags |= 0x02 if iomap else 0
    return struct.pack("!BBH3sB", 1, flags, credits, bytes(3), iomap) + \
        struct.pack("!QII", 0x10000, 7, sgl_len) + \
        struct.pack("!QII", 0x20000, 8, buf_len)


def rs_imm(op, data):
    return (op << 29) | data


def rs_msg_op(op, data, flags=0):  # a receive completes
    return b"\x00" + bytes([flags]) + struct.pack("!I", rs_imm(op, data))


def rs_send(n):
    return b"\x04" + struct.pack("<H", n // 2)


def rs_recv(n, flags=0):
    return b"\x05" + bytes([flags]) + struct.pack("<H", n // 2)


def rs_target(off, data):
    return b"\x03" + struct.pack("<HB", off, len(data)) + data


RS_DATA, RS_SGL, RS_IOMAP_SGL, RS_CTRL = 0, 4, 6, 7
put("rs_stream", "echo",
    rs_hdr(0) + rs_conn() + rs_send(1000) + b"\x02\x01" +
    rs_msg_op(RS_DATA, 100) + rs_recv(200) + rs_msg_op(RS_SGL, 64))
put("rs_stream", "iwarp",
    rs_hdr(1) + rs_conn() + rs_send(3000) + b"\x02\x02" +
    rs_msg_op(RS_DATA, 10, flags=16) + rs_recv(64, 2))
put("rs_stream", "iwarp_passive",
    rs_hdr(3) + rs_conn() + rs_msg_op(RS_DATA, 0, flags=16) + rs_send(64))
put("rs_stream", "refill_sgl",
    rs_hdr(0) + rs_conn(buf_len=2048) + rs_send(2048) + rs_send(100) +
    rs_target(16, struct.pack("<QII", 0x30000, 9, 2048)) + rs_send(100) +
    b"\x02\x81")
put("rs_stream", "iomap",
    rs_hdr(0, iomap=4) + rs_conn(iomap=4) + b"\x07\x00" +
    struct.pack("<Q", 4096) + rs_send(10) +
    rs_target(32, struct.pack("<QQII", 0, 0x40000, 3, 4096)) +
    b"\x06" + struct.pack("<HQ", 512, 100) + b"\x02\x10" +
    rs_msg_op(RS_IOMAP_SGL, 0))
put("rs_stream", "extremes",
    rs_hdr(8, sq=0xffff, rq=1, inline=0xffff, shift=0x77, iomap=0xff) +
    rs_conn(credits=0xffff, iomap=0xff, sgl_len=0xffffffff,
            buf_len=0xffffffff, flags=1) +
    rs_send(0x1fffe) + rs_msg_op(RS_DATA, 0x1fffffff) +
    rs_msg_op(RS_CTRL, 2) + rs_recv(0x1fffe, 2))
put("rs_stream", "disconnect",
    rs_hdr(0) + rs_conn() + rs_msg_op(RS_CTRL, 0) + rs_send(10) +
    rs_recv(10))


# --- ds_udp: flags, then messages (sender, fromlen, length, bytes) --------
def ds_from4(addr, port, msg, flen=16):
    return b"\x00" + struct.pack("!H", port) + socket.inet_aton(addr) + \
        bytes([flen]) + struct.pack("<H", len(msg)) + msg


def ds_from6(addr, port, msg, flen=28):
    return b"\x01" + struct.pack("!H", port) + \
        socket.inet_pton(socket.AF_INET6, addr) + bytes([flen]) + \
        struct.pack("<H", len(msg)) + msg


def ds_route(npaths=1, rec=b""):
    return bytes([npaths << 1 | 1]) + (rec + bytes(24))[:24]


ds_end = b"\x04"  # the drain ends; then the resolutions' route answers
data4 = ds_udp(0, 0x11, socket.AF_INET, "192.0.2.2") + b"hello"
put("ds_udp", "data4", b"\x00" + ds_from4("192.0.2.2", 7472, data4) +
    ds_end + ds_route() + ds_from4("192.0.2.2", 7472, data4))
put("ds_udp", "reply4", b"\x00" + ds_from4(
    "192.0.2.3", 7473, ds_udp(7, 0x22, socket.AF_INET, "192.0.2.3")) +
    ds_end + ds_route(0))
put("ds_udp", "data6_any", b"\x03" + ds_from6(
    "2001:db8::2", 7472, ds_udp(0, 0x13, socket.AF_INET6, "2001:db8::2") +
    b"hi") + ds_end + ds_route(2, b"\xfe\x80" + bytes(14)))
put("ds_udp", "new_qpn", b"\x00" +
    ds_from4("192.0.2.2", 7472, data4) + ds_end + ds_route() +
    ds_from4("192.0.2.2", 7472,
             ds_udp(0, 0x12, socket.AF_INET, "192.0.2.2")) + ds_end)
put("ds_udp", "unresolved", b"\x04" + ds_from4("192.0.2.9", 1, data4) +
    ds_from4("192.0.2.9", 1, data4, flen=2))
# A bound of 2 destinations (flags 0x10) and three senders: one evicted.
put("ds_udp", "bound_evicts", b"\x10" +
    ds_from4("192.0.2.2", 7472, data4) + ds_from4("192.0.2.4", 7472, data4) +
    ds_end + ds_route() + ds_route() +
    ds_from4("192.0.2.5", 7472, data4) + ds_end + ds_route() +
    ds_from4("192.0.2.2", 7472, data4))


# --- env: records of selector, length, value ------------------------------
def env(sel, value):
    return bytes([sel, len(value)]) + value


put("env", "rs_sizes", env(3, b"1024") + env(4, b"0x40") + env(5, b"65536") +
    env(7, b"300"))
put("env", "rs_files", env(0x80, b"100\n") + env(0x85, b"4096") +
    env(0x87, b" 129 ") + env(5, b"1e3"))
put("env", "rs_huge", env(0, b"99999999999999999999") + env(1, b"-1") +
    env(2, b"0xffffffff") + env(6, b"0"))
put("env", "preload", env(8, b"0") + env(9, b"256") + env(13, b"1048576") +
    env(14, b"7471,5201-5210,80"))
put("env", "preload_bad_ports", env(14, b"7471-70,x") + env(12, b"-5"))
put("env", "acm", env(15, b"1") + env(16, b"cache,,sa,bogus,table") +
    env(17, b"86401") + env(19, b"0") + env(20, b"07"))


# --- acm_service: mode byte, then a service string, port file or answer ---
put("acm_service", "unix", b"\x00unix:/run/ibacm.sock")
put("acm_service", "path", b"\x00/var/run/ibacm-test.sock")
put("acm_service", "tcp", b"\x00tcp:6125")
put("acm_service", "none", b"\x00none")
put("acm_service", "port_file", b"\x016125\n")
put("acm_service", "port_file_open", b"\x046125\n")
put("acm_service", "port_file_junk", b"\x0165536")
acm_hdr = struct.pack("<BBBBBBHQ", 1, 0x81, 0, 0, 0, 0, 16 + 72 * 2, 7)
put("acm_service", "answer", b"\x02" + acm_hdr + bytes(72 * 2))
put("acm_service", "answer_short", b"\x02" + acm_hdr + bytes(72))


# --- p2p: flags, then operations (see p2p_fuzz.c) -------------------------
# ids: the listener is kernel id 1; later ids count up from 2.
# The library's own tags count from 1 per peer: a peer's first is 1 too.
def p2p_req(frm=0, kind=0, tag=1, dlen=0):  # kind: 0/1 p2p, 2 plain, 3 raw
    return bytes([0, frm | kind << 2, tag << 4]) + \
        (bytes([dlen]) if kind < 2 else b"")


def p2p_connect(to=0, tag=None):
    return bytes([1, to | (4 | tag << 3 if tag is not None else 0)])


# ev: 0 REJ 1 EST 2 REP 3 DISC; kind: 0 none 1 REP 2 LOST 3 DUP 4 BAD 5 REQ
def p2p_event(kid, ev, kind=0, tag=1, dlen=0):
    return bytes([2, kid - 1, ev, kind | tag << 3]) + \
        (bytes([dlen]) if kind in (1, 2, 3, 4, 5) else b"")


p2p_time = b"\x03\xff"
put("p2p", "held_then_adopted", b"\x00" + p2p_req() + p2p_connect() +
    p2p_event(2, 1))
put("p2p", "crossing", b"\x00" + p2p_connect() + p2p_req() +
    p2p_event(3, 2, kind=1) + p2p_event(2, 1))
put("p2p", "crossing_lost", b"\x00" + p2p_connect(1) + p2p_req(1) +
    p2p_event(3, 0, kind=2) + p2p_time + p2p_event(2, 1))
put("p2p", "hold_expires", b"\x00" + p2p_req(2) + p2p_time + b"\x05\x00" +
    p2p_event(2, 1) + b"\x07\x00")
put("p2p", "connect_times_out", b"\x00" + p2p_connect(2) + p2p_time +
    p2p_time + p2p_time)
put("p2p", "held_by_option", b"\x03" + p2p_req(0, kind=1, tag=2) +
    p2p_connect(0, tag=2) + p2p_event(2, 1))
put("p2p", "listener_destroyed", b"\x00" + p2p_req() + p2p_req(1) +
    b"\x04\xff" + p2p_time)
put("p2p", "plain_and_raw", b"\x00" + p2p_req(0, kind=2) + b"\x05\x01" +
    p2p_req(0, kind=3) + bytes([20]) + b"RDMAP2P\x01" + bytes(12))
put("p2p", "kernel_fails", b"\x00" + b"\x06\x00" + p2p_req() +
    p2p_connect() + b"\x06\x03" + b"\x04\x00" + p2p_event(2, 0, kind=4))
# A crossing with .2 (we are the higher end): its request is held until
# the peer refuses our REQ, then adopted; ESTABLISHED on the request's id.
put("p2p", "crossing_refused_adopts", b"\x00" + p2p_connect() + p2p_req() +
    p2p_event(2, 0, kind=2) + p2p_event(3, 1))
# The same with the kernel failing the adoption's ACCEPT (what
# known/p2p-adopt-accept-fails once did while our REQ was still out).
put("p2p", "crossing_adopt_accept_fails", b"\x00" + p2p_connect() +
    p2p_req() + b"\x06\x00" + p2p_event(2, 0, kind=2) + b"\x04\x00")
# Version-1 headers (16 bytes, dlen bit 3), and a peer that restarts: the
# same tag from a new incarnation (dlen bits 4-5).
put("p2p", "v1_request", b"\x00" + p2p_req(0, dlen=8) + p2p_connect() +
    p2p_event(2, 1))
put("p2p", "peer_restarted", b"\x00" + p2p_req(0, dlen=0x10) +
    p2p_connect() + p2p_event(2, 1) + p2p_req(0, dlen=0x20) + p2p_time)
put("p2p", "duplicate", b"\x00" + p2p_req() + p2p_connect() +
    p2p_event(2, 1) + p2p_req() + p2p_event(3, 3))


# --- ds_recv: 4 header bytes, then operations (see ds_recv_fuzz.c) --------
def dr_hdr(flags=0, rq=8, sq=8, max_wr=16):
    return bytes([flags, rq, sq, max_wr])


def dr_ud(peer=0, qpn_peer=0, length=4, slot=0, status=0):
    return bytes([0, slot, status, peer, qpn_peer]) + struct.pack("<H", length)


def dr_udp(peer=0, ctrl=False, qpn_peer=0, length=5):
    return bytes([2, peer, 1 if ctrl else 0, qpn_peer]) + \
        struct.pack("<H", length)


def dr_done(n=1):
    return bytes([3, n])


def dr_recv(flags=0, length=64):
    return bytes([4, flags]) + struct.pack("<H", length)


def dr_send(peer=0, length=5):
    return bytes([5, peer]) + struct.pack("<H", length)


put("ds_recv", "udp_then_qp", dr_hdr() + dr_udp() + dr_recv() + dr_send() +
    dr_done() + dr_ud() + dr_recv())
# Peer 0 known by its QP; a claim of peer 1's QP from peer 0's address puts
# it in doubt (over UDP), a datagram from its own QP settles it.
put("ds_recv", "spoofed_claim", dr_hdr() + dr_udp() + dr_recv() +
    dr_send() + dr_done() + dr_udp(ctrl=True, qpn_peer=1) + dr_recv() +
    dr_send() + dr_ud() + dr_recv() + dr_send() + dr_done())
put("ds_recv", "ipv6_roce", dr_hdr(flags=3) + dr_udp(peer=1, qpn_peer=1) +
    dr_recv(flags=4) + dr_send(peer=1) + dr_ud(peer=1, qpn_peer=1) +
    dr_recv(flags=1) + dr_recv(flags=2, length=2))
put("ds_recv", "connected", dr_hdr(rq=2, sq=2) + bytes([6, 2]) +
    dr_udp(peer=2, qpn_peer=2) + dr_send(peer=8) + dr_send(peer=8) +
    dr_send(peer=8) + dr_done(0x80) + dr_ud(peer=2, status=0xff) +
    dr_recv())
put("ds_recv", "shut_down", dr_hdr() + dr_udp() + bytes([7, 0x0d]) +
    dr_ud() + dr_recv() + dr_send() + bytes([7, 0]) + bytes([7, 2]))


# --- rs_conn: flags [sizes], then operations (see rs_conn_fuzz.c) ---------
RC_ADDR_OK, RC_ADDR_ERR, RC_ROUTE_OK, RC_ROUTE_ERR, RC_EST, RC_REJ = range(6)
RC_DISC = 8


def rc_event(ev, status=0, data=None):  # data: None, "real" or bytes
    b = bytes([1, ev, status])
    if ev in (RC_EST, RC_REJ, 9):
        b += rc_data(data)
    return b


def rc_data(data):
    if data == "real":
        return b"\x01"
    data = data or b""
    return bytes([0, len(data)]) + data


rc_resolved = bytes([0, 0]) + rc_event(RC_ADDR_OK) + rc_event(RC_ROUTE_OK)
rc_accept = bytes([4, 28, 1])
put("rs_conn", "handshake", b"\x00" + rc_resolved + bytes([3, 0x11]) +
    rc_data("real") + rc_accept + rc_event(RC_EST, data="real") +
    bytes([5, 0, RC_EST, 0]) + rc_data("real") + bytes([7, 0]))
put("rs_conn", "ipv6_sizes", b"\x06" + bytes([64, 32, 0]) + rc_resolved +
    bytes([3, 0]) + rc_data("real") + rc_accept +
    rc_event(RC_EST, data=bytes(40)))
put("rs_conn", "refused", b"\x00" + rc_resolved +
    rc_event(RC_REJ, 28, data=b"go away") + bytes([0, 0]))
put("rs_conn", "retried", b"\x00" + bytes([0, 0]) +
    rc_event(RC_ADDR_ERR, 0x80) + rc_event(RC_ADDR_OK) +
    rc_event(RC_ROUTE_ERR, 0x80) + rc_event(RC_ROUTE_OK) +
    rc_event(RC_DISC))
put("rs_conn", "foreign_request", b"\x00" + bytes([3, 0]) +
    rc_data(b"not an rsocket") + rc_accept + bytes([3, 0]) +
    rc_data(bytes(40)) + rc_accept)
put("rs_conn", "kernel_fails", b"\x00" + bytes([6, 1, 0]) + rc_resolved +
    bytes([3, 0]) + rc_data("real") + bytes([6, 4, 1]) + rc_accept +
    bytes([6, 7, 2]) + bytes([3, 0]) + rc_data("real") + rc_accept)
put("rs_conn", "self_connect", b"\x00" + bytes([3, 0]) + rc_data("real") +
    rc_resolved + bytes([3, 0]) + rc_data("real") +
    rc_event(RC_EST, data="real") + bytes([7, 0x80]))


# --- acm_cm: flags, the port, then operations (see acm_cm_fuzz.c) --------
# GIDs by selector: 0 us (RoCE IPv4), 1 roce4, 2 us (RoCE IPv6), 3 roce6,
# 4 us (InfiniBand), 5 ibnode, 6 nobody.
def ac_port(lid=0, sm_lid=0, width=1, speed=1, gid0=0, gid1=2):
    return bytes([lid, sm_lid, 0, width, speed, gid0 | gid1 << 4])


def ac_lookup(node=0, hints=0, src=0, service=0):
    return bytes([0, node, hints, src << 4 | service])


def ac_answer(paths):  # paths: list of (sgid, dgid)
    b = bytes([len(paths)])
    for s, d in paths:
        b += bytes([0x0c, 0x07]) + bytes(64) + bytes([s | d << 4])
    return b


def ac_resolve(ipv6=False, peer=True, src=1, sgid=0, dgid=1, fail=False):
    d = (1 if ipv6 else 0) | (2 if peer else 0) | (4 if fail else 0)
    return bytes([3, d, src, sgid | dgid << 4])


put("acm_cm", "table_roce4", b"\x08" + ac_port() + ac_lookup() +
    ac_resolve())
put("acm_cm", "service_ib", b"\x05" +
    ac_port(1, 2, 2, 1, 4, 4) + ac_lookup(2, 0x30, 0, 1) +
    ac_answer([(4, 5)]))
put("acm_cm", "cache_then_hit", b"\x06" + ac_port() + ac_lookup(0) +
    ac_answer([(0, 1), (0, 1)]) + ac_lookup(0) + ac_resolve() +
    ac_answer([(0, 1)]))
put("acm_cm", "numeric_gets_route", b"\x0e" + ac_port() +
    ac_lookup(4, 0, 1, 1) + ac_answer([(0, 1)]) +
    ac_resolve(fail=True) + ac_answer([(0, 1)]))
put("acm_cm", "service_refuses", b"\x1e" + ac_port(gid0=2, gid1=0) +
    ac_lookup(1, 0x20) + ac_resolve(True, True, 2, 2, 3))
put("acm_cm", "create_ep", b"\x08" + ac_port() + b"\x02" +
    ac_lookup()[1:] + b"\x00" + ac_lookup(0, 0x04))


# --- preload: flags [ports] [sizes] [rules], operations (preload_fuzz.c) --
PL_OPEN, PL_CLOSED, PL_V6, PL_ANY = 1, 2, 4, 8


def pl_flags(disable=False, fork=False, ports=None, sizes=None, rules=None,
             log=0):
    b = bytes([(1 if disable else 0) | (2 if fork else 0) |
               (4 if ports is not None else 0) |
               (8 if sizes is not None else 0) |
               (16 if rules is not None else 0) | log << 5])
    if ports is not None:
        b += bytes([len(ports)]) + ports
    if sizes is not None:
        b += bytes(sizes)
    if rules is not None:
        b += bytes([len(rules)]) + rules
    return b


# The harness's peer: how many bytes of "RSFK", port, role, ready it sends
# (all 8: a whole offer), the port, the role (0 none, 1 'A', 2 'P') and
# whether it is ready.
def pl_peer(first=b"RSFK", port=0, role=0, ready=0):
    n = 8 if role else len(first) + (2 if port else 0)
    return bytes([n]) + struct.pack("<H", port) + bytes([role, ready])


PL_CLOSE, PL_INHERIT = 12, 11


def pl_io(sel, fd=0, length=4):
    return bytes([6, sel, length, fd])


pl_tcp = b"\x00\x00"  # socket: IPv4 TCP, non-blocking
pl_tcp_blocking = b"\x00\x10"
put("preload", "listen_accept", pl_flags() + pl_tcp + bytes([2, 0, 0]) +
    bytes([3, 0, 4]) + bytes([5, 0, 0]) + bytes([8, 3]) + bytes([PL_CLOSE, 0]))
put("preload", "connect_falls_back", pl_flags() + pl_tcp +
    bytes([4, 0, PL_OPEN]) + pl_peer(b"hi") + pl_io(0) + pl_io(1) +
    bytes([8, 3]))
put("preload", "fork_active", pl_flags(fork=True) + pl_tcp_blocking +
    bytes([4, 0, PL_OPEN]) + pl_peer(b"RSFK", 7470) + pl_io(0) +
    pl_io(3))
put("preload", "fork_passive", pl_flags(fork=True) + pl_tcp +
    bytes([2, 0, 0]) + bytes([3, 0, 4]) + bytes([5, 0]) + pl_peer(b"RSFK") +
    b"\x01" + pl_io(0, fd=1))
put("preload", "udp", pl_flags() + b"\x00\x04" +
    bytes([7, 6, 4, 0, PL_CLOSED]) + pl_io(7) + bytes([9, 0, 0x1f]))
put("preload", "settings_log_link", pl_flags(
    ports=b"7471,1-1000", sizes=[4, 4, 2, 8, 8],
    rules=b"fuzz INET STREAM TCP\n* INET6 DGRAM UDP\nbad line\n", log=3) +
    pl_tcp + b"\x00\x05")
put("preload", "log_file", pl_flags(log=1) + pl_tcp + bytes([PL_CLOSE, 0]))
put("preload", "log_dangling", pl_flags(log=4) + pl_tcp)
put("preload", "descriptors", pl_flags() + pl_tcp + b"\x00\x01" +
    bytes([10, 0, 0]) + bytes([10, 1 | 0x10, 0]) + bytes([10, 3 | 0x10, 1]) +
    bytes([10, 4, 0]) + bytes([10, 5 | 0x50, 0, 1]) + bytes([10, 6, 1, 16]) +
    bytes([9, 1, 1, 0, 1]) + bytes([10, 7 | 0x20, 0]) + bytes([PL_CLOSE, 1]))
# a connection that fell back to TCP, inherited across execve: its
# peer's whole offer (passive, ready) is declined at the first read, or,
# after a write of ours, taken silently
put("preload", "inherited_declines", pl_flags() + pl_tcp_blocking +
    bytes([4, 0, PL_OPEN]) + pl_peer(port=7470, role=2, ready=1) +
    bytes([PL_INHERIT, 0]) + pl_io(0))
put("preload", "inherited_drops", pl_flags() + pl_tcp_blocking +
    bytes([4, 0, PL_OPEN]) + pl_peer(port=7470, role=1, ready=1) +
    bytes([PL_INHERIT, 0]) + pl_io(1) + pl_io(0))
put("preload", "disabled", pl_flags(disable=True) + pl_tcp +
    bytes([4, 0, PL_OPEN]) + pl_peer(b"x"))


# --- share_msg: a header, a byte per file, then operations ----------------
# (the layouts: share_msg_fuzz.c's head comment, take_msg and fuzz_op)
SH_NEWPROC, SH_DEMAND, SH_RELEASE, SH_OK, SH_ERR = 0, 1, 2, 3, 4
SH_DEMAND_ANSWERED = 6
SH_HANDED = 16  # a file byte: taken off a shared listener, never used
SH_FD_NONE, SH_FD_NULL, SH_FD_PIPE, SH_FD_SEQ, SH_FD_STREAM, SH_FD_TWO = \
    0, 1, 2, 3, 4, 5
SH_EXACT, SH_CUT, SH_AFTER, SH_COUNT = 0, 1, 2, 3


def sh_head(nfiles=2, relay_fails=False, file_flags=None):
    flags = file_flags or [0] * nfiles
    return bytes([(nfiles - 1) | (4 if relay_fails else 0)] + flags)


def sh_msg(kind, val=0, ids=(), fd=SH_FD_NONE, shape=SH_EXACT, arg=b""):
    return bytes([kind | fd << 3 | shape << 6, val, len(ids)] + list(ids)) + \
        arg


def sh_send(chan, msg):  # op 0: a message on one of the harness's channels
    return bytes([0, chan]) + msg


def sh_ask(how, share_id, answer):  # op 6: the holder's side
    return bytes([6, how, share_id]) + answer


def sh_recv(room, msg):  # op 7: share_recv alone, room coded as in op_recv
    return bytes([7, room]) + msg


put("share_msg", "demand", sh_head() + sh_send(0, sh_msg(SH_DEMAND, 1)))
put("share_msg", "demand_unknown", sh_head() +
    sh_send(0, sh_msg(SH_DEMAND, 9)) + sh_send(0, sh_msg(SH_DEMAND, 0)))
put("share_msg", "demand_twice", sh_head() +
    sh_send(0, sh_msg(SH_DEMAND, 2)) + sh_send(0, sh_msg(SH_DEMAND, 2)))
put("share_msg", "release", sh_head() + sh_send(0, sh_msg(SH_RELEASE, 1)) +
    sh_send(0, sh_msg(SH_RELEASE, 7)) + bytes([3, 0]))
put("share_msg", "relay_fails", sh_head(relay_fails=True) +
    sh_send(0, sh_msg(SH_DEMAND, 1)))
put("share_msg", "demand_reading", sh_head(file_flags=[2, 8]) +
    bytes([4, 0]) + sh_send(0, sh_msg(SH_DEMAND, 1)) + bytes([3, 0]) +
    bytes([4, 0]))
put("share_msg", "closed_then_demand", sh_head() + bytes([3, 0]) +
    sh_send(0, sh_msg(SH_DEMAND, 1)) + bytes([2, 0]))
# a holder refused its own answer: the relay only for a connection the
# owner answered (file 1), an error for one it never used (file 0), also
# once the program closed that one
put("share_msg", "demand_answered", sh_head(file_flags=[SH_HANDED, 0]) +
    sh_send(0, sh_msg(SH_DEMAND_ANSWERED, 1)) +
    sh_send(0, sh_msg(SH_DEMAND_ANSWERED, 2)))
put("share_msg", "demand_answered_closed",
    sh_head(file_flags=[SH_HANDED, SH_HANDED]) + bytes([3, 0]) +
    sh_send(0, sh_msg(SH_DEMAND_ANSWERED, 1)) +
    sh_send(0, sh_msg(SH_DEMAND, 2)) + bytes([2, 0]))
put("share_msg", "newproc_seq", sh_head(3) +
    sh_send(0, sh_msg(SH_NEWPROC, 0, [1, 3, 9], fd=SH_FD_SEQ)) +
    sh_send(1, sh_msg(SH_DEMAND, 3)) + sh_send(0, sh_msg(SH_DEMAND, 3)) +
    bytes([2, 0]))
put("share_msg", "newproc_stream", sh_head() +
    sh_send(0, sh_msg(SH_NEWPROC, 0, [1, 2], fd=SH_FD_STREAM)) +
    sh_send(1, sh_msg(SH_RELEASE, 2)))
put("share_msg", "newproc_pipe", sh_head() +
    sh_send(0, sh_msg(SH_NEWPROC, 0, [1], fd=SH_FD_PIPE)) +
    sh_send(1, sh_msg(SH_DEMAND, 1)))
put("share_msg", "newproc_null", sh_head() +
    sh_send(0, sh_msg(SH_NEWPROC, 0, [2], fd=SH_FD_NULL)))
put("share_msg", "newproc_no_fd", sh_head() +
    sh_send(0, sh_msg(SH_NEWPROC, 0, [1, 2])))
# what share_recv left open before it closed every descriptor it got: the
# second of two, and one that came with an empty datagram
put("share_msg", "newproc_two_fds", sh_head() +
    sh_send(0, sh_msg(SH_NEWPROC, 0, [1], fd=SH_FD_TWO)))
put("share_msg", "empty_with_fd", sh_head() +
    sh_send(0, sh_msg(SH_DEMAND, 1, fd=SH_FD_NULL, shape=SH_CUT,
                      arg=b"\x0c")))
put("share_msg", "fork_twice", sh_head(4, file_flags=[0, 1, 4, 8]) +
    sh_send(0, sh_msg(SH_DEMAND, 1)) + bytes([5]) +
    sh_send(1, sh_msg(SH_DEMAND, 2)) + bytes([2, 0]))
put("share_msg", "malformed", sh_head() +
    sh_send(0, sh_msg(SH_DEMAND, 1, shape=SH_CUT, arg=b"\x02")) +
    sh_send(0, sh_msg(SH_DEMAND, 1, shape=SH_AFTER, arg=b"\x04abcd")) +
    sh_send(0, sh_msg(SH_NEWPROC, 0, [1], shape=SH_COUNT,
                      arg=b"\xff\xff\x00\x00")) +
    sh_send(0, sh_msg(SH_OK, 1, fd=SH_FD_NULL)))
put("share_msg", "ask_ok", sh_head(1) +
    sh_ask(4, 5, sh_msg(SH_OK, 0, fd=SH_FD_STREAM)))
put("share_msg", "ask_after_fork", sh_head(1) +
    sh_ask(0x18, 5, sh_msg(SH_OK, 0, fd=SH_FD_STREAM)))
put("share_msg", "ask_err", sh_head(1) + sh_ask(1, 5, sh_msg(SH_ERR, 111)))
put("share_msg", "ask_gone", sh_head(1) + sh_ask(6, 5, sh_msg(SH_OK, 0)))
put("share_msg", "ask_long_answer", sh_head(1) +
    sh_ask(0, 5, sh_msg(SH_OK, 0, fd=SH_FD_NULL, shape=SH_AFTER,
                        arg=b"\x04abcd")))
put("share_msg", "recv_newproc", sh_head(1) +
    sh_recv(0x82, sh_msg(SH_NEWPROC, 0, [1, 2], fd=SH_FD_SEQ)))
put("share_msg", "recv_two_fds", sh_head(1) +
    sh_recv(0x80, sh_msg(SH_DEMAND, 1, fd=SH_FD_TWO)))
put("share_msg", "recv_empty_with_fd", sh_head(1) +
    sh_recv(0x80, sh_msg(SH_DEMAND, 1, fd=SH_FD_NULL, shape=SH_CUT,
                         arg=b"\x0c")))
put("share_msg", "recv_short_room", sh_head(1) +
    sh_recv(0x81, sh_msg(SH_NEWPROC, 0, [1, 2])))


# --- verbs_again: a write to a uverbs device, as the kernel would see it --
VA_POST_SEND, VA_POST_RECV, VA_POST_SRQ_RECV = 28, 29, 36
VA_EXTENDED = 0x80000000


def va_cmd(command, handle, wrs=b"", wr_count=0, sge_count=0, wqe_size=16,
           out_words=1, response=0x7FFF12345678):
    body = struct.pack("<QIIII", response, handle, wr_count, sge_count,
                       wqe_size) + wrs
    return struct.pack("<IHH", command, (8 + len(body)) // 4,
                       out_words) + body


# Soft-RoCE's and Soft-iWARP's doorbell: a POST_SEND of no work request
put("verbs_again", "post_send_doorbell", va_cmd(VA_POST_SEND, 5,
                                                wqe_size=112))
put("verbs_again", "post_recv_one", va_cmd(
    VA_POST_RECV, 5, struct.pack("<QII", 1, 1, 0) +
    struct.pack("<QII", 0x1000, 64, 7), wr_count=1, sge_count=1))
put("verbs_again", "post_srq_recv_none", va_cmd(VA_POST_SRQ_RECV, 3))
put("verbs_again", "extended", va_cmd(VA_EXTENDED | VA_POST_SEND, 5,
                                      wqe_size=112))
