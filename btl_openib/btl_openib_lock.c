/*
 * btl_openib_lock.c - the component's two locks (btl_openib_lock.h says
 * what each guards and in which order they are taken).
 */
#include "opal_config.h"

#include "btl_openib/btl_openib_lock.h"

opal_mutex_t openib_lock;
opal_mutex_t openib_progress_lock;

/* At component open: before init, progress or any entry point can run. */
void openib_locks_init(void)
{
    OBJ_CONSTRUCT(&openib_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&openib_progress_lock, opal_mutex_t);
}

void openib_locks_fini(void)
{
    OBJ_DESTRUCT(&openib_progress_lock);
    OBJ_DESTRUCT(&openib_lock);
}
