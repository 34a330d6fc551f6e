/*
 * trace_read.h - what the readers of the trace formats added after pollux, philly and tiresias
 * share (internal to src/sim): splitting a row into fields, numbers and times with errors that
 * name file:line:column and field, and one collector that turns what a reader found in a row
 * (a trace_job) into a Drover job the way docs/data.md says.
 *
 * A reader fills a trace_job per job and hands it to trace_sink_add; the sink checks it, builds
 * the job, counts skipped (malformed, with skip_bad) and dropped rows (not a finished GPU job:
 * no GPU, never started or ended, zero duration), and trace_sink_finish moves the first
 * submission to time 0 and swaps the jobs into the caller's workload.
 */
#ifndef DROVER_TRACE_READ_H
#define DROVER_TRACE_READ_H

#include "drover/strtab.h"
#include "drover/trace.h"

/* Fields a row may have (Helios: 12, PAI tables: at most 10, a mapped CSV: any up to this). */
#define TRACE_MAX_FIELDS 64
/* GPUs a trace job may use: as the pollux, philly and tiresias readers (64 workers x 2). */
#define TRACE_MAX_GPUS 128
/* The longest run time of a trace job, seconds (31 years), in every format. */
#define TRACE_MAX_DURATION 1e9

/* One line split into fields (pointers into the line, which is modified). */
typedef struct trace_row {
    const char *file;
    int line; /* 1-based */
    const char *f[TRACE_MAX_FIELDS];
    int col[TRACE_MAX_FIELDS]; /* 1-based column of each field */
    int nf;                    /* fields found (the last may hold separators when more
                                  than TRACE_MAX_FIELDS) */
    drv_diag *d;
} trace_row;

/* Splits s at sep in place (a trailing '\r' removed). */
void trace_split(trace_row *r, char *s, char sep);
/* "file:line:col: field: expected EXPECTED, found 'value'" for field k (DRV_EPARSE). */
int trace_bad(const trace_row *r, int k, const char *field, const char *expected);
/* 0 when name (field k's, or one made from it) is a job name (drv_name_ok, at most 63 bytes),
 * else DRV_EPARSE "file:line:col: field: expected a name of ..., found '...'". */
int trace_name(const trace_row *r, int k, const char *field, const char *name);
/* Field k as a decimal number (drv_parse_decimal: no hex, space, inf) in [lo, hi] (whole: an
 * integer). */
int trace_num(const trace_row *r, int k, const char *field, double lo, double hi, bool whole,
              double *out);
/* Field k as a time: seconds (a decimal number in [0, 1e11]) or "YYYY-MM-DD HH:MM:SS" (UTC,
 * drv_time_parse_utc) as seconds since the epoch. */
int trace_time(const trace_row *r, int k, const char *field, double *out);
/* The same on a string; -1 when it is neither. */
int trace_time_str(const char *s, double *out);
/* The largest trace read whole (drv_trace_load and the formats it hands over): 1 GiB, above
 * Helios' largest cluster_log (about 200 MB) and Philly's cluster_job_log. Larger traces are
 * streamed (--stream), read a line at a time up to TRACE_MAX_STREAM_BYTES. */
#define TRACE_MAX_BYTES (1ULL << 30)
#define TRACE_MAX_STREAM_BYTES (64ULL << 30)
/* Reads the trace at path whole (drv_file_read_max with TRACE_MAX_BYTES). */
int trace_read_file(const char *path, char **text, drv_diag *d);
/* "WHERE: job 'NAME' is in the trace twice" (DRV_EPARSE) when names has name already, else
 * adds it; DRV_ENOMEM. Job names key the results: every reader refuses a repeated one. */
int trace_name_once(drv_strtab *names, const char *name, const char *where, drv_diag *d);

/* What a reader found about one job. */
/* A trace_job's names are longer than a job's (63, 31, 31 bytes): a reader copies a field
 * cut to TRACE_NAME_CAP - 1 bytes, and the sink refuses any name longer than the job's, so a
 * long name is refused, never cut into another job's name. */
#define TRACE_NAME_CAP 256
typedef struct trace_job {
    char name[TRACE_NAME_CAP];  /* "" : <format>-<row> */
    char user[TRACE_NAME_CAP];  /* "" : trace */
    char queue[TRACE_NAME_CAP]; /* "" : default */
    double submit;              /* seconds, any origin (the sink moves the first to 0) */
    int32_t gpus;               /* GPUs (one worker pod each); <= 0: not a GPU job, dropped */
    double duration; /* seconds run when packed on the fewest nodes; used when steps is 0 */
    double steps;    /* global steps to run (Gavel), or 0 */
    double batch;    /* total batch, or 0: the model's initial batch x GPUs */
    int32_t app;     /* calibrated model index, or -1: a seeded choice (hash of seed and row) */
    bool dropped;    /* the reader decided the row is not a finished GPU job */
} trace_job;

void trace_job_init(trace_job *j);

