/*
 * trace_gavel.c - Gavel's job traces (OSDI'20; stanford-futuredata/gavel, traces/msr/<vc>.trace):
 * tab-separated, no header, seven fields per job:
 *
 *   job_type  command  num_steps_arg  needs_data_dir  total_steps  arrival_time  scale_factor
 *   Transformer (batch size 128)  cd %s/... && python3 train.py ...  -step  1  79561  0.000000  1
 *
 * A row is a rigid job of scale_factor one-GPU workers arriving at arrival_time seconds that
 * runs total_steps global steps at total batch "batch size" x scale_factor (clamped to the
 * model's validated batches). The model is the calibrated one closest in kind: ResNet-18
 * (CIFAR-10) -> cifar10, ResNet-50 (ImageNet) -> imagenet, Recommendation -> ncf, Transformer
 * -> bert, LM (an LSTM) -> deepspeech2 (the recurrent one); A3C and CycleGAN have no
 * counterpart and get a seeded choice. So a job's length follows the trace's step count at our
 * measured step times, not Gavel's throughputs. The command and its flags are ignored.
 */
#include "trace_read.h"

#include "drover/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GAVEL_FIELDS 7

static const struct {
    const char *prefix, *model;
} gavel_models[] = {
    {"ResNet-18", "cifar10"}, {"ResNet-50", "imagenet"}, {"Recommendation", "ncf"},
    {"Transformer", "bert"},  {"LM", "deepspeech2"},
};

static bool is_number(const char *s)
{
    double v;
    return drv_parse_decimal(s, &v) == 0;
}

bool trace_gavel_detect(const char *first_line)
{
    char buf[4096];
    size_t n = strcspn(first_line, "\n");
    if (n >= sizeof buf)
        return false;
    memcpy(buf, first_line, n);
    buf[n] = 0;
    trace_row r = {0};
    trace_split(&r, buf, '\t');
    return r.nf == GAVEL_FIELDS && is_number(r.f[4]) && is_number(r.f[5]) && is_number(r.f[6]);
}

/* "ResNet-18 (batch size 32)" -> model index (or -1), batch 32 (or 0), name stem "resnet-18". */
static void job_type(const drv_calib *c, const char *type, int32_t *app, double *batch, char *stem,
                     size_t cap)
{
    *app = -1;
    for (size_t i = 0; i < sizeof gavel_models / sizeof gavel_models[0]; i++) {
        size_t n = strlen(gavel_models[i].prefix);
        if (strncmp(type, gavel_models[i].prefix, n) == 0 && (!type[n] || type[n] == ' '))
            *app = drv_calib_find(c, gavel_models[i].model);
    }
    const char *b = strstr(type, "(batch size ");
    *batch = b ? atof(b + 12) : 0;
    size_t k = 0;
    for (; type[k] && type[k] != ' ' && k + 1 < cap; k++)
        stem[k] = (char)tolower((unsigned char)type[k]);
    stem[k] = 0;
}

int trace_read_gavel(trace_sink *s, const char *file, char *text, drv_diag *d)
{
    int line = 0, rc = 0;
    for (char *p, *at = text; !rc && (p = drv_next_line(&at)) != NULL;) {
        line++;
        if (p[0] == '#' || p[0] == 0 || strcmp(p, "\r") == 0)
            continue;
        trace_row r = {.file = file, .line = line, .d = d};
        trace_split(&r, p, '\t');
        char where[600];
        snprintf(where, sizeof where, "%s:%d", file, line);
        if (r.nf != GAVEL_FIELDS) {
            rc = drv_fail(d, DRV_EPARSE, "%s:1: row: expected %d tab-separated fields, found %d",
                          where, GAVEL_FIELDS, r.nf);
            rc = trace_sink_bad(s, rc, d);
            continue;
        }
        trace_job j;
        trace_job_init(&j);
        double steps, sf;
        if ((rc = trace_num(&r, 4, "total_steps", 1, 1e12, true, &steps)) != 0 ||
            (rc = trace_num(&r, 5, "arrival_time", 0, 1e11, false, &j.submit)) != 0 ||
            (rc = trace_num(&r, 6, "scale_factor", 1, TRACE_MAX_GPUS, true, &sf)) != 0) {
            rc = trace_sink_bad(s, rc, d);
            continue;
        }
        char stem[32];
        job_type(s->o->calib, r.f[0], &j.app, &j.batch, stem, sizeof stem);
        snprintf(j.name, sizeof j.name, "%s-%lld", stem[0] ? stem : "gavel", (long long)s->row);
        j.gpus = (int32_t)sf;
        j.steps = steps;
        j.batch *= sf;
        rc = trace_sink_add(s, &j, where, d);
    }
    return rc;
}
