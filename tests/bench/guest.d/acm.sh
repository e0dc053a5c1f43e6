# Sourced by tests/bench/guest.sh: resolution through the ACM cache and
# tables against the kernel path (tests/bench/acm-bench.sh).
# bench-part: time
RDMACM_BENCH_RESULTS=$res RDMACM_BENCH_REF=${libdir[debian]} \
	RDMACM_BUILD_DIR=${libdir[ours]%/src/.libs} \
	bash "$here/acm-bench.sh"
