/*
 * test_help_dir.c - which component counts as the build tree's own copy
 * (mca/btl_openib_help_dir.c): only that one reads help texts from the
 * source tree; every other (installed) one reads the installed directory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mca/btl_openib_help_dir.h"
#include "tests/unit/unit.h"

int main(void)
{
    char top[] = "/tmp/openib-helpdir-XXXXXX";
    char libs[PATH_MAX], inst[PATH_MAX], so[PATH_MAX], other[PATH_MAX], link[PATH_MAX],
        libs_link[PATH_MAX];
    FILE *f;

    if (NULL == mkdtemp(top)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(libs, sizeof(libs), "%s/build/.libs", top);
    snprintf(inst, sizeof(inst), "%s/prefix", top);
    snprintf(so, sizeof(so), "%s/mca_btl_openib.so", libs);
    snprintf(other, sizeof(other), "%s/mca_btl_openib.so", inst);
    snprintf(link, sizeof(link), "%s/linked.so", inst);
    snprintf(libs_link, sizeof(libs_link), "%s/libs-link", top);
    {
        char b[PATH_MAX];
        snprintf(b, sizeof(b), "%s/build", top);
        CHECK(0 == mkdir(b, 0700));
    }
    CHECK(0 == mkdir(libs, 0700));
    CHECK(0 == mkdir(inst, 0700));
    CHECK(NULL != (f = fopen(so, "w")) && 0 == fclose(f));
    CHECK(NULL != (f = fopen(other, "w")) && 0 == fclose(f));

    /* the build tree's copy: uninstalled */
    CHECK(openib_help_from_build_tree(so, libs));
    /* an installed copy, even of the same name: installed */
    CHECK(!openib_help_from_build_tree(other, libs));
    /* a file in a subdirectory of the build libdir is not its copy */
    CHECK(!openib_help_from_build_tree(so, top));
    /* links resolve: a link to the build copy is the build copy; the
     * libdir named through a link is the same directory */
    CHECK(0 == symlink(so, link));
    CHECK(openib_help_from_build_tree(link, libs));
    CHECK(0 == symlink(libs, libs_link));
    CHECK(openib_help_from_build_tree(so, libs_link));
    /* what cannot be resolved counts as installed (the safe side) */
    CHECK(!openib_help_from_build_tree("/nonexistent/mca_btl_openib.so", libs));
    CHECK(!openib_help_from_build_tree(so, "/nonexistent/.libs"));
    CHECK(!openib_help_from_build_tree(NULL, libs));
    CHECK(!openib_help_from_build_tree(so, NULL));

    unlink(libs_link);
    unlink(link);
    unlink(other);
    unlink(so);
    rmdir(inst);
    rmdir(libs);
    {
        char b[PATH_MAX];
        snprintf(b, sizeof(b), "%s/build", top);
        rmdir(b);
    }
    CHECK(0 == rmdir(top));
    return unit_finish("test_help_dir");
}
