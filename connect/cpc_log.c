/*
 * cpc_log.c - the framework's two ways of talking to the user: help messages
 * (opal_show_help) and verbose lines (opal_output). Both can be redirected so
 * unit tests can assert on them without initializing Open MPI.
 */
#include "opal_config.h"
#include "opal/constants.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "connect/cpc_internal.h"

/* Every help topic of ours takes at most this many %s arguments. */
#define CPC_HELP_MAX_ARGS 6

void openib_connect_set_verbose(int stream, int level)
{
    openib_cpc_reg.verbose_stream = stream;
    openib_cpc_reg.verbose_level = level;
}

void openib_connect_set_help_hook(openib_connect_help_hook_fn hook)
{
    openib_cpc_reg.help_hook = hook;
}

void openib_connect_set_log_hook(openib_connect_log_hook_fn hook)
{
    openib_cpc_reg.log_hook = hook;
}

void openib_cpc_strcatf(char *buf, size_t len, const char *fmt, ...)
{
    size_t used;
    va_list ap;

    if (0 == len) {
        return;
    }
    used = strnlen(buf, len);
    if (used >= len - 1) {
        buf[len - 1] = '\0';
        return;
    }
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

const char *openib_cpc_hostname(void)
{
    static char host[256];

    if ('\0' == host[0] && 0 != gethostname(host, sizeof(host) - 1)) {
        strcpy(host, "(unknown host)");
    }
    return host;
}

void openib_cpc_help(const char *topic, int nargs, ...)
{
    const char *a[CPC_HELP_MAX_ARGS] = { "", "", "", "", "", "" };
    va_list ap;
    int i;

    if (nargs > CPC_HELP_MAX_ARGS) {
        nargs = CPC_HELP_MAX_ARGS;
    }
    va_start(ap, nargs);
    for (i = 0; i < nargs; ++i) {
        const char *s = va_arg(ap, const char *);
        a[i] = s ? s : "(null)";
    }
    va_end(ap);

    if (NULL != openib_cpc_reg.help_hook) {
        openib_cpc_reg.help_hook(CPC_HELP_FILE, topic, nargs, a);
        return;
    }
    /* Unused trailing arguments are harmless: the topic's text decides how
     * many %s it consumes. */
    opal_show_help(CPC_HELP_FILE, topic, 1, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void openib_cpc_log(int level, const char *fmt, ...)
{
    char line[1280];
    va_list ap;

    if (level > openib_cpc_reg.verbose_level) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    if (NULL != openib_cpc_reg.log_hook) {
        openib_cpc_reg.log_hook(line);
        return;
    }
    if (openib_cpc_reg.verbose_stream >= 0) {
        opal_output(openib_cpc_reg.verbose_stream, "%s", line);
    } else {
        fprintf(stderr, "%s\n", line);
    }
}
