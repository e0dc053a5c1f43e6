/*
 * The allocator a fork finds at rest, in the ASan build of the runner.
 *
 * GCC 12's AddressSanitizer takes its allocator's locks without a fork
 * handler (LLVM's runtime gained one in version 18): a child forked while
 * another thread refills a size class waits for ever in its own first
 * allocation of that class.  That is a hang of the sanitizer, not of the
 * library, and the tests that fork beside a busy thread met it.  glibc's
 * malloc, which the library's users run, takes its own locks inside fork(),
 * after every fork handler; this file gives ASan's allocator the same:
 * every allocation passes a gate that the last fork handler to run before
 * the fork closes (registered first, from the executable's preinit array,
 * before any library's constructor registers its own), once no thread is
 * inside the allocator.
 *
 * Empty in every other build.
 */
#ifdef __SANITIZE_ADDRESS__

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

char *__strdup(const char *s);
char *__strndup(const char *s, size_t n);

void *__interceptor_malloc(size_t size);
void *__interceptor_calloc(size_t n, size_t size);
void *__interceptor_realloc(void *p, size_t size);
void *__interceptor_reallocarray(void *p, size_t n, size_t size);
void __interceptor_free(void *p);
int __interceptor_posix_memalign(void **p, size_t align, size_t size);
void *__interceptor_aligned_alloc(size_t align, size_t size);
void *__interceptor_memalign(size_t align, size_t size);
void *__interceptor_valloc(size_t size);
void *__interceptor_pvalloc(size_t size);
char *__interceptor_strdup(const char *s);
char *__interceptor___strdup(const char *s);
char *__interceptor_strndup(const char *s, size_t n);
char *__interceptor___strndup(const char *s, size_t n);

static unsigned int in_allocator; /* threads between enter and leave */
static unsigned int forks_waiting; /* forks closing or holding the gate */
/* The thread that closed the gate allocates through it (its own fork
 * handlers and, in the child, everything until the gate is opened). */
static __thread bool gate_keeper;

static void enter(void)
{
	if (gate_keeper)
		return;
	for (;;) {
		__atomic_add_fetch(&in_allocator, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&forks_waiting, __ATOMIC_SEQ_CST))
			return;
		__atomic_sub_fetch(&in_allocator, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&forks_waiting, __ATOMIC_ACQUIRE))
			sched_yield();
	}
}

static void leave(void)
{
	if (!gate_keeper)
		__atomic_sub_fetch(&in_allocator, 1, __ATOMIC_RELEASE);
}

static void close_gate(void)
{
	__atomic_add_fetch(&forks_waiting, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&in_allocator, __ATOMIC_SEQ_CST))
		sched_yield();
	gate_keeper = true;
}

static void open_gate_in_parent(void)
{
	gate_keeper = false;
	__atomic_sub_fetch(&forks_waiting, 1, __ATOMIC_RELEASE);
}

static void open_gate_in_child(void)
{
	/* the one thread here; the parent's other forks are not ours */
	gate_keeper = false;
	in_allocator = 0;
	__atomic_store_n(&forks_waiting, 0, __ATOMIC_RELEASE);
}

static void install_gate(void)
{
	pthread_atfork(close_gate, open_gate_in_parent, open_gate_in_child);
}

/* Before the constructors of every library, the preloaded ones too. */
__attribute__((section(".preinit_array"),
	       used)) static void (*const install_gate_first)(void) =
	install_gate;

#define GATED(type, call)                                                      \
	do {                                                                   \
		type r;                                                        \
		enter();                                                       \
		r = call;                                                      \
		leave();                                                       \
		return r;                                                      \
	} while (0)

void *malloc(size_t size)
{
	GATED(void *, __interceptor_malloc(size));
}

void *calloc(size_t n, size_t size)
{
	GATED(void *, __interceptor_calloc(n, size));
}

void *realloc(void *p, size_t size)
{
	GATED(void *, __interceptor_realloc(p, size));
}

void *reallocarray(void *p, size_t n, size_t size)
{
	GATED(void *, __interceptor_reallocarray(p, n, size));
}

void free(void *p)
{
	enter();
	__interceptor_free(p);
	leave();
}

int posix_memalign(void **p, size_t align, size_t size)
{
	GATED(int, __interceptor_posix_memalign(p, align, size));
}

void *aligned_alloc(size_t align, size_t size)
{
	GATED(void *, __interceptor_aligned_alloc(align, size));
}

void *memalign(size_t align, size_t size)
{
	GATED(void *, __interceptor_memalign(align, size));
}

void *valloc(size_t size)
{
	GATED(void *, __interceptor_valloc(size));
}

void *pvalloc(size_t size)
{
	GATED(void *, __interceptor_pvalloc(size));
}

char *strdup(const char *s)
{
	GATED(char *, __interceptor_strdup(s));
}

char *__strdup(const char *s)
{
	GATED(char *, __interceptor___strdup(s));
}

char *strndup(const char *s, size_t n)
{
	GATED(char *, __interceptor_strndup(s, n));
}

char *__strndup(const char *s, size_t n)
{
	GATED(char *, __interceptor___strndup(s, n));
}

#else
typedef int asan_fork_gate_absent; /* ISO C: no empty file */
#endif
