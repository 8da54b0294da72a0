/*
 * hmem_help_capture.h - catch what opal_show_help would print, rendered
 * from the real help file (mca/ in the source tree), so a test can check
 * the user-visible text.
 */
#ifndef OPENIB_HMEM_HELP_CAPTURE_H
#define OPENIB_HMEM_HELP_CAPTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal_config.h"
#include "opal/util/show_help.h"

static char help_captured[4096];
static char help_topic[64];
static int help_count;

static int help_capture(const char *file, const char *topic, int want_error_header, ...)
{
    va_list ap;
    char *s;

    va_start(ap, want_error_header);
    s = opal_show_help_vstring(file, topic, want_error_header, ap);
    va_end(ap);
    help_count++;
    snprintf(help_topic, sizeof(help_topic), "%s", topic);
    snprintf(help_captured, sizeof(help_captured), "%s", NULL != s ? s : "(topic not found)");
    free(s);
    return 0;
}

/* Route opal_show_help to help_capture and find our help files. */
static inline void help_capture_install(void)
{
    const char *src = getenv("OPENIB_SRCDIR");
    char dir[1024];

#ifdef HMEM_TEST_SRCDIR
    if (NULL == src || '\0' == src[0]) {
        src = HMEM_TEST_SRCDIR;
    }
#endif
    snprintf(dir, sizeof(dir), "%s/mca", NULL != src ? src : ".");
    opal_show_help_add_dir(dir);
    opal_show_help = help_capture;
    help_captured[0] = '\0';
    help_count = 0;
}

#endif
