// The system OpenSSL's own cost of one TLS 1.3 handshake, per side, with no
// socket, HTTP or WebSocket work: client and server in one thread, joined by a
// BIO pair, each side's SSL_do_handshake (and SSL_new / SSL_free) timed on the
// thread's CPU clock. Same settings as the gateway's TLSContext: TLS 1.2–1.3,
// ECDSA certificate, no session cache or tickets, buffers released while idle,
// client without verification (as chat-loadtest). Built and run by
// scripts/measure-tls-floor.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static SSL_CTX *context(const SSL_METHOD *method) {
    SSL_CTX *ctx = SSL_CTX_new(method);
    if (ctx == NULL) return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    return ctx;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s CERT.pem KEY.pem HANDSHAKES [GROUP]\n", argv[0]);
        return 2;
    }
    int count = atoi(argv[3]);
    SSL_CTX *server = context(TLS_server_method()), *client = context(TLS_client_method());
    if (server == NULL || client == NULL
        || SSL_CTX_use_certificate_chain_file(server, argv[1]) != 1
        || SSL_CTX_use_PrivateKey_file(server, argv[2], SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    SSL_CTX_set_session_cache_mode(server, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(server, 0);
    SSL_CTX_set_verify(client, SSL_VERIFY_NONE, NULL);
    if (argc > 4) SSL_CTX_set1_groups_list(client, argv[4]);

    double client_seconds = 0, server_seconds = 0;
    const char *version = "?", *cipher = "?";
    for (int i = 0; i < count; i++) {
        double t0 = thread_cpu_seconds();
        SSL *c = SSL_new(client);
        double t1 = thread_cpu_seconds();
        SSL *s = SSL_new(server);
        server_seconds += thread_cpu_seconds() - t1;
        client_seconds += t1 - t0;
        BIO *client_end, *server_end;
        BIO_new_bio_pair(&client_end, 0, &server_end, 0);
        SSL_set_bio(c, client_end, client_end);
        SSL_set_bio(s, server_end, server_end);
        SSL_set_connect_state(c);
        SSL_set_accept_state(s);
        int client_done = 0, server_done = 0;
        for (int step = 0; !(client_done && server_done); step++) {
            if (step > 16) {
                fprintf(stderr, "handshake %d did not complete\n", i);
                ERR_print_errors_fp(stderr);
                return 1;
            }
            t0 = thread_cpu_seconds();
            if (!client_done) client_done = SSL_do_handshake(c) == 1;
            t1 = thread_cpu_seconds();
            if (!server_done) server_done = SSL_do_handshake(s) == 1;
            server_seconds += thread_cpu_seconds() - t1;
            client_seconds += t1 - t0;
        }
        version = SSL_get_version(s);
        cipher = SSL_get_cipher_name(s);
        t0 = thread_cpu_seconds();
        SSL_free(c);
        t1 = thread_cpu_seconds();
        SSL_free(s);
        server_seconds += thread_cpu_seconds() - t1;
        client_seconds += t1 - t0;
    }
    printf("%s, %s %s, %d handshakes: server %.0f us each (at most %.0f/s on one core), "
           "client %.0f us each (at most %.0f/s)\n",
           OpenSSL_version(OPENSSL_VERSION), version, cipher, count,
           server_seconds / count * 1e6, count / server_seconds,
           client_seconds / count * 1e6, count / client_seconds);
    return 0;
}
