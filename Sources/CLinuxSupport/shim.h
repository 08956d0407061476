// Linux system calls that Swift's Glibc module does not expose (header only, no library).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   // pipe2
#endif
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <string.h>

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

/// Opens `path` beneath `dirfd` as clinux_open_beneath does, but only as a location (O_PATH): for
/// an `fstat` of what is there, with no access to its bytes. Returns -1 with errno set on failure.
static inline int clinux_open_path_beneath(int dirfd, const char *path) {
    struct open_how how = {0};
    how.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/// Opens `path` beneath `dirfd` with `flags` (O_CLOEXEC and O_NOFOLLOW added; `mode` when they
/// hold O_CREAT) as clinux_open_beneath resolves it: no "..", no absolute path, no symbolic link
/// anywhere on the way. For files made in a folder another process can change. Returns -1 with
/// errno set on failure (ENOSYS before Linux 5.6).
static inline int clinux_open_beneath_with(int dirfd, const char *path, int flags, unsigned int mode) {
    struct open_how how = {0};
    how.flags = (unsigned long long)(unsigned int)(flags | O_CLOEXEC | O_NOFOLLOW);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/// Renames `oldpath` (relative to `olddirfd`) to `newpath` (relative to `newdirfd`), failing with
/// EEXIST instead of replacing what is there (renameat2 with RENAME_NOREPLACE). Neither name is
/// followed if it is a symbolic link: the link itself is renamed, or refused as existing.
static inline int clinux_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 1 /* RENAME_NOREPLACE */);
}

// MARK: Child processes in their own process group (BacklotBasics.ChildProcess)
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

/// Starts `path` with `argv` and `envp` as the leader of a new process group, its standard input,
/// output and error on `in_fd`, `out_fd` and `err_fd`; no other descriptor of the caller is
/// inherited. The child is *held* before it executes anything: it waits for one byte on the pipe
/// whose write end is returned in `*go_fd`, so that the caller can record the process group
/// first; when that end is closed without a byte (the caller died), the child exits with 127.
/// `*exec_error_fd` is a pipe read end that receives the child's errno when execve fails and
/// reaches end-of-file when it succeeded. Signal dispositions and the signal mask are reset.
/// Only async-signal-safe calls run between fork and execve. Returns the pid, or -1 with errno.
static inline pid_t clinux_spawn_held(const char *path, char *const argv[], char *const envp[],
                                      int in_fd, int out_fd, int err_fd, int *go_fd, int *exec_error_fd) {
    int go[2], ex[2];
    if (pipe2(go, O_CLOEXEC) != 0) return -1;
    if (pipe2(ex, O_CLOEXEC) != 0) { int e = errno; close(go[0]); close(go[1]); errno = e; return -1; }
    pid_t pid = fork();
    if (pid < 0) { int e = errno; close(go[0]); close(go[1]); close(ex[0]); close(ex[1]); errno = e; return -1; }
    if (pid == 0) {
        close(go[1]);   // so that the caller's death closes the go pipe's only writer
        close(ex[0]);
        setpgid(0, 0);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        // Standard descriptors, moved out of the way first if they collide.
        int fds[3] = {in_fd, out_fd, err_fd};
        for (int i = 0; i < 3; i++) if (fds[i] >= 0 && fds[i] < 3) { int d = fcntl(fds[i], F_DUPFD_CLOEXEC, 3); if (d < 0) _exit(127); fds[i] = d; }
        for (int i = 0; i < 3; i++) if (fds[i] >= 0 && dup2(fds[i], i) < 0) _exit(127);
        // Everything else closes at execve (the go pipe is still readable until then).
        if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) != 0) {
            for (int fd = 3; fd < 65536; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        char c;
        ssize_t n;
        do { n = read(go[0], &c, 1); } while (n < 0 && errno == EINTR);
        if (n != 1) _exit(127);
        execve(path, argv, envp);
        int e = errno;
        ssize_t w;
        do { w = write(ex[1], &e, sizeof e); } while (w < 0 && errno == EINTR);
        _exit(127);
    }
    setpgid(pid, pid);   // also in the parent, so that the group exists when fork returns
    close(go[0]);
    close(ex[1]);
    *go_fd = go[1];
    *exec_error_fd = ex[0];
    return pid;
}

/// pipe2(fds, O_CLOEXEC), which Swift's Glibc module does not expose.
static inline int clinux_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

/// syncfs(fd): flushes every written file and folder of the file system that holds `fd`, in one
/// call (how a tree of many new files is made durable), which Swift's Glibc module does not expose.
static inline int clinux_syncfs(int fd) {
    return syncfs(fd);
}

/// Starts writing `fd`'s dirty pages to disk without waiting for them (sync_file_range with
/// SYNC_FILE_RANGE_WRITE): a later fsync or syncfs then finds most of them written. Not a
/// durability guarantee by itself (no metadata, no disk cache flush).
static inline int clinux_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

