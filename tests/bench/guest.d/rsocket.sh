# Sourced by tests/bench/guest.sh: rstream throughput and 64-byte latency,
# Debian's rstream on each library (tests/bench/rsocket-bench.sh).
# bench-part: time
# Rounds (8 unless RDMACM_BENCH_ROUNDS says): one run's figures move by
# 10-30 % with the host; the table takes the rounds' medians.
RDMACM_BENCH_ROUNDS=${RDMACM_BENCH_ROUNDS:-8} \
	RDMACM_BENCH_RESULTS=$res RDMACM_REF_LIBDIR=${libdir[debian]} \
	RDMACM_BUILD_DIR=${libdir[ours]%/src/.libs} \
	bash "$here/rsocket-bench.sh"
