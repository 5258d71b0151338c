#ifndef COPENSSL_H
#define COPENSSL_H
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <openssl/bio.h>

// Functions for what libssl only offers as macros.
long copenssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version);
long copenssl_ctx_set_max_proto_version(SSL_CTX *ctx, int version);
long copenssl_ctx_set_mode(SSL_CTX *ctx, long mode);
long copenssl_ctx_set_session_cache_off(SSL_CTX *ctx);
// No renegotiation, no TLS compression.
void copenssl_ctx_set_hardening_options(SSL_CTX *ctx);
long copenssl_set_tlsext_host_name(SSL *ssl, const char *name);

// A BIO that reads from a borrowed input slice and hands every write to a
// callback, so TLS records go straight between the event loop's buffers and
// libssl with no memory BIO holding copies per connection.
typedef int (*copenssl_bio_write_fn)(void *owner, const uint8_t *bytes, int length);

typedef struct copenssl_bio_io {
    const uint8_t *input;
    size_t input_length;
    void *owner;
    copenssl_bio_write_fn write;
} copenssl_bio_io;

// Creates a BIO bound to `io`; `io` must outlive the BIO.
BIO *copenssl_bio_new(copenssl_bio_io *io);

// libcrypto's allocator (large_buffers.c): buffers of 12-32 KiB come from
// reserved slots instead of the heap. Exposed for tests.
void *copenssl_large_malloc(size_t size, const char *file, int line);
void *copenssl_large_realloc(void *p, size_t size, const char *file, int line);
void copenssl_large_free(void *p, const char *file, int line);

typedef struct copenssl_large_buffer_stats {
    int enabled;
    uint32_t in_use;
    uint32_t resident_free;
    uint32_t released_free;
} copenssl_large_buffer_stats;

copenssl_large_buffer_stats copenssl_large_buffers(void);

// What a free of a pooled pointer found wrong (nothing is freed then; copenssl_large_free aborts).
#define COPENSSL_LARGE_FREE_NOT_TAKEN 1
#define COPENSSL_LARGE_FREE_NOT_A_SLOT 2
// Runs a double free, a free inside a slot and reuse through the pool code on a private
// pool: 0 when each is caught and no slot is handed out twice, else the failed step.
int copenssl_large_pool_double_free_check(void);
int copenssl_large_buffer_is_pooled(const void *p);

// Session tickets under rotating keys (ticket_keys.c). Install once on a server
// context (its sessions then live `lifetime_seconds`); rotate from any thread; free
// after the context.
typedef struct copenssl_ticket_keys copenssl_ticket_keys;
copenssl_ticket_keys *copenssl_ticket_keys_install(SSL_CTX *ctx, long lifetime_seconds);
int copenssl_ticket_keys_rotate(copenssl_ticket_keys *keys);
void copenssl_ticket_keys_free(copenssl_ticket_keys *keys);

#endif
