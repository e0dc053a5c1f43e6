/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * An intrusive doubly linked list with its length, for the bounded queues
 * that evict their oldest member: p2p's held requests,
 * strangers and connects waiting for the window, rsocket's datagram
 * destinations.  A zeroed list is empty, so the calloc'd or static owner
 * needs no initialiser; a node knows nothing of its list, so unlinking
 * takes both.  Nothing here locks: the owner's lock covers its lists.
 *
 * A fork can copy a list in the middle of a change (another thread of the
 * parent making it): the forward links (first, next) are stored so that
 * they are whole at every instant, and cma_list_repair makes the back
 * links, the last node and the length whole again in the child.
 */
#ifndef CMA_LIST_H
#define CMA_LIST_H

#include <stddef.h>

#include "fork_fresh.h"

struct cma_list_node {
	struct cma_list_node *next, *prev;
};

struct cma_list {
	struct cma_list_node *first, *last;
	unsigned int len;
};

/*
 * After @pos, or at the head for no @pos: the one place that links a node
 * in (push, append, and a list kept in an order).
 */
static inline void cma_list_insert_after(struct cma_list *l,
					 struct cma_list_node *pos,
					 struct cma_list_node *n)
{
	struct cma_list_node *next = pos ? pos->next : l->first;

	n->prev = pos;
	n->next = next;
	/* Forward only once @n leads on (a forked child's copy: above). */
	CMA_FORK_PUBLISH(*(pos ? &pos->next : &l->first), n);
	if (next)
		next->prev = n;
	else
		l->last = n;
	l->len++;
}

/* At the head: the list stays most recently used first. */
static inline void cma_list_push(struct cma_list *l, struct cma_list_node *n)
{
	cma_list_insert_after(l, NULL, n);
}

/* At the tail: the list stays oldest first. */
static inline void cma_list_append(struct cma_list *l, struct cma_list_node *n)
{
	cma_list_insert_after(l, l->last, n);
}

static inline void cma_list_unlink(struct cma_list *l, struct cma_list_node *n)
{
	CMA_FORK_PUBLISH(*(n->prev ? &n->prev->next : &l->first), n->next);
	if (n->next)
		n->next->prev = n->prev;
	else
		l->last = n->prev;
	n->next = n->prev = NULL;
	l->len--;
}

/*
 * In a forked child, before any other use: the back links, the last node
 * and the length from the forward links, which are whole.
 */
static inline void cma_list_repair(struct cma_list *l)
{
	struct cma_list_node *n, *prev = NULL;

	l->len = 0;
	for (n = l->first; n; prev = n, n = n->next) {
		n->prev = prev;
		l->len++;
	}
	l->last = prev;
}

/* The object @n is the member at @off of, or NULL for no node. */
static inline void *cma_list_obj(const struct cma_list_node *n, size_t off)
{
	return n ? (char *)n - off : NULL;
}

#define cma_list_entry(n, type, member)                                        \
	((type *)cma_list_obj(n, offsetof(type, member)))
#define cma_list_first(l, type, member) cma_list_entry((l)->first, type, member)
#define cma_list_last(l, type, member) cma_list_entry((l)->last, type, member)
/* The entry after (before) @pos in its list, or NULL. */
#define cma_list_next(pos, member)                                             \
	((__typeof__(pos))cma_list_obj((pos)->member.next,                     \
				       offsetof(__typeof__(*(pos)), member)))
#define cma_list_prev(pos, member)                                             \
	((__typeof__(pos))cma_list_obj((pos)->member.prev,                     \
				       offsetof(__typeof__(*(pos)), member)))

#endif /* CMA_LIST_H */
