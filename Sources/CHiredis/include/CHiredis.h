#ifndef CHIREDIS_H
#define CHIREDIS_H
#include <stddef.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>

// hiredis's async API driven by an event loop of the caller's (its adapter hooks):
// the loop learns which readiness hiredis wants through `interest`, and calls
// redisAsyncHandleRead / redisAsyncHandleWrite when the socket is ready.

/// hiredis wants to hear about readability and/or writability of the context's socket.
typedef void (*chiredis_interest_fn)(void *owner, int reading, int writing);
/// The connection came up (status REDIS_OK) or failed / went down (REDIS_ERR or REDIS_OK on request).
typedef void (*chiredis_status_fn)(void *owner, int status);
/// A reply for the command sent with `box` (reply NULL: the context went away before it came).
typedef void (*chiredis_reply_fn)(void *box, const redisReply *reply);

/// Installs the hooks; `owner` comes back in every callback. Returns 0, or -1 when out of memory.
/// `released` is the last call for `owner`: hiredis is done with it (the socket closes right after).
int chiredis_attach(redisAsyncContext *ac, void *owner, chiredis_interest_fn interest,
                    chiredis_status_fn connected, chiredis_status_fn disconnected, chiredis_reply_fn reply,
                    chiredis_status_fn released);

/// Sends one command; the reply (or NULL) goes to the attached reply function with `box`.
/// For SUBSCRIBE the function is called for every message until the context goes away.
int chiredis_command(redisAsyncContext *ac, void *box, int argc, const char **argv, const size_t *argvlen);

/// The socket of the context.
int chiredis_fd(const redisAsyncContext *ac);

#endif
