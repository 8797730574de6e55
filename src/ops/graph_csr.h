/* Receiver-sorted (CSR) edge order for the segment-sum op (ops/graph.inc). Built once per graph at
 * model init; implemented in ops/graph.c (float-independent, compiled once). */
#ifndef WX_GRAPH_CSR_H
#define WX_GRAPH_CSR_H

#include <stdint.h>

#include "core/wx_error.h"

/* Stable counting sort of edges by receiver: on return, the edges received by node r are
 * perm[row_ptr[r] .. row_ptr[r+1]) in increasing edge order; row_ptr[0] = 0, row_ptr[n] = e.
 * receivers (E) in [0, n); row_ptr (N+1) and perm (E) are written. Fails (WX_ERR_RUN) on a
 * receiver out of range or sizes that do not fit int32. */
wx_status wx_graph_csr_build(const int32_t *receivers, int64_t e, int64_t n, int32_t *row_ptr,
                             int32_t *perm);

#endif
