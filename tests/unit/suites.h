/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Every unit test suite, registered once: UNIT_SUITE(NAME) is the file
 * NAME_test.c, whose Suite *NAME_suite(void) builds the suite named NAME.
 * UNIT_CHILD(FLAG, FN) is a mode a test runs the runner again in (under
 * the preload): `unit_runner FLAG ...` returns FN(argc, argv).
 * unit_runner.c includes this list with its own definitions of both.
 */
UNIT_SUITE(acm)
UNIT_SUITE(acm_cm)
UNIT_SUITE(acm_path)
UNIT_SUITE(acm_sa)
UNIT_SUITE(acm_service)
UNIT_SUITE(addr)
UNIT_SUITE(addrinfo)
UNIT_SUITE(addrinfo_sa)
UNIT_SUITE(channel)
UNIT_SUITE(conn)
UNIT_SUITE(convert)
UNIT_SUITE(device)
UNIT_SUITE(endpoint)
UNIT_SUITE(event)
UNIT_SUITE(header)
UNIT_SUITE(htable)
UNIT_SUITE(id)
UNIT_SUITE(mcast)
UNIT_SUITE(mcast_opt)
UNIT_SUITE(preload_config)
UNIT_SUITE(preload_udp)
UNIT_SUITE(qp)
UNIT_SUITE(rsocket)
UNIT_SUITE(rsocket_close)
UNIT_SUITE(rsocket_conn)
UNIT_SUITE(rsocket_dgram)
UNIT_SUITE(rsocket_dgram_dest)
UNIT_SUITE(rsocket_dgram_io)
UNIT_SUITE(rsocket_dgram_qp)
UNIT_SUITE(rsocket_opts)
UNIT_SUITE(rsocket_stream)
UNIT_SUITE(sendto)
UNIT_SUITE(ucma_abi)

UNIT_CHILD("--echo-child", preload_udp_echo_child)
UNIT_CHILD("--preload-log-child", rsocket_preload_log_child)
