/*
 * btl_openib_xrc_file.c - open and check the XRC domain file (see the
 * header for why each check is there).
 */
#include "opal_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_xrc_file.h"

int openib_xrc_file_name(char *buf, size_t len, uint32_t jobid, const char *dev_name)
{
    int n;

    if (NULL == dev_name || '\0' == dev_name[0] || NULL != strchr(dev_name, '/')) {
        return OPAL_ERR_BAD_PARAM;
    }
    n = snprintf(buf, len, "openib-xrcd-%08x-%s", (unsigned) jobid, dev_name);
    return n < 0 || (size_t) n >= len ? OPAL_ERR_BAD_PARAM : OPAL_SUCCESS;
}

/* Why st (a directory or the file) may not be used, or NULL when it may. */
static const char *refusal(const struct stat *st, mode_t type, char *buf, size_t len)
{
    if ((st->st_mode & S_IFMT) != type) {
        return S_IFDIR == type ? "it is not a directory" : "it is not a regular file";
    }
    if (st->st_uid != geteuid()) {
        snprintf(buf, len, "it is owned by uid %u, not by this process's uid %u",
                 (unsigned) st->st_uid, (unsigned) geteuid());
        return buf;
    }
    if (st->st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(buf, len, "its mode %04o gives group or others access (must be %s)",
                 (unsigned) (st->st_mode & 07777), S_IFDIR == type ? "0700" : "0600");
        return buf;
    }
    return NULL;
}

int openib_xrc_file_open(const char *dir, const char *name, char *why, size_t why_len)
{
    char detail[128];
    const char *bad;
    struct stat st;
    int dfd, fd;

    if (NULL == dir || '\0' == dir[0]) {
        snprintf(why, why_len, "Open MPI gave this process no job session directory");
        return -1;
    }
    /* The directory once, by descriptor: what was checked is where the
     * file is made. O_NOFOLLOW: a link in its place is refused (ELOOP). */
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        int err = errno;

        /* With O_DIRECTORY a link says ENOTDIR: tell the user which. */
        snprintf(why, why_len, "the directory %s cannot be opened: %s", dir,
                 ELOOP == err || (0 == lstat(dir, &st) && S_ISLNK(st.st_mode))
                     ? "it is a symbolic link" : strerror(err));
        return -1;
    }
    if (0 != fstat(dfd, &st)) {
        snprintf(why, why_len, "the directory %s cannot be checked: %s", dir, strerror(errno));
        goto err_dir;
    }
    bad = refusal(&st, S_IFDIR, detail, sizeof(detail));
    if (NULL != bad) {
        snprintf(why, why_len, "the directory %s is not private: %s", dir, bad);
        goto err_dir;
    }
    /* The first local process creates it; the others open what it made.
     * O_NONBLOCK: a FIFO planted at the name must not block the open (the
     * type check then refuses it). */
    fd = openat(dfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                0600);
    if (fd < 0 && EEXIST == errno) {
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    }
    if (fd < 0) {
        snprintf(why, why_len, "the file %s/%s cannot be opened: %s", dir, name,
                 ELOOP == errno ? "it is a symbolic link" : strerror(errno));
        goto err_dir;
    }
    if (0 != fstat(fd, &st)) {
        snprintf(why, why_len, "the file %s/%s cannot be checked: %s", dir, name,
                 strerror(errno));
        goto err_file;
    }
    bad = refusal(&st, S_IFREG, detail, sizeof(detail));
    if (NULL != bad) {
        snprintf(why, why_len, "the file %s/%s may not be used: %s", dir, name, bad);
        goto err_file;
    }
    close(dfd);
    return fd;

err_file:
    close(fd);
err_dir:
    close(dfd);
    return -1;
}
