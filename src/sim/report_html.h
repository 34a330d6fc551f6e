/* report_html.h - the report page's body, shared by plot.c (which writes index.html) and
 * report_html.c; internal to src/sim. */
#ifndef DROVER_REPORT_HTML_H
#define DROVER_REPORT_HTML_H

#include "drover/sim.h"

/* Writes the whole page to f: scenario, table, plots (when plots is true), per-policy sections. */
void drv_report_page(FILE *f, const drv_report_data *r, bool plots);

#endif
