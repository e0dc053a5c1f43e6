# Sourced by tests/bench/guest.sh: rstream throughput and 64-byte latency,
# Debian's rstream on each library (tests/bench/rsocket-bench.sh).
# bench-part: time
RDMACM_BENCH_RESULTS=$res RDMACM_REF_LIBDIR=${libdir[debian]} \
	RDMACM_BUILD_DIR=${libdir[ours]%/src/.libs} \
	bash "$here/rsocket-bench.sh"
