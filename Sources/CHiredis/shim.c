#include <stdlib.h>
#include "CHiredis.h"

typedef struct {
    void *owner;
    chiredis_interest_fn interest;
    chiredis_status_fn connected;
    chiredis_status_fn disconnected;
    chiredis_reply_fn reply;
    chiredis_status_fn released;
    int reading;
    int writing;
    int connected_once;
} attachment;

static void tell(attachment *a) { a->interest(a->owner, a->reading, a->writing); }
static void add_read(void *p) { attachment *a = p; if (!a->reading) { a->reading = 1; tell(a); } }
static void del_read(void *p) { attachment *a = p; if (a->reading) { a->reading = 0; tell(a); } }
static void add_write(void *p) { attachment *a = p; if (!a->writing) { a->writing = 1; tell(a); } }
static void del_write(void *p) { attachment *a = p; if (a->writing) { a->writing = 0; tell(a); } }

// Called while the context is freed: after the pending replies got NULL, before the
// disconnect callback, which hiredis makes only for a context that was connected.
static void cleanup(void *p) {
    attachment *a = p;
    a->reading = 0;
    a->writing = 0;
    tell(a);
    if (!a->connected_once) {
        a->released(a->owner, 0);
        free(a);
    }
}

static void on_connect(const redisAsyncContext *ac, int status) {
    attachment *a = ac->ev.data;
    if (status == REDIS_OK) a->connected_once = 1;
    a->connected(a->owner, status);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    attachment *a = ac->ev.data;
    a->disconnected(a->owner, status);
    // The context is freed after this returns; so is the attachment.
    a->released(a->owner, 0);
    free(a);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *box) {
    attachment *a = ac->ev.data;
    if (a) a->reply(box, (const redisReply *)reply);
}

int chiredis_attach(redisAsyncContext *ac, void *owner, chiredis_interest_fn interest,
                    chiredis_status_fn connected, chiredis_status_fn disconnected, chiredis_reply_fn reply,
                    chiredis_status_fn released) {
    attachment *a = calloc(1, sizeof(attachment));
    if (!a) return -1;
    a->owner = owner;
    a->interest = interest;
    a->connected = connected;
    a->disconnected = disconnected;
    a->reply = reply;
    a->released = released;
    ac->ev.data = a;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    return 0;
}

int chiredis_command(redisAsyncContext *ac, void *box, int argc, const char **argv, const size_t *argvlen) {
    return redisAsyncCommandArgv(ac, on_reply, box, argc, argv, argvlen);
}

int chiredis_fd(const redisAsyncContext *ac) { return ac->c.fd; }
