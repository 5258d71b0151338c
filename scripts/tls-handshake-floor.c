// The system OpenSSL's own cost of one TLS 1.3 handshake, per side, with no
// socket, HTTP or WebSocket work: client and server in one thread, joined by a
// BIO pair, each side's SSL_do_handshake (and SSL_new / SSL_free, and the
// client's read of the session ticket) timed on the thread's CPU clock. Same
// settings as the gateway's TLSContext: TLS 1.2–1.3, ECDSA certificate, no
// session cache, buffers released while idle, client without verification (as
// chat-loadtest). Three modes:
//   full     no tickets: every handshake a full one (tls.ticketKeyRotationSeconds 0)
//   tickets  full handshakes, the server issuing one ticket each under the
//            gateway's own ticket keys (Sources/COpenSSL/ticket_keys.c, linked in):
//            a client's first connection
//   resume   every handshake offers the ticket of the one before and is resumed
//            (checked), the server issuing a fresh ticket each time: a returning client
// Built and run by scripts/measure-tls-floor.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "COpenSSL.h"

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
    const char *mode = "full";
    if (argc > 1 && strncmp(argv[1], "--", 2) == 0) {
        mode = argv[1] + 2;
        argv++;
        argc--;
    }
    int tickets = strcmp(mode, "tickets") == 0, resume = strcmp(mode, "resume") == 0;
    if (argc < 4 || !(tickets || resume || strcmp(mode, "full") == 0)) {
        fprintf(stderr, "usage: %s [--full|--tickets|--resume] CERT.pem KEY.pem HANDSHAKES [GROUP]\n", argv[0]);
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
    if ((tickets || resume) && copenssl_ticket_keys_install(server, 7200) == NULL) {
        fprintf(stderr, "cannot install the ticket keys\n");
        return 1;
    }
    SSL_CTX_set_verify(client, SSL_VERIFY_NONE, NULL);
    if (argc > 4) SSL_CTX_set1_groups_list(client, argv[4]);

    double client_seconds = 0, server_seconds = 0;
    const char *version = "?", *cipher = "?";
    SSL_SESSION *session = NULL;
    int resumed = 0, ticketed = 0;
    // In resume mode handshake 0 only makes the first ticket: it is not counted.
    for (int i = resume ? -1 : 0; i < count; i++) {
        double t0 = thread_cpu_seconds();
        SSL *c = SSL_new(client);
        if (resume && session != NULL) SSL_set_session(c, session);
        double t1 = thread_cpu_seconds();
        SSL *s = SSL_new(server);
        double sserver = thread_cpu_seconds() - t1, sclient = t1 - t0;
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
            sserver += thread_cpu_seconds() - t1;
            sclient += t1 - t0;
        }
        t0 = thread_cpu_seconds();
        if (tickets || resume) {
            // The ticket follows the handshake (TLS 1.3): the client reads it as a client
            // waiting for the server's first bytes would, and keeps the newest session.
            unsigned char byte;
            (void)SSL_read(c, &byte, 1);
            SSL_SESSION *fresh = SSL_get1_session(c);
            if (fresh != NULL && SSL_SESSION_is_resumable(fresh)) {
                if (i >= 0) ticketed++;
                SSL_SESSION_free(session);
                session = fresh;
            } else {
                SSL_SESSION_free(fresh);
            }
        }
        if (i >= 0 && SSL_session_reused(c)) resumed++;
        version = SSL_get_version(s);
        cipher = SSL_get_cipher_name(s);
        // Without a close_notify exchanged, SSL_free would mark the session not resumable.
        SSL_set_shutdown(c, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
        SSL_free(c);
        t1 = thread_cpu_seconds();
        SSL_free(s);
        sserver += thread_cpu_seconds() - t1;
        sclient += t1 - t0;
        if (i >= 0) {
            server_seconds += sserver;
            client_seconds += sclient;
        }
    }
    SSL_SESSION_free(session);
    if (resume && resumed != count) {
        fprintf(stderr, "only %d of %d handshakes resumed\n", resumed, count);
        return 1;
    }
    const char *label = resume ? "resumed (ticket offered, new ticket issued)"
                      : tickets ? "full + ticket issued" : "full, no tickets";
    printf("%s, %s %s, %d handshakes %s: server %.0f us each (at most %.0f/s on one core), "
           "client %.0f us each (at most %.0f/s)%s\n",
           OpenSSL_version(OPENSSL_VERSION), version, cipher, count, label,
           server_seconds / count * 1e6, count / server_seconds,
           client_seconds / count * 1e6, count / client_seconds,
           (tickets || resume) && ticketed != count ? " [some handshakes gave no ticket]" : "");
    return 0;
}
