#define _GNU_SOURCE
#include <sched.h>
#include <errno.h>
#include "CEpoll.h"

int cepoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int cepoll_add(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = { .events = events, .data.u64 = token };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int cepoll_modify(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = { .events = events, .data.u64 = token };
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event);
}

int cepoll_remove(int epfd, int fd) {
    struct epoll_event event = { 0 };
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &event);
}

int cepoll_poll(int epfd, cepoll_ready *ready, int capacity) {
    struct epoll_event events[512];
    if (capacity > 512) capacity = 512;
    int count;
    do {
        count = epoll_wait(epfd, events, capacity, 0);
    } while (count < 0 && errno == EINTR);
    for (int i = 0; i < count; i++) {
        ready[i].token = events[i].data.u64;
        ready[i].events = events[i].events;
    }
    return count;
}

int cepoll_schedulable_cpus(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    return CPU_COUNT(&set);
}