typedef struct trace_sink {
    const drv_trace_opts *o;
    const drv_catalogue *cat;
    const char *format; /* for default job names */
    drv_workload w;     /* jobs so far (owned) */
    drv_strtab *names;  /* their names, to refuse one twice (owned; NULL before the first) */
    bool names_known;   /* names were checked by an earlier pass (a streamed trace's second):
                           no table, so a streamed run holds no name per job */
    int64_t row;        /* jobs offered so far: the seed of their choices */
    int32_t skipped, dropped;
    double t0; /* earliest submission */
} trace_sink;

void trace_sink_init(trace_sink *s, const drv_trace_opts *o, const drv_catalogue *cat,
                     const char *format);
/*
 * Adds the job a row gave; where names the row in messages ("file:line"). Returns 0 (added,
 * dropped, or skipped as malformed under skip_bad: the message is logged) or an error
 * (DRV_EPARSE with the message in d, DRV_ENOMEM).
 */
int trace_sink_add(trace_sink *s, const trace_job *tj, const char *where, drv_diag *d);
/* A malformed row seen by the reader itself: with skip_bad logs d's message, counts it and
 * returns 0; otherwise returns rc. */
int trace_sink_bad(trace_sink *s, int rc, drv_diag *d);
/* Moves the jobs into w (replacing it), first submission at 0; logs the dropped rows. */
void trace_sink_finish(trace_sink *s, drv_workload *w, int32_t *skipped, const char *file);
void trace_sink_fini(trace_sink *s);

/* ---- the readers (each on text in memory, which it modifies) ------------------------------ */

/* Which columns of a CSV file give what (NULL: not in the file). */
typedef struct trace_csv_map {
    const char *format; /* format name, for messages and job names */
    const char *header; /* a headerless table's columns (PAI), used when the first line is
                           not this header; NULL: the first line is the header */
    const char *name, *user, *queue, *submit, *start, *end, *duration, *gpus, *model, *batch,
        *steps;
    const char *name2;              /* a column appended to the name after '.' (PAI: task_name) */
    const char *gpus_times;         /* a column multiplying gpus (PAI: inst_num), or NULL */
    double gpu_unit;                /* gpus column counts 1/gpu_unit of a GPU (PAI: 100), 0 = 1 */
    int32_t gpus_fixed;             /* GPUs of every job when gpus is NULL (PAI job table: 1) */
    const char *state;              /* a column whose value in drop_states drops the row, or NULL */
    const char *const *drop_states; /* NULL-terminated */
} trace_csv_map;

int trace_read_csv(trace_sink *s, const char *file, char *text, const trace_csv_map *m,
                   drv_diag *d);

/* Reading a mapped CSV one line at a time (trace_read_csv, and the streamed reader of
 * jobsource_csv.c): the header's columns, found on the first line. */
#define TRACE_CSV_NKEYS 14
typedef struct trace_csv_reader {
    const trace_csv_map *m; /* borrowed */
    const char *file;       /* borrowed, for messages */
    bool have_header;       /* the first line was read */
    char header[2048];      /* the header line, split into h */
    trace_row h;
    int idx[TRACE_CSV_NKEYS]; /* per key, its column, or -1 */
    int need;                 /* fields a row must have */
} trace_csv_reader;

void trace_csv_reader_init(trace_csv_reader *r, const trace_csv_map *m, const char *file);
/* Line number line of the file (text: without its newline; modified): the header when it is
 * the first, else a row handed to s (added, dropped or, with skip_bad, skipped). 0 or an error
 * naming file:line (DRV_EPARSE, DRV_ENOMEM). */
int trace_csv_line(trace_sink *s, trace_csv_reader *r, int line, char *text, drv_diag *d);
/* Parses --trace-columns "key=COLUMN,..." into m (strings point into spec, modified). */
int trace_csv_map_parse(trace_csv_map *m, char *spec, drv_diag *d);
/* True when the header line (unmodified) holds every column m names. */
bool trace_csv_map_matches(const trace_csv_map *m, const char *header);

extern const trace_csv_map trace_map_helios, trace_map_pai_job, trace_map_pai_task;

int trace_read_gavel(trace_sink *s, const char *file, char *text, drv_diag *d);
bool trace_gavel_detect(const char *first_line);
int trace_read_philly_log(trace_sink *s, const char *file, const char *text, drv_diag *d);

/* The formats beyond trace.c's three (trace_formats.c). */
int trace_ext_format_parse(const char *name);
const char *trace_ext_format_name(int fmt);
/* The format text is in when trace.c should hand it over (o->format one of ours, or auto and
 * recognised), else -1. */
int trace_ext_format_of(const drv_trace_opts *o, const char *text);
/* Reads text in format fmt (columns: the csv format's mapping, or NULL) into w. */
int trace_ext_parse(drv_workload *w, const char *file, char *text, const drv_catalogue *cat,
                    const drv_trace_opts *o, int fmt, const char *columns, int32_t *skipped,
                    drv_diag *d);

#endif
