// OpenSSL's transient buffers live for one handshake, one read or one flush:
// the two 4 KiB buffers of the BIO that collects a handshake flight, and the
// 16-22 KiB record and handshake message buffers. From the main heap, each
// handshake leaves them as holes between the long-lived state of the
// connection it set up (SSL, session, cipher contexts); and as event loops
// run on whichever Dispatch worker is free, the next handshake often runs in
// another thread's arena and cannot reuse them. A burst of handshakes then
// grows RSS by several KiB per connection beyond what the connections hold,
// which malloc_trim cannot give back. These sizes come instead from fixed
// slots of reserved regions: a freed slot is reused at once whatever the
// thread, and one freed while enough others are free goes back to the kernel.
// What OpenSSL keeps per connection (the 7.6 KiB SSL among it) stays in the heap.
#include "COpenSSL.h"
#include <openssl/crypto.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RESIDENT_FREE_SLOTS 16

typedef struct slot_pool {
    size_t smallest;   // requests from this size...
    size_t slot_size;  // ...up to the slot size
    size_t slot_count;
    uint8_t *region;   // slot_size * slot_count of address space, resident only when touched
    pthread_mutex_t lock;
    uint32_t next_untouched;
    uint32_t resident_free[RESIDENT_FREE_SLOTS];  // free, pages still resident
    uint32_t resident_free_count;
    uint32_t *released_free;  // free, pages handed back to the kernel
    uint32_t released_free_count;
    uint32_t in_use;
    uint8_t *taken;  // one bit per slot: handed out and not yet given back
} slot_pool;

static slot_pool pools[] = {
    {.smallest = 2048 + 1, .slot_size = 4096, .slot_count = 64 * 1024, .lock = PTHREAD_MUTEX_INITIALIZER},
    {.smallest = 12 * 1024, .slot_size = 32 * 1024, .slot_count = 32 * 1024, .lock = PTHREAD_MUTEX_INITIALIZER},
};
#define POOL_COUNT (sizeof(pools) / sizeof(pools[0]))

static slot_pool *pool_for_size(size_t size) {
    for (size_t i = 0; i < POOL_COUNT; i++) {
        if (pools[i].region != NULL && size >= pools[i].smallest && size <= pools[i].slot_size) return &pools[i];
    }
    return NULL;
}

static slot_pool *pool_holding(const void *p) {
    for (size_t i = 0; i < POOL_COUNT; i++) {
        const uint8_t *base = pools[i].region;
        if (base != NULL && (const uint8_t *)p >= base && (const uint8_t *)p < base + pools[i].slot_size * pools[i].slot_count) {
            return &pools[i];
        }
    }
    return NULL;
}

static void *take_slot(slot_pool *pool) {
    uint32_t index;
    pthread_mutex_lock(&pool->lock);
    if (pool->resident_free_count > 0) {
        index = pool->resident_free[--pool->resident_free_count];
    } else if (pool->released_free_count > 0) {
        index = pool->released_free[--pool->released_free_count];
    } else if (pool->next_untouched < pool->slot_count) {
        index = pool->next_untouched++;
    } else {
        pthread_mutex_unlock(&pool->lock);
        return NULL;
    }
    pool->in_use++;
    pool->taken[index / 8] |= (uint8_t)(1u << (index % 8));
    pthread_mutex_unlock(&pool->lock);
    return pool->region + (size_t)index * pool->slot_size;
}

// 0, or COPENSSL_LARGE_FREE_NOT_A_SLOT / COPENSSL_LARGE_FREE_NOT_TAKEN (a double free):
// a slot listed free twice would be handed to two owners at once, so nothing is freed.
static int give_back_slot(slot_pool *pool, void *p) {
    size_t offset = (size_t)((uint8_t *)p - pool->region);
    if (offset % pool->slot_size != 0) return COPENSSL_LARGE_FREE_NOT_A_SLOT;
    uint32_t index = (uint32_t)(offset / pool->slot_size);
    uint8_t bit = (uint8_t)(1u << (index % 8));
    pthread_mutex_lock(&pool->lock);
    if ((pool->taken[index / 8] & bit) == 0) {
        pthread_mutex_unlock(&pool->lock);
        return COPENSSL_LARGE_FREE_NOT_TAKEN;
    }
    pool->taken[index / 8] &= (uint8_t)~bit;
    pool->in_use--;
    if (pool->resident_free_count < RESIDENT_FREE_SLOTS) {
        pool->resident_free[pool->resident_free_count++] = index;
        pthread_mutex_unlock(&pool->lock);
        return 0;
    }
    pthread_mutex_unlock(&pool->lock);
    // Outside the lock: the slot belongs to nobody until it is listed.
    madvise(p, pool->slot_size, MADV_DONTNEED);
    pthread_mutex_lock(&pool->lock);
    pool->released_free[pool->released_free_count++] = index;
    pthread_mutex_unlock(&pool->lock);
    return 0;
}

