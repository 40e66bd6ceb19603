/* SPDX-License-Identifier: MIT */
/* The process-wide region map of pool frames, and the list of live
 * schedulers' frames that tells when its leaves may go.
 *
 * WHICH MEMORY IS A POOL FRAME.  A process-wide two-level map has one
 * byte per 64 KiB region of the address space: 1 = a slab starts here,
 * 2 = inside a big slab.  coro_spawn looks up the region of the frame
 * header it is given (an interior pointer: the header may sit anywhere in
 * the frame), so it needs no flag from the user.  The byte is set before
 * the slab is handed out and cleared before its memory is given back; a
 * region whose byte is 0 is never read.  Leaves (64 KiB, 4 GiB of address
 * space each) are made on first use and given back when the last
 * scheduler's frames are gone (coro__frame_map_release): every lookup is
 * made for a live scheduler, registered in coro__frame_live, so with none
 * registered and none finishing nobody can be reading a leaf.
 */
#include <stdlib.h>

#include "sched/frame_impl.h"

uint8_t *coro__frame_map[1u << MAP_L1_BITS];
pthread_mutex_t coro__frame_lock = PTHREAD_MUTEX_INITIALIZER;
struct coro__frames *coro__frame_live;     /* under coro__frame_lock */
uint64_t coro__frame_gen;                  /* under coro__frame_lock */
int coro__frame_finishing;                 /* under coro__frame_lock: in coro__frames_fini */

/* set the bytes of [a, a + n) to v (first region: first); 0 or -ENOMEM */
int coro__frame_map_set(uintptr_t a, size_t n, uint8_t first, uint8_t v)
{
    for (size_t off = 0; off < n; off += SLAB_SIZE) {
        uintptr_t r = (a + off) >> SLAB_SHIFT;
        if (r >> (MAP_L1_BITS + MAP_L2_BITS))
            return -ENOMEM;     /* outside the mapped range: do not use it */
        uint8_t **slot = &coro__frame_map[r >> MAP_L2_BITS];
        uint8_t *leaf = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (!leaf) {
            pthread_mutex_lock(&coro__frame_lock);
            leaf = *slot;
            if (!leaf) {
                /* given back by coro__frame_map_release */
                leaf = calloc(1, (size_t)1 << MAP_L2_BITS);
                if (leaf)   /* release: the zeroed leaf before its pointer */
                    __atomic_store_n(slot, leaf, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&coro__frame_lock);
            if (!leaf)
                return -ENOMEM;
        }
        /* relaxed: the map byte is published with the slab itself, by
         * whatever hands the frame to another thread */
        __atomic_store_n(&leaf[r & ((1u << MAP_L2_BITS) - 1)], off ? v : first,
                         __ATOMIC_RELAXED);
    }
    return 0;
}

/* Under coro__frame_lock: no scheduler has frames and none is giving its slabs back
 * (each of which clears its map bytes), so no leaf is read or written. */
void coro__frame_map_release(void)
{
    if (coro__frame_live || coro__frame_finishing)
        return;
    for (size_t i = 0; i < sizeof coro__frame_map / sizeof coro__frame_map[0]; i++)
        if (coro__frame_map[i]) {
            free(coro__frame_map[i]);
            /* relaxed: nobody reads it now (above); atomic because
             * map_get's loads of the slot are */
            __atomic_store_n(&coro__frame_map[i], NULL, __ATOMIC_RELAXED);
        }
}
