/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Big-endian fields of wire messages (p2p header, SA MADs) at any
 * alignment: memcpy and a byte swap, which the compiler makes one load or
 * store and a bswap.  Header-only: the fuzz targets build single files.
 */
#ifndef CMA_BE_BYTES_H
#define CMA_BE_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t cma_get_be16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

/* A 24-bit field (a PSN, a QP number). */
static inline uint32_t cma_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint64_t cma_get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static inline void cma_put_be16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void cma_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void cma_put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

#endif
