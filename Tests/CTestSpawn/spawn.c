#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include "CTestSpawn.h"

// Tests spawn children through this instead of Foundation's Process, whose run() on
// Linux (Swift 6.3.1) can over-read a readdir buffer while it lists /proc/self/fd
// (swift-corelibs-foundation PR #5472) and crash the test process now and then.
int test_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd,
               const char *output_path, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    int status = posix_spawn_file_actions_init(&actions);
    if (status != 0) return status;
    const char *out = output_path ? output_path : "/dev/null";
    status = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (status == 0) status = posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (status == 0) status = posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (status == 0) status = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (status == 0 && cwd) status = posix_spawn_file_actions_addchdir_np(&actions, cwd);
    if (status == 0) status = posix_spawn(pid, path, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    return status;
}
