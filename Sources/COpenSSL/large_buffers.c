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
    pthread_mutex_unlock(&pool->lock);
    return pool->region + (size_t)index * pool->slot_size;
}

static void give_back_slot(slot_pool *pool, void *p) {
    uint32_t index = (uint32_t)(((uint8_t *)p - pool->region) / pool->slot_size);
    pthread_mutex_lock(&pool->lock);
    pool->in_use--;
    if (pool->resident_free_count < RESIDENT_FREE_SLOTS) {
        pool->resident_free[pool->resident_free_count++] = index;
        pthread_mutex_unlock(&pool->lock);
        return;
    }
    pthread_mutex_unlock(&pool->lock);
    // Outside the lock: the slot belongs to nobody until it is listed.
    madvise(p, pool->slot_size, MADV_DONTNEED);
    pthread_mutex_lock(&pool->lock);
    pool->released_free[pool->released_free_count++] = index;
    pthread_mutex_unlock(&pool->lock);
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

void copenssl_large_free(void *p, const char *file, int line) {
    (void)file; (void)line;
    if (p == NULL) return;
    slot_pool *pool = pool_holding(p);
    if (pool != NULL) give_back_slot(pool, p);
    else free(p);
}

void *copenssl_large_realloc(void *p, size_t size, const char *file, int line) {
    if (p == NULL) return copenssl_large_malloc(size, file, line);
    if (size == 0) {
        copenssl_large_free(p, file, line);
        return NULL;
    }
    slot_pool *from = pool_holding(p);
    if (from == NULL && pool_for_size(size) == NULL) return realloc(p, size);
    if (from != NULL && size >= from->smallest && size <= from->slot_size) return p;
    void *moved = copenssl_large_malloc(size, file, line);
    if (moved == NULL) return NULL;
    size_t old = from != NULL ? from->slot_size : malloc_usable_size(p);
    memcpy(moved, p, old < size ? old : size);
    copenssl_large_free(p, file, line);
    return moved;
}

int copenssl_large_buffer_is_pooled(const void *p) { return pool_holding(p) != NULL; }

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
    if (list == NULL) {
        munmap(region, pool->slot_size * pool->slot_count);
        return;
    }
    pool->released_free = list;
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
