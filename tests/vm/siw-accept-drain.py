#!/usr/bin/env python3
"""Test-bed variant of siw (RDMACM_VM_SIW_DRAIN=1): close two windows.

Race A: siw_accept (6.1) sends the MPA reply while the socket's data-ready
upcall is still the connection manager's, and only then hands the socket to
the QP. The CM upcall ignores data in RDMA mode, so an FPDU the initiator
sends in that window stays in the socket until the next segment arrives: a
ping-pong whose initiator sends first then hangs (tests/system/BUGS.md
siw-accept-race). This adds, right after the hand-over, a check of the receive
queue: if something is there, the kernel logs "siw-testbed: accept: N bytes
queued ..." and runs the QP's data-ready upcall for it.

Race C: siw_create_listen (6.1) lets the socket listen before the listening
endpoint is marked LISTENING.  A connection that completes in between has
its accept work thrown away (siw_accept_newconn: "error 0"), every later
accept takes the connection before it, and the last one to reach that
listener is never accepted: its MPA request is never read, the initiator
times out (UNREACHABLE, -ETIMEDOUT, after 10 s), and when it closes, the
stranded connection's close is taken for the listener's own, which then
stops listening.  Here the socket listens only once the endpoint is ready,
and an accept work that still finds it not listening is logged
("siw-testbed: listen: ...").

Used to prove both races and, in the suite, for the scenarios they hit
(p2p-iwarp-testbed, perftest-iwarp); the other suites run the unmodified
driver.  Usage: siw-accept-drain.py SIW_CM_C
"""
import re
import sys

HELPER = """
/* librdmacm test bed: data that arrived before the QP owned the socket. */
static void testbed_drain_early_data(struct sock *sk)
{
\tlock_sock(sk);
\tif (!skb_queue_empty(&sk->sk_receive_queue)) {
\t\tpr_info("siw-testbed: accept: %u bytes queued before the QP took the socket\\n",
\t\t\t(unsigned int)tcp_inq(sk));
\t\tlocal_bh_disable();
\t\tsk->sk_data_ready(sk);
\t\tlocal_bh_enable();
\t}
\trelease_sock(sk);
}

"""
CALL = "\n\t\ttestbed_drain_early_data(cep->sock->sk);"

LISTEN = """\trv = s->ops->listen(s, backlog);
\tif (rv) {
\t\tsiw_dbg(id->device, "listen error %d\\n", rv);
\t\tgoto error;
\t}
"""
READY = "\tcep->state = SIW_EPSTATE_LISTENING;\n"
LISTEN_LATE = """
\t/* librdmacm test bed: listen only once the endpoint is ready. */
\trv = s->ops->listen(s, backlog);
\tif (rv) {
\t\tsiw_dbg(id->device, "listen error %d\\n", rv);
\t\tlist_del(&cep->listenq);
\t\tgoto error;
\t}
"""
NOT_LISTENING = "\tif (cep->state != SIW_EPSTATE_LISTENING)\n\t\tgoto error;\n"
NOT_LISTENING_LOGGED = """\tif (cep->state != SIW_EPSTATE_LISTENING) {
\t\tpr_info("siw-testbed: listen: a connection came before the listener was ready\\n");
\t\tgoto error;
\t}
"""


def patch_listen(src, path):
    """Race C: siw_create_listen listens last; a lost accept is logged."""
    start = src.find("\nint siw_create_listen(")
    end = src.find("\n}\n", start)
    body = src[start:end]
    if start < 0 or body.count(LISTEN) != 1 or body.count(READY) != 1:
        sys.exit("siw-accept-drain: siw_create_listen does not look as "
                 "expected in " + path)
    body = body.replace(LISTEN, "")
    body = body.replace(READY, READY + LISTEN_LATE)
    src = src[:start] + body + src[end:]
    start = src.find("\nstatic void siw_accept_newconn(")
    at = src.find(NOT_LISTENING, start)
    if start < 0 or at < 0:
        sys.exit("siw-accept-drain: siw_accept_newconn does not look as "
                 "expected in " + path)
    return src[:at] + NOT_LISTENING_LOGGED + src[at + len(NOT_LISTENING):]


def main(path):
    src = open(path).read()
    start = src.find("\nint siw_accept(")
    if start < 0:
        sys.exit("siw-accept-drain: no siw_accept in " + path)
    # The hand-over in siw_accept's non-RTR branch.
    hand_over = re.compile(r"\n\t\tsiw_qp_socket_assoc\(cep, qp\);")
    m = hand_over.search(src, start)
    if not m:
        sys.exit("siw-accept-drain: siw_accept does not look as expected")
    src = src[: m.end()] + CALL + src[m.end():]
    # The helper goes above siw_accept's own comment, if it has one.
    at = start
    comment = src.rfind("\n/*", 0, start)
    if comment >= 0 and src[comment:start].rstrip().endswith("*/"):
        at = comment
    src = src[: at + 1] + HELPER.lstrip("\n") + src[at + 1:]
    src = patch_listen(src, path)
    open(path, "w").write(src)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: siw-accept-drain.py SIW_CM_C")
    main(sys.argv[1])
