# The unit runner's files (tests/unit/unit_runner), a fragment of the
# top Makefile.am: automake reads it through `include` and puts it in the
# tarball.  A new NAME_test.c goes into UNIT_TEST_SOURCES (and its suite
# into suites.h), a new shared fixture or fake into UNIT_HELPERS; one file
# a line, sorted.
UNIT_TEST_SOURCES = \
	tests/unit/abi_convert_test.c \
	tests/unit/acm_cache_test.c \
	tests/unit/acm_cm_test.c \
	tests/unit/acm_path_test.c \
	tests/unit/acm_sa_test.c \
	tests/unit/acm_service_test.c \
	tests/unit/acm_table_test.c \
	tests/unit/acm_test.c \
	tests/unit/addr_test.c \
	tests/unit/addrinfo_resolve_test.c \
	tests/unit/addrinfo_sa_test.c \
	tests/unit/addrinfo_test.c \
	tests/unit/channel_test.c \
	tests/unit/conn_test.c \
	tests/unit/destroy_inflight_test.c \
	tests/unit/device_test.c \
	tests/unit/endpoint_test.c \
	tests/unit/event_test.c \
	tests/unit/fault_test.c \
	tests/unit/header_test.c \
	tests/unit/htable_test.c \
	tests/unit/id_test.c \
	tests/unit/list_test.c \
	tests/unit/mcast_mreq_test.c \
	tests/unit/mcast_opt_test.c \
	tests/unit/mcast_test.c \
	tests/unit/options_test.c \
	tests/unit/p2p_connect_test.c \
	tests/unit/p2p_interleave_test.c \
	tests/unit/p2p_kernel_id_test.c \
	tests/unit/p2p_options_test.c \
	tests/unit/p2p_peers_test.c \
	tests/unit/p2p_request_test.c \
	tests/unit/p2p_verify_test.c \
	tests/unit/p2p_resolve_test.c \
	tests/unit/p2p_test.c \
	tests/unit/p2p_window_test.c \
	tests/unit/p2p_wire_test.c \
	tests/unit/preload_addr_test.c \
	tests/unit/preload_config_test.c \
	tests/unit/preload_cred_test.c \
	tests/unit/preload_dgram_test.c \
	tests/unit/preload_fdtab_test.c \
	tests/unit/preload_fork_test.c \
	tests/unit/preload_forkstep_test.c \
	tests/unit/preload_init_test.c \
	tests/unit/preload_io_test.c \
	tests/unit/preload_poll_test.c \
	tests/unit/preload_relay_test.c \
	tests/unit/preload_socket_test.c \
	tests/unit/qp_test.c \
	tests/unit/rsocket_close_test.c \
	tests/unit/rsocket_conn_test.c \
	tests/unit/rsocket_dgram_dest_test.c \
	tests/unit/rsocket_dgram_io_test.c \
	tests/unit/rsocket_dgram_qp_test.c \
	tests/unit/rsocket_dgram_test.c \
	tests/unit/rsocket_dgram_udp_test.c \
	tests/unit/rsocket_epoll_test.c \
	tests/unit/rsocket_iomap_test.c \
	tests/unit/rsocket_keepalive_test.c \
	tests/unit/rsocket_options_test.c \
	tests/unit/rsocket_poll_test.c \
	tests/unit/rsocket_selfconn_test.c \
	tests/unit/rsocket_shutdown_test.c \
	tests/unit/rsocket_socket_test.c \
	tests/unit/rsocket_spin_test.c \
	tests/unit/rsocket_stream_test.c \
	tests/unit/rsocket_table_test.c \
	tests/unit/rsocket_test.c \
	tests/unit/rsocket_wire_test.c \
	tests/unit/sendto_test.c \
	tests/unit/timer_test.c \
	tests/unit/ucma_abi_test.c
UNIT_HELPERS = \
	tests/unit/acm_ep.h \
	tests/unit/acm_hosts.h \
	tests/unit/fake_ucma.c \
	tests/unit/fake_ucma.h \
	tests/unit/fake_umad.c \
	tests/unit/fake_umad.h \
	tests/unit/fake_verbs.c \
	tests/unit/fake_verbs.h \
	tests/unit/fd_of.h \
	tests/unit/ib_req.h \
	tests/unit/option_ids.h \
	tests/unit/p2p_peer.h \
	tests/unit/preload_child.h \
	tests/unit/rs_call.h \
	tests/unit/rs_dgram.h \
	tests/unit/suites.h \
	tests/unit/unit.h
