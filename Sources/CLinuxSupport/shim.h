// Linux system calls that Swift's Glibc module does not expose (header only, no library).
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

/// Opens `path` for reading strictly beneath the directory `dirfd`: no "..", no absolute path,
/// no symbolic link anywhere on the way (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS),
/// checked by the kernel in one call. Returns -1 with errno set on failure (ENOSYS before Linux 5.6).
/// O_NONBLOCK keeps a FIFO or device swapped in from blocking the open; it changes nothing for the
/// regular files callers accept (they check with fstat).
static inline int clinux_open_beneath(int dirfd, const char *path) {
    struct open_how how = {0};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}
