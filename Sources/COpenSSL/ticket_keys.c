// Session tickets (RFC 5077, RFC 8446 §4.6.1) under keys the gateway rotates.
//
// A returning client presents the ticket it got on its last connection and skips the
// certificate signature and the key exchange's verification: the handshake costs a
// fraction of a full one, which is what a reconnect storm needs. The ticket is the
// session encrypted (AES-256-CBC) and authenticated (HMAC-SHA256) under a key only this
// process knows. Keys rotate: tickets made under the current key or the one before are
// accepted (the latter renewed), older ones fall back to a full handshake, so a stolen
// key or ticket is worth at most two rotation periods. Nothing here is written to disk.
#include "COpenSSL.h"
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct ticket_key {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
    int present;
} ticket_key;

struct copenssl_ticket_keys {
    pthread_mutex_t lock;
    ticket_key current;
    ticket_key previous;
};

static int ticket_keys_index = -1;
static pthread_once_t ticket_keys_index_once = PTHREAD_ONCE_INIT;

static void make_index(void) { ticket_keys_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL); }

static int fresh_key(ticket_key *key) {
    if (RAND_bytes(key->name, sizeof key->name) != 1) return 0;
    if (RAND_priv_bytes(key->aes, sizeof key->aes) != 1) return 0;
    if (RAND_priv_bytes(key->hmac, sizeof key->hmac) != 1) return 0;
    key->present = 1;
    return 1;
}

static int set_hmac(EVP_MAC_CTX *hctx, const unsigned char *key) {
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    return EVP_MAC_init(hctx, key, 32, params);
}

// OpenSSL's ticket callback: enc = 1 makes a ticket under the current key; enc = 0 finds
// the key a ticket names. Returns 1 (use it), 2 (use it, and issue a fresh ticket),
// 0 (unknown key: full handshake) or -1 (error).
static int ticket_callback(SSL *ssl, unsigned char key_name[16], unsigned char *iv, EVP_CIPHER_CTX *ctx,
                           EVP_MAC_CTX *hctx, int enc) {
    copenssl_ticket_keys *keys = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ticket_keys_index);
    if (keys == NULL) return -1;
    ticket_key key;
    int result;
    pthread_mutex_lock(&keys->lock);
    if (enc) {
        key = keys->current;
        result = key.present ? 1 : -1;
    } else if (keys->current.present && memcmp(key_name, keys->current.name, 16) == 0) {
        key = keys->current;
        result = 1;
    } else if (keys->previous.present && memcmp(key_name, keys->previous.name, 16) == 0) {
        key = keys->previous;
        result = 2;
    } else {
        result = 0;
    }
    pthread_mutex_unlock(&keys->lock);
    if (result <= 0) return result;
    const EVP_CIPHER *cipher = EVP_aes_256_cbc();
    if (enc) {
        memcpy(key_name, key.name, 16);
        if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(cipher)) != 1) result = -1;
        else if (EVP_EncryptInit_ex(ctx, cipher, NULL, key.aes, iv) != 1) result = -1;
    } else if (EVP_DecryptInit_ex(ctx, cipher, NULL, key.aes, iv) != 1) {
        result = -1;
    }
    if (result > 0 && set_hmac(hctx, key.hmac) != 1) result = -1;
    OPENSSL_cleanse(&key, sizeof key);
    return result;
}

copenssl_ticket_keys *copenssl_ticket_keys_install(SSL_CTX *ctx, long lifetime_seconds) {
    pthread_once(&ticket_keys_index_once, make_index);
    if (ticket_keys_index < 0) return NULL;
    copenssl_ticket_keys *keys = calloc(1, sizeof *keys);
    if (keys == NULL) return NULL;
    pthread_mutex_init(&keys->lock, NULL);
    if (!fresh_key(&keys->current) || SSL_CTX_set_ex_data(ctx, ticket_keys_index, keys) != 1
        || SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_callback) != 1) {
        OPENSSL_cleanse(keys, sizeof *keys);
        free(keys);
        return NULL;
    }
    SSL_CTX_set_timeout(ctx, lifetime_seconds);
    SSL_CTX_set_num_tickets(ctx, 1);
    return keys;
}

void copenssl_ticket_keys_free(copenssl_ticket_keys *keys) {
    if (keys == NULL) return;
    pthread_mutex_destroy(&keys->lock);
    OPENSSL_cleanse(keys, sizeof *keys);
    free(keys);
}

int copenssl_ticket_keys_rotate(copenssl_ticket_keys *keys) {
    ticket_key fresh;
    if (!fresh_key(&fresh)) return 0;
    pthread_mutex_lock(&keys->lock);
    keys->previous = keys->current;
    keys->current = fresh;
    pthread_mutex_unlock(&keys->lock);
    OPENSSL_cleanse(&fresh, sizeof fresh);
    return 1;
}
