/*
 * btl_openib_help_dir.c - is the running component the build tree's copy?
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mca/btl_openib_help_dir.h"

bool openib_help_from_build_tree(const char *loaded, const char *build_libdir)
{
    char file[PATH_MAX], dir[PATH_MAX];
    char *slash;

    if (NULL == loaded || NULL == build_libdir || NULL == realpath(loaded, file) ||
        NULL == realpath(build_libdir, dir)) {
        return false;
    }
    slash = strrchr(file, '/');
    if (NULL == slash || slash == file) {
        return false;
    }
    *slash = '\0';
    return 0 == strcmp(file, dir);
}