/// Opens the existing regular file `path` for writes that bypass the page cache (O_DIRECT: from
/// the caller's buffer to the device, no copy), or -1 with errno set (EINVAL: the file system
/// does not support it). Buffers, offsets and lengths must then be aligned to the device's block.
static inline int clinux_open_direct_write(const char *path) {
    return open(path, O_WRONLY | O_DIRECT | O_CLOEXEC | O_NOFOLLOW);
}

/// A descriptor that becomes readable when the process exits (pidfd_open, Linux 5.3), or -1.
static inline int clinux_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/// Whether the child `pid` has ended, without reaping it (waitid with WNOWAIT): 1 yes, 0 no, -1 error.
static inline int clinux_has_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    return info.si_pid == pid ? 1 : 0;
}

/// Reaps the child `pid` (blocking): `*exit_status` is its exit status or -1, `*signal_number`
/// the signal that ended it or 0, and `usage` (a `struct rusage`, or NULL) receives what it used,
/// from wait4(2). The structure is passed as a pointer only, so that this header need not include
/// <sys/resource.h> (whose enums clash with Glibc's module). Returns 0, or -1 with errno.
static inline int clinux_reap(pid_t pid, int *exit_status, int *signal_number, void *usage) {
    int status = 0;
    pid_t r;
    do { r = wait4(pid, &status, 0, (struct rusage *)usage); } while (r < 0 && errno == EINTR);
    if (r < 0) return -1;
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *signal_number = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

/// Open file description locks (fcntl F_OFD_*) on a whole file: like flock(2) — held by the open
/// file, released when it is closed, shared or exclusive — but a lock can be *tested* without
/// being taken (F_OFD_GETLK), so asking whether another process holds one never makes a
/// concurrent taker fail. `exclusive`: 1 for a write lock, 0 for a read (shared) lock; `wait`: 1
/// to block until it is granted. Returns 0, or -1 with errno (EAGAIN when it is held and `wait` is 0).
static inline int clinux_ofd_lock(int fd, int exclusive, int wait) {
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = exclusive ? F_WRLCK : F_RDLCK;
    l.l_whence = SEEK_SET;
    return fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &l);
}

/// Releases an open file description lock taken with clinux_ofd_lock. Returns 0, or -1 with errno.
static inline int clinux_ofd_unlock(int fd) {
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = F_UNLCK;
    l.l_whence = SEEK_SET;
    return fcntl(fd, F_OFD_SETLK, &l);
}

/// Whether another open file description holds a lock on the file that conflicts with a lock of
/// the kind `exclusive` (1: any lock; 0: an exclusive one), without taking any: 1 yes, 0 no, -1 error.
static inline int clinux_ofd_conflicts(int fd, int exclusive) {
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = exclusive ? F_WRLCK : F_RDLCK;
    l.l_whence = SEEK_SET;
    if (fcntl(fd, F_OFD_GETLK, &l) != 0) return -1;
    return l.l_type != F_UNLCK ? 1 : 0;
}

#include <pthread.h>

/// Names the calling thread (what `ps -L`, `top -H` and gdb show): the first 15 bytes of `name`,
/// the kernel's limit. A new thread otherwise keeps the name of the thread that made it.
static inline void clinux_name_this_thread(const char *name) {
    char kept[16];
    strncpy(kept, name, sizeof kept - 1);
    kept[sizeof kept - 1] = '\0';
    pthread_setname_np(pthread_self(), kept);
}

#include <malloc.h>

/// Caps how many memory arenas glibc's malloc makes (mallopt M_ARENA_MAX; by default up to eight
/// per core, one for each thread that allocates while the others' are busy). Returns 1 when set.
static inline int clinux_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count);
}

/// Makes every block of at least `bytes` bytes a mapping of its own, given back to the kernel when
/// it is freed (mallopt M_MMAP_THRESHOLD, fixed). glibc otherwise raises the threshold to the
/// largest such block freed so far (up to 32 MiB), after which large blocks come from the heap and
/// stay resident once freed. Returns 1 when set.
static inline int clinux_malloc_map_blocks_from(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}

/// How many blocks malloc currently holds as mappings of their own (mallinfo2's hblks).
static inline long clinux_malloc_mapped_blocks(void) {
    return (long)mallinfo2().hblks;
}

/// Gives the kernel back the free memory of every arena (malloc_trim(0): the heap's top, and
/// free pages inside it); 1 when some was given back.
static inline int clinux_malloc_trim(void) {
    return malloc_trim(0);
}

// <malloc.h> (above) declares free and brings <stdio.h>'s FILE and open_memstream; <stdlib.h>
// would bring <sys/select.h>, whose fd_set Swift's Glibc module already defines.

/// How many memory arenas glibc's malloc has made so far (the `<heap nr=` elements of
/// malloc_info's report), or -1 when the report cannot be made.
static inline int clinux_malloc_arena_count(void) {
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    if (out == NULL) return -1;
    int status = malloc_info(0, out);
    fclose(out);
    if (status != 0 || text == NULL) { free(text); return -1; }
    int count = 0;
    for (const char *p = text; (p = strstr(p, "<heap nr=")) != NULL; p++) count++;
    free(text);
    return count;
}
