#ifndef CEPOLL_H
#define CEPOLL_H
#include <stdint.h>
#include <sys/epoll.h>

// struct epoll_event is packed on x86_64; these wrappers take and return plain fields.

/// One ready socket: the token it was added with and its EPOLL* bits.
typedef struct {
    uint64_t token;
    uint32_t events;
} cepoll_ready;

static const uint32_t CEPOLL_IN = EPOLLIN;
static const uint32_t CEPOLL_OUT = EPOLLOUT;
static const uint32_t CEPOLL_ERR = EPOLLERR;
static const uint32_t CEPOLL_HUP = EPOLLHUP;

int cepoll_create(void);
int cepoll_add(int epfd, int fd, uint32_t events, uint64_t token);
int cepoll_modify(int epfd, int fd, uint32_t events, uint64_t token);
int cepoll_remove(int epfd, int fd);
/// epoll_wait without blocking; fills at most `capacity` entries of `ready`.
int cepoll_poll(int epfd, cepoll_ready *ready, int capacity);
/// How many CPUs this process may run on (its affinity mask, as `taskset` sets it); -1 if unknown.
int cepoll_schedulable_cpus(void);

#endif
