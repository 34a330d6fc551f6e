/*
 * ctrl_names.c - the controller's interned names, shared by every thread under one lock
 * (ctrl_names.h).
 *
 * Example: an informer decodes pod "ns/tj1-worker-0" and interns "ns", "tj1-worker-0" and its
 * key; the scheduler thread later finds the slot of that key, or copies a node's name out with
 * ctrl_name_str to add it to the state. A job's own namespace and name are not read back from
 * here: its records hold them as text (tj_record, job_record). Interning is O(length) (a hash
 * table); a look-up by id is O(1).
 */
#include "ctrl_names.h"

#include "drover/base.h"

#include <stdio.h>

int ctrl_names_init(ctrl_names *n, const char *scheduler)
{
    pthread_mutex_init(&n->mu, NULL);
    if (!(n->tab = drv_strtab_new()) || (n->scheduler = drv_strtab_intern(n->tab, scheduler)) < 0)
        return DRV_ENOMEM;
    return 0;
}

void ctrl_names_fini(ctrl_names *n)
{
    drv_strtab_free(n->tab);
    n->tab = NULL;
    pthread_mutex_destroy(&n->mu);
}

int32_t ctrl_name_intern(ctrl_names *n, const char *s)
{
    pthread_mutex_lock(&n->mu);
    int32_t id = drv_strtab_intern(n->tab, s);
    pthread_mutex_unlock(&n->mu);
    return id;
}

int32_t ctrl_name_find(ctrl_names *n, const char *s)
{
    pthread_mutex_lock(&n->mu);
    int32_t id = drv_strtab_find(n->tab, s);
    pthread_mutex_unlock(&n->mu);
    return id;
}

const char *ctrl_name_str(ctrl_names *n, int32_t id, char *buf, size_t len)
{
    pthread_mutex_lock(&n->mu);
    snprintf(buf, len, "%s", drv_strtab_str(n->tab, id));
    pthread_mutex_unlock(&n->mu);
    return buf;
}

char *ctrl_name_dup(ctrl_names *n, int32_t id)
{
    pthread_mutex_lock(&n->mu);
    char *s = drv_strdup(drv_strtab_str(n->tab, id));
    pthread_mutex_unlock(&n->mu);
    return s;
}

int32_t ctrl_names_count(ctrl_names *n)
{
    pthread_mutex_lock(&n->mu);
    int32_t count = drv_strtab_count(n->tab);
    pthread_mutex_unlock(&n->mu);
    return count;
}

void ctrl_names_lock(ctrl_names *n)
{
    pthread_mutex_lock(&n->mu);
}

void ctrl_names_unlock(ctrl_names *n)
{
    pthread_mutex_unlock(&n->mu);
}
