/*
 * goodput_ilp.c - the integer program of the goodput plugin's allocation on several GPU types
 * (knob `solver`, issue 27), solved with GLPK: Sia's (SOSP'23) formulation, the candidates and
 * their costs built by goodput_types.c.
 *
 * Why: the greedy with moves (goodput_types.c) chooses each job's type one job at a time and
 * repairs by moves; Sia chooses every job's (type, count) at once, exactly, every round.
 *
 * Given candidates c = (job j, pool t, k GPUs, cost w_c) and each pool's GPUs cap[t]:
 *   minimise   sum_c (w_c - none) x_c          (+ none x jobs, a constant: the penalty
 *   subject to sum_{c of job j} x_c <= 1            lambda_n of a job left without GPUs)
 *              sum_{c of pool t} k_c x_c <= cap[t]
 *              x_c in {0, 1}.
 * A candidate costing `none` or more is never worth choosing and is left out.
 * Example: one pool of 4 GPUs, job 0 costs 0.9 on 2 GPUs and 0.6 on 4, job 1 costs 1.0 on 2,
 * none = 1.1: {0 on 4} gives 0.6 + 1.1 = 1.7, {0 on 2, 1 on 2} gives 1.9: job 0 takes all 4.
 * Cost: GLPK's branch and cut on a 0-1 program of (jobs + pools) rows and one column per
 * candidate (2 non-zeros each); exact (no gap, no time limit: the same input gives the same
 * answer on every machine). GLPK keeps its state per thread (the simulator's batch runs
 * policies on worker threads); it is freed after each solve.
 */
#include "goodput.h"

#include <glpk.h>

int goodput_ilp_solve(const goodput_cand *cand, int32_t ncand, int32_t njobs, const int64_t *cap,
                      int32_t npools, double none, int32_t *pick)
{
    for (int32_t j = 0; j < njobs; j++)
        pick[j] = -1;
    int *ia = drv_malloc(sizeof *ia * (2 * (size_t)ncand + 1));
    int *ja = drv_malloc(sizeof *ja * (2 * (size_t)ncand + 1));
    int *col = drv_malloc(sizeof *col * ((size_t)ncand + 1)); /* column of cand[i], 0: left out */
    double *ar = drv_malloc(sizeof *ar * (2 * (size_t)ncand + 1));
    if (!ia || !ja || !ar || !col) {
        drv_free(ia);
        drv_free(ja);
        drv_free(ar);
        drv_free(col);
        return DRV_ENOMEM;
    }
    glp_term_out(GLP_OFF);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, njobs + npools);
    for (int32_t j = 0; j < njobs; j++)
        glp_set_row_bnds(lp, j + 1, GLP_UP, 0, 1);
    for (int32_t t = 0; t < npools; t++)
        glp_set_row_bnds(lp, njobs + t + 1, GLP_UP, 0, (double)(cap[t] > 0 ? cap[t] : 0));
    int ncol = 0, nz = 0;
    for (int32_t i = 0; i < ncand; i++) {
        const goodput_cand *x = &cand[i];
        bool ok = x->cost < none && x->k > 0 && x->job >= 0 && x->job < njobs && x->pool >= 0 &&
                  x->pool < npools && x->k <= cap[x->pool];
        col[i] = ok ? ++ncol : 0;
    }
    if (ncol > 0)
        glp_add_cols(lp, ncol);
    for (int32_t i = 0; i < ncand; i++) {
        const goodput_cand *x = &cand[i];
        if (!col[i])
            continue;
        ncol = col[i];
        glp_set_col_kind(lp, ncol, GLP_BV);
        glp_set_obj_coef(lp, ncol, x->cost - none);
        ia[++nz] = x->job + 1, ja[nz] = ncol, ar[nz] = 1;
        ia[++nz] = njobs + x->pool + 1, ja[nz] = ncol, ar[nz] = x->k;
    }
    int rc = 0;
    if (ncol > 0) {
        glp_load_matrix(lp, nz, ia, ja, ar);
        glp_iocp parm;
        glp_init_iocp(&parm);
        parm.presolve = GLP_ON;
        parm.msg_lev = GLP_MSG_OFF;
        int st = glp_intopt(lp, &parm);
        if (st != 0 || glp_mip_status(lp) != GLP_OPT)
            rc = DRV_EINVAL; /* no optimum found: the caller falls back to the greedy */
        for (int32_t i = 0; rc == 0 && i < ncand; i++)
            if (col[i] > 0 && glp_mip_col_val(lp, col[i]) > 0.5)
                pick[cand[i].job] = i;
    }
    glp_delete_prob(lp);
    glp_free_env(); /* GLPK's per-thread state: none left to a worker thread that ends */
    drv_free(ia);
    drv_free(ja);
    drv_free(ar);
    drv_free(col);
    return rc;
}
