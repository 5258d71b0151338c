#ifndef CTESTSPAWN_H
#define CTESTSPAWN_H
#include <sys/types.h>

/// posix_spawn of `path` with `argv` and `envp` (NULL-terminated), in `cwd` (NULL: the
/// caller's), stdout and stderr appended to `output_path` (NULL: /dev/null), stdin from
/// /dev/null, every other descriptor closed in the child. Returns 0 and sets *pid, or an errno.
int test_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd,
               const char *output_path, pid_t *pid);

#endif
