/*
 * btl_openib_path_check.h - which files the BTL agrees to load code from
 * (btl_openib_cpc_plugins, btl_openib_hmem_override). Device-free, so the
 * rule is unit-tested; one rule for every plug-in parameter.
 *
 * The rule (OPENIB_PLUGIN_PATH_RULE, shown to users when a path breaks it):
 *   - the path is absolute (a relative one would depend on each rank's
 *     working directory);
 *   - symbolic links are followed: the rule applies to the file the path
 *     resolves to, and the caller loads that resolved path, so a link
 *     swapped after the check loads nothing else;
 *   - that file is a regular file that neither its group nor others may
 *     write;
 *   - its directory is not group- or world-writable either, unless it has
 *     the sticky bit (then others cannot rename or replace our file).
 * Who owns the file is not checked: an administrator's shared installation
 * (owned by a software account) is a normal place for plug-ins.
 */
#ifndef BTL_OPENIB_PATH_CHECK_H
#define BTL_OPENIB_PATH_CHECK_H

#include <stddef.h>

#define OPENIB_PLUGIN_PATH_RULE                                                          \
    "an absolute path to a regular file (symbolic links are followed) that neither "   \
    "its group nor others can write, in a directory they cannot write either (unless " \
    "the directory has the sticky bit)"

/* OPAL_SUCCESS: `path` follows the rule; `resolved` (at least PATH_MAX
 * bytes) holds the file to load. OPAL_ERR_NOT_FOUND: the file does not
 * exist or cannot be resolved (a load failure, not a rule breach).
 * OPAL_ERR_BAD_PARAM: the path breaks the rule. Either error fills `why`. */
int openib_plugin_path_check(const char *path, char *resolved, char *why, size_t why_len);

#endif
