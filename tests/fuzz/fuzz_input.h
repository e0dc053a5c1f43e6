/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * How a fuzz target reads its input: bytes taken from the front, zeroes
 * once it has run out (so every operation reads all its arguments and an
 * input cut anywhere still runs).  One target is one translation unit:
 * the input being run is this file's.
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static struct {
	const uint8_t *p;
	size_t left;
} fuzz_in;

static inline void fuzz_input(const uint8_t *data, size_t size)
{
	fuzz_in.p = data;
	fuzz_in.left = size;
}

/* @n bytes into @out; zeroes for those the input no longer has. */
static inline void take(void *out, size_t n)
{
	size_t k = n < fuzz_in.left ? n : fuzz_in.left;

	memset(out, 0, n);
	memcpy(out, fuzz_in.p, k);
	fuzz_in.p += k;
	fuzz_in.left -= k;
}

static inline uint8_t take8(void)
{
	uint8_t v;

	take(&v, 1);
	return v;
}

/* Two bytes, little-endian. */
static inline uint16_t take16(void)
{
	uint8_t b[2];

	take(b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

#endif /* FUZZ_INPUT_H */
