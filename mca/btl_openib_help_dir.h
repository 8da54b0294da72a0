/*
 * btl_openib_help_dir.h - where our help texts are read from.
 *
 * Help texts are printf formats, so they come from one trusted place: the
 * installed directory ($pkgdatadir), or, only when the component running
 * is the build tree's own copy (an uninstalled run such as make check), the
 * source tree's mca/. An installed component never reads the source tree,
 * which may be writable by others. "The build tree's own copy" is decided
 * by where the loaded file lives (dladdr), not by what exists on disk.
 */
#ifndef BTL_OPENIB_HELP_DIR_H
#define BTL_OPENIB_HELP_DIR_H

#include <stdbool.h>

/* Whether the file `loaded` sits directly in `build_libdir` (both with
 * symbolic links resolved). False when either cannot be resolved. */
bool openib_help_from_build_tree(const char *loaded, const char *build_libdir);

#endif
