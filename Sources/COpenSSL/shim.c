#include "COpenSSL.h"
#include <string.h>
#include <pthread.h>

long copenssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version) { return SSL_CTX_set_min_proto_version(ctx, version); }
long copenssl_ctx_set_max_proto_version(SSL_CTX *ctx, int version) { return SSL_CTX_set_max_proto_version(ctx, version); }
long copenssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
long copenssl_ctx_set_session_cache_off(SSL_CTX *ctx) { return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); }
void copenssl_ctx_set_hardening_options(SSL_CTX *ctx) { SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION); }
long copenssl_set_tlsext_host_name(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }

static int bio_write(BIO *bio, const char *data, int length) {
    copenssl_bio_io *io = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (io == NULL || io->write == NULL) return -1;
    return io->write(io->owner, (const uint8_t *)data, length);
}

static int bio_read(BIO *bio, char *data, int length) {
    copenssl_bio_io *io = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (io == NULL || length <= 0) return 0;
    if (io->input_length == 0) {
        BIO_set_retry_read(bio);
        return -1;
    }
    size_t n = (size_t)length < io->input_length ? (size_t)length : io->input_length;
    memcpy(data, io->input, n);
    io->input += n;
    io->input_length -= n;
    return (int)n;
}

static long bio_ctrl(BIO *bio, int cmd, long num, void *ptr) {
    (void)bio; (void)num; (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_PUSH: case BIO_CTRL_POP: return 0;
    default: return 0;
    }
}

static int bio_create(BIO *bio) { BIO_set_init(bio, 1); return 1; }
static int bio_destroy(BIO *bio) { BIO_set_data(bio, NULL); return 1; }

static BIO_METHOD *shared_method(void) {
    static BIO_METHOD *method = NULL;
    if (method == NULL) {
        BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "chat-gateway-io");
        BIO_meth_set_write(m, bio_write);
        BIO_meth_set_read(m, bio_read);
        BIO_meth_set_ctrl(m, bio_ctrl);
        BIO_meth_set_create(m, bio_create);
        BIO_meth_set_destroy(m, bio_destroy);
        method = m;
    }
    return method;
}

static pthread_once_t method_once = PTHREAD_ONCE_INIT;
static void init_method(void) { (void)shared_method(); }

BIO *copenssl_bio_new(copenssl_bio_io *io) {
    pthread_once(&method_once, init_method);
    BIO *bio = BIO_new(shared_method());
    if (bio != NULL) BIO_set_data(bio, io);
    return bio;
}
