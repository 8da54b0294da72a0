/*
 * test_xrc_file.c - the XRC domain file (btl_openib/btl_openib_xrc_file.c):
 * made 0600 in a private directory, and refused whenever someone else could
 * have planted or can reach it.
 */
#include "opal_config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_xrc_file.h"
#include "tests/unit/unit.h"

static char dir[PATH_MAX], why[512];

static void reset_dir(mode_t mode)
{
    char p[PATH_MAX + 32];

    snprintf(p, sizeof(p), "%s/x", dir);
    unlink(p);
    CHECK(0 == chmod(dir, mode));
}

/* Opening must fail with `expect` in why (and leave no descriptor). */
static void expect_refused(const char *d, const char *name, const char *expect)
{
    int fd = openib_xrc_file_open(d, name, why, sizeof(why));

    CHECK(fd < 0);
    if (fd >= 0) {
        close(fd);
    }
    CHECK_STR_CONTAINS(why, expect);
}

int main(void)
{
    char p[PATH_MAX + 32], q[PATH_MAX + 32], name[64];
    struct stat st, st2;
    int fd, fd2;

    snprintf(dir, sizeof(dir), "/tmp/openib-xrcf-XXXXXX");
    if (NULL == mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(p, sizeof(p), "%s/x", dir);

    /* the name carries the job id and the device */
    CHECK(OPAL_SUCCESS == openib_xrc_file_name(name, sizeof(name), 0x12345678u, "mlx5_0"));
    CHECK(0 == strcmp(name, "openib-xrcd-12345678-mlx5_0"));
    CHECK(OPAL_ERR_BAD_PARAM == openib_xrc_file_name(name, sizeof(name), 1, "../etc"));
    CHECK(OPAL_ERR_BAD_PARAM == openib_xrc_file_name(name, sizeof(name), 1, ""));
    CHECK(OPAL_ERR_BAD_PARAM == openib_xrc_file_name(name, 8, 1, "mlx5_0"));

    /* no session directory: refused */
    expect_refused(NULL, "x", "no job session directory");
    expect_refused("", "x", "no job session directory");

    /* created 0600 in a 0700 directory (whatever the umask), and a second
     * process opens the same file */
    reset_dir(0700);
    umask(0);
    fd = openib_xrc_file_open(dir, "x", why, sizeof(why));
    umask(022);
    CHECK(fd >= 0);
    CHECK(0 == fstat(fd, &st));
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid());
    CHECK(FD_CLOEXEC & fcntl(fd, F_GETFD));
    fd2 = openib_xrc_file_open(dir, "x", why, sizeof(why));
    CHECK(fd2 >= 0);
    CHECK(0 == fstat(fd2, &st2));
    CHECK(st.st_ino == st2.st_ino && st.st_dev == st2.st_dev);
    close(fd);
    close(fd2);

    /* a directory with group or other bits: refused */
    reset_dir(0750);
    expect_refused(dir, "x", "is not private: its mode 0750 gives group or others access");
    reset_dir(0701);
    expect_refused(dir, "x", "mode 0701");
    CHECK(0 != access(p, F_OK)); /* nothing was made there */

    /* the directory named through a symbolic link: refused */
    reset_dir(0700);
    snprintf(q, sizeof(q), "%s-link", dir);
    CHECK(0 == symlink(dir, q));
    expect_refused(q, "x", "it is a symbolic link");
    unlink(q);

    /* a symbolic link planted at the name, dangling or to a real file:
     * refused, and nothing is created through it */
    snprintf(q, sizeof(q), "%s/target", dir);
    CHECK(0 == symlink(q, p));
    expect_refused(dir, "x", "the file");
    CHECK_STR_CONTAINS(why, "it is a symbolic link");
    CHECK(0 != access(q, F_OK));
    fd = open(q, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    close(fd);
    expect_refused(dir, "x", "it is a symbolic link");
    unlink(q);
    reset_dir(0700);

    /* a FIFO planted at the name: refused without blocking */
    CHECK(0 == mkfifo(p, 0600));
    expect_refused(dir, "x", "it is not a regular file");
    reset_dir(0700);

    /* an existing file with group or other bits: refused */
    fd = open(p, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    close(fd);
    CHECK(0 == chmod(p, 0640));
    expect_refused(dir, "x", "its mode 0640 gives group or others access (must be 0600)");
    CHECK(0 == chmod(p, 0604));
    expect_refused(dir, "x", "mode 0604");

    /* owned by someone else (needs root to arrange) */
    if (0 == geteuid()) {
        CHECK(0 == chmod(p, 0600));
        CHECK(0 == chown(p, 65534, 65534));
        expect_refused(dir, "x", "it is owned by uid 65534, not by this process's uid 0");
        reset_dir(0700);
        CHECK(0 == chown(dir, 65534, 65534));
        expect_refused(dir, "x", "is not private: it is owned by uid 65534");
        CHECK(0 == chown(dir, 0, 0));
    } else {
        printf("skipped: files owned by another user (needs root to chown; uid %u)\n",
               (unsigned) geteuid());
    }

    reset_dir(0700);
    CHECK(0 == rmdir(dir));
    return unit_finish("test_xrc_file");
}
