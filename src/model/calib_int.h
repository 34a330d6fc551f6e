/*
 * calib_int.h - what calibrate.c and calib_types.c share (internal to src/model).
 */
#ifndef DROVER_MODEL_CALIB_INT_H
#define DROVER_MODEL_CALIB_INT_H

#include "drover/calib.h"

#include <dirent.h>
#include <stddef.h>

/* Opens dir/<model> (its name into path[n]): 0, or DRV_EIO named. */
int calib_open_model(const drv_calib_app *a, const char *dir, char *path, size_t n, DIR **dh,
                     drv_diag *d);

/* The GPU types of model a: the TYPE of every dir/<model>/placements-TYPE.csv (a name: text.h's
 * rule, else an error), sorted, into types[0..*n) (at most max). 0 or an error named. */
int calib_list_types(const drv_calib_app *a, const char *dir, char (*types)[32], int32_t max,
                     int32_t *n, drv_diag *d);

#endif
