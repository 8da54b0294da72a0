/*
 * test_path_check.c - the plug-in path rule (mca/btl_openib_path_check.c):
 * what is refused, what is accepted, and what a symbolic link resolves to.
 */
#include "opal_config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opal/constants.h"

#include "mca/btl_openib_path_check.h"
#include "tests/unit/unit.h"

static char top[PATH_MAX];

static void make_file(const char *path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    CHECK(fd >= 0);
    if (fd >= 0) {
        close(fd);
    }
    CHECK(0 == chmod(path, mode)); /* exact, whatever the umask */
}

static int check(const char *path, char *resolved, char *why)
{
    why[0] = '\0';
    return openib_plugin_path_check(path, resolved, why, 256);
}

int main(void)
{
    char p[PATH_MAX], q[PATH_MAX], d[PATH_MAX], resolved[PATH_MAX], why[256];

    snprintf(top, sizeof(top), "%s/openib-path-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (NULL == mkdtemp(top) || NULL == realpath(top, top)) {
        perror("mkdtemp");
        return 1;
    }
    CHECK(0 == chmod(top, 0700));

    /* a good file is accepted and resolves to itself */
    snprintf(p, sizeof(p), "%s/good.so", top);
    make_file(p, 0755);
    CHECK(OPAL_SUCCESS == check(p, resolved, why));
    CHECK(0 == strcmp(resolved, p));
    make_file(p, 0444); /* read-only is fine too */
    CHECK(OPAL_SUCCESS == check(p, resolved, why));

    /* relative paths are refused even when they exist */
    CHECK(0 == chdir(top));
    CHECK(OPAL_ERR_BAD_PARAM == check("good.so", resolved, why));
    CHECK_STR_CONTAINS(why, "'good.so' is not an absolute path");
    CHECK(OPAL_ERR_BAD_PARAM == check("./good.so", resolved, why));
    CHECK(OPAL_ERR_BAD_PARAM == check("", resolved, why));
    CHECK(OPAL_ERR_BAD_PARAM == check(NULL, resolved, why));

    /* a missing file is a load failure, not a breach of the rule */
    snprintf(q, sizeof(q), "%s/missing.so", top);
    CHECK(OPAL_ERR_NOT_FOUND == check(q, resolved, why));
    CHECK_STR_CONTAINS(why, "No such file");

    /* group- and world-writable files are refused */
    snprintf(q, sizeof(q), "%s/group.so", top);
    make_file(q, 0775);
    CHECK(OPAL_ERR_BAD_PARAM == check(q, resolved, why));
    CHECK_STR_CONTAINS(why, "group-writable (mode 0775)");
    snprintf(q, sizeof(q), "%s/world.so", top);
    make_file(q, 0757);
    CHECK(OPAL_ERR_BAD_PARAM == check(q, resolved, why));
    CHECK_STR_CONTAINS(why, "world-writable (mode 0757)");

    /* not a regular file */
    CHECK(OPAL_ERR_BAD_PARAM == check(top, resolved, why));
    CHECK_STR_CONTAINS(why, "is not a regular file");

    /* a symbolic link to a good file: followed, and the target is what to
     * load; one to a group-writable file: refused */
    snprintf(q, sizeof(q), "%s/link.so", top);
    CHECK(0 == symlink(p, q));
    CHECK(OPAL_SUCCESS == check(q, resolved, why));
    CHECK(0 == strcmp(resolved, p));
    snprintf(q, sizeof(q), "%s/badlink.so", top);
    snprintf(d, sizeof(d), "%s/group.so", top);
    CHECK(0 == symlink(d, q));
    CHECK(OPAL_ERR_BAD_PARAM == check(q, resolved, why));
    CHECK_STR_CONTAINS(why, "group-writable");

    /* the directory: world-writable refused, unless sticky */
    snprintf(d, sizeof(d), "%s/open", top);
    CHECK(0 == mkdir(d, 0700));
    snprintf(q, sizeof(q), "%s/open/p.so", top);
    make_file(q, 0644);
    CHECK(0 == chmod(d, 0777));
    CHECK(OPAL_ERR_BAD_PARAM == check(q, resolved, why));
    CHECK_STR_CONTAINS(why, "is world-writable and not sticky (mode 0777)");
    CHECK(0 == chmod(d, 0770));
    CHECK(OPAL_ERR_BAD_PARAM == check(q, resolved, why));
    CHECK_STR_CONTAINS(why, "is group-writable and not sticky");
    CHECK(0 == chmod(d, 01777));
    CHECK(OPAL_SUCCESS == check(q, resolved, why));

    /* the rule text users see names every part */
    CHECK_STR_CONTAINS(OPENIB_PLUGIN_PATH_RULE, "absolute path");
    CHECK_STR_CONTAINS(OPENIB_PLUGIN_PATH_RULE, "sticky");

    unlink(q);
    rmdir(d);
    snprintf(q, sizeof(q), "%s/link.so", top); unlink(q);
    snprintf(q, sizeof(q), "%s/badlink.so", top); unlink(q);
    snprintf(q, sizeof(q), "%s/group.so", top); unlink(q);
    snprintf(q, sizeof(q), "%s/world.so", top); unlink(q);
    unlink(p);
    CHECK(0 == chdir("/"));
    CHECK(0 == rmdir(top));
    return unit_finish("test_path_check");
}
