/*
 * btl_openib_path_check.c - the plug-in path rule (see the header).
 */
#include "opal_config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opal/constants.h"

#include "mca/btl_openib_path_check.h"

int openib_plugin_path_check(const char *path, char *resolved, char *why, size_t why_len)
{
    char dir[PATH_MAX];
    struct stat st;
    char *slash;

    if (NULL == path || '/' != path[0]) {
        snprintf(why, why_len, "'%s' is not an absolute path", path ? path : "(null)");
        return OPAL_ERR_BAD_PARAM;
    }
    if (NULL == realpath(path, resolved)) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        return ENOENT == errno || ENOTDIR == errno ? OPAL_ERR_NOT_FOUND : OPAL_ERR_BAD_PARAM;
    }
    if (0 != stat(resolved, &st)) {
        snprintf(why, why_len, "cannot stat %s: %s", resolved, strerror(errno));
        return OPAL_ERR_NOT_FOUND;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "%s is not a regular file", resolved);
        return OPAL_ERR_BAD_PARAM;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_len, "%s is %s-writable (mode %04o)", resolved,
                 (st.st_mode & S_IWOTH) ? "world" : "group", (unsigned) (st.st_mode & 07777));
        return OPAL_ERR_BAD_PARAM;
    }
    /* realpath gives an absolute path with no trailing slash. */
    snprintf(dir, sizeof(dir), "%s", resolved);
    slash = strrchr(dir, '/');
    if (slash == dir) {
        slash[1] = '\0'; /* a file in / */
    } else {
        *slash = '\0';
    }
    if (0 != stat(dir, &st)) {
        snprintf(why, why_len, "cannot stat its directory %s: %s", dir, strerror(errno));
        return OPAL_ERR_BAD_PARAM;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        snprintf(why, why_len, "its directory %s is %s-writable and not sticky (mode %04o)", dir,
                 (st.st_mode & S_IWOTH) ? "world" : "group", (unsigned) (st.st_mode & 07777));
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}
