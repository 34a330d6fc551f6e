/*
 * trace_helios.c - Helios (SenseTime, SC'21; S-Lab-System-Group/HeliosData) job logs,
 * data/<cluster>/cluster_log.csv:
 *
 *   job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
 *   1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,...,249,0
 *
 * A row is a job of gpu_num GPUs submitted at submit_time that ran `duration` seconds (the
 * log's end_time - start_time); its user and virtual cluster become the job's user and queue.
 * Every final state is kept (a failed or cancelled job held its GPUs as long); CPU-only jobs
 * (gpu_num 0, more than half of the log) and jobs that ran 0 s are left out. Columns are
 * found by name (trace_csv.c), so a log with an extra index column still reads.
 */
#include "trace_read.h"

const trace_csv_map trace_map_helios = {
    .format = "helios",
    .name = "job_id",
    .user = "user",
    .queue = "vc",
    .submit = "submit_time",
    .duration = "duration",
    .gpus = "gpu_num",
};