void *copenssl_large_malloc(size_t size, const char *file, int line) {
    (void)file; (void)line;
    slot_pool *pool = pool_for_size(size);
    if (pool != NULL) {
        void *slot = take_slot(pool);
        if (slot != NULL) return slot;
    }
    return malloc(size);
}

static int free_checked(void *p) {
    if (p == NULL) return 0;
    slot_pool *pool = pool_holding(p);
    if (pool == NULL) {
        free(p);
        return 0;
    }
    return give_back_slot(pool, p);
}

// Like glibc's free, a double or invalid free stops the process rather than let two
// owners share one buffer of key material.
void copenssl_large_free(void *p, const char *file, int line) {
    int status = free_checked(p);
    if (status != 0) {
        fprintf(stderr, "copenssl_large_free(): %s of %p (%s:%d)\n",
                status == COPENSSL_LARGE_FREE_NOT_TAKEN ? "double free" : "free of a pointer inside a slot",
                p, file != NULL ? file : "?", line);
        abort();
    }
}

void *copenssl_large_realloc(void *p, size_t size, const char *file, int line) {
    if (p == NULL) return copenssl_large_malloc(size, file, line);
    if (size == 0) {
        copenssl_large_free(p, file, line);
        return NULL;
    }
    slot_pool *from = pool_holding(p);
    if (from == NULL && pool_for_size(size) == NULL) return realloc(p, size);
    if (from != NULL && (size_t)((uint8_t *)p - from->region) % from->slot_size != 0) {
        copenssl_large_free(p, file, line);  // not a slot's start: aborts
        return NULL;
    }
    if (from != NULL && size >= from->smallest && size <= from->slot_size) return p;
    void *moved = copenssl_large_malloc(size, file, line);
    if (moved == NULL) return NULL;
    size_t old = from != NULL ? from->slot_size : malloc_usable_size(p);
    memcpy(moved, p, old < size ? old : size);
    copenssl_large_free(p, file, line);
    return moved;
}

int copenssl_large_buffer_is_pooled(const void *p) { return pool_holding(p) != NULL; }

int copenssl_large_pool_double_free_check(void) {
    // A private pool of four slots, so the check never frees a slot another thread owns.
    slot_pool pool = {.smallest = 1, .slot_size = 4096, .slot_count = 4, .lock = PTHREAD_MUTEX_INITIALIZER};
    uint32_t released[4];
    uint8_t taken[1] = {0};
    pool.region = aligned_alloc(4096, 4 * 4096);
    if (pool.region == NULL) return -1;
    pool.released_free = released;
    pool.taken = taken;
    int failed = 0;
    uint8_t *a = take_slot(&pool);
    if (give_back_slot(&pool, a) != 0) failed = 1;
    else if (give_back_slot(&pool, a) != COPENSSL_LARGE_FREE_NOT_TAKEN) failed = 2;
    else if (pool.in_use != 0 || pool.resident_free_count != 1) failed = 3;
    if (!failed) {
        uint8_t *b = take_slot(&pool);
        uint8_t *c = take_slot(&pool);
        if (b == c) failed = 4;
        else if (give_back_slot(&pool, b + 16) != COPENSSL_LARGE_FREE_NOT_A_SLOT) failed = 5;
        else if (give_back_slot(&pool, b) != 0 || give_back_slot(&pool, c) != 0) failed = 6;
    }
    free(pool.region);
    return failed;
}

copenssl_large_buffer_stats copenssl_large_buffers(void) {
    copenssl_large_buffer_stats stats = {0};
    for (size_t i = 0; i < POOL_COUNT; i++) {
        slot_pool *pool = &pools[i];
        pthread_mutex_lock(&pool->lock);
        stats.enabled |= pool->region != NULL;
        stats.in_use += pool->in_use;
        stats.resident_free += pool->resident_free_count;
        stats.released_free += pool->released_free_count;
        pthread_mutex_unlock(&pool->lock);
    }
    return stats;
}

static void reserve(slot_pool *pool) {
    void *region = mmap(NULL, pool->slot_size * pool->slot_count, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return;
    uint32_t *list = malloc(sizeof(uint32_t) * pool->slot_count);
    uint8_t *taken = calloc((pool->slot_count + 7) / 8, 1);
    if (list == NULL || taken == NULL) {
        free(list);
        free(taken);
        munmap(region, pool->slot_size * pool->slot_count);
        return;
    }
    pool->released_free = list;
    pool->taken = taken;
    pool->region = region;
}

// CRYPTO_set_mem_functions only takes effect before libcrypto's first
// allocation, which may come from any OpenSSL call (SHA-1 of a WebSocket key
// included): install at load time. A pool whose region could not be reserved
// is skipped; its sizes come from the heap.
__attribute__((constructor)) static void install(void) {
    for (size_t i = 0; i < POOL_COUNT; i++) reserve(&pools[i]);
    if (!CRYPTO_set_mem_functions(copenssl_large_malloc, copenssl_large_realloc, copenssl_large_free)) {
        // Too late to route libcrypto's allocations: nothing will reach the pools.
        for (size_t i = 0; i < POOL_COUNT; i++) pools[i].region = NULL;
    }
}
