/*
 * trace_pai.c - the Alibaba PAI GPU cluster trace 2020 (NSDI'22; alibaba/clusterdata,
 * cluster-trace-gpu-v2020). Its tables are CSV files without a header line; their columns are
 * published apart (pai_*.header):
 *
 *   pai_job_table   job_name,inst_id,user,status,start_time,end_time
 *   pai_task_table  job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,
 *                   plan_gpu,gpu_type
 *
 * Times are seconds (Unix time); plan_gpu is the share of one GPU each instance asked for in
 * percent (100 = one GPU, 50 = half of one). A file may start with the header line or not
 * (--trace-format pai-job / pai-task then tells the format; auto needs the header).
 *  - pai-task: one job per task row with GPUs: ceil(inst_num x plan_gpu / 100) GPUs, submitted
 *    at start_time (the trace records no submission time), run for end_time - start_time,
 *    named job_name.task_name (a name has no '/'). Tasks of one job are not joined.
 *  - pai-job: the job table names no GPU count: every job is given one GPU; its user is kept.
 * Rows still Running or Waiting (no end time) and tasks without GPUs are left out.
 *
 * The tables themselves are not in this repository; tests/fixtures/trace/pai-*.csv are small
 * files of our own with the real headers.
 */
#include "trace_read.h"

static const char *const unfinished[] = {"Running", "Waiting", NULL};

const trace_csv_map trace_map_pai_job = {
    .format = "pai-job",
    .header = "job_name,inst_id,user,status,start_time,end_time",
    .name = "job_name",
    .user = "user",
    .start = "start_time",
    .end = "end_time",
    .gpus_fixed = 1,
    .state = "status",
    .drop_states = unfinished,
};

const trace_csv_map trace_map_pai_task = {
    .format = "pai-task",
    .header = "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,"
              "plan_gpu,gpu_type",
    .name = "job_name",
    .name2 = "task_name",
    .start = "start_time",
    .end = "end_time",
    .gpus = "plan_gpu",
    .gpus_times = "inst_num",
    .gpu_unit = 100,
    .state = "status",
    .drop_states = unfinished,
};
