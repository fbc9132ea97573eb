/* hpceval's NPB kernel CG: conjugate gradient on a random sparse symmetric matrix.
 *
 * The problem (NPB 3.x, kernel CG): makea builds an na x na sparse symmetric positive
 * definite matrix as a weighted sum of na outer products of random sparse vectors (each
 * with `nonzer` random entries drawn with the NPB generator, plus 0.5 at its own index),
 * the weights falling geometrically from 1 to rcond = 0.1, minus `shift` on the diagonal.
 * The inverse power method then runs niter outer iterations; each solves A z = x with 25
 * iterations of unpreconditioned CG, computes zeta = shift + 1 / (x . z) and sets
 * x = z / ||z||. The verified quantity is the last zeta.
 *
 * Decomposition (as the NPB MPI code): a power-of-two number of ranks forms a grid of
 * nprows x npcols ranks, npcols = nprows or 2 * nprows. Rank (row, col) holds the block of
 * the matrix of its row range and column range, and the vectors x, z, p, r, q on its
 * column range. The matrix-vector product is the local block product followed by the sum
 * over the process row (log2(npcols) pairwise exchanges, MPI_Irecv + MPI_Send, halving the
 * exchanged piece in the first step when npcols = 2 * nprows) and the exchange with the
 * transpose partner, which turns the row-range result into the column range. Dot products
 * are summed by the same pairwise exchanges along the process row. Every rank draws the
 * whole random sequence (it cannot be split: vectors are drawn with rejection) but keeps
 * only the entries of its own block, so the matrix memory is divided among the ranks.
 *
 * Inside a rank, OpenMP threads share the rows of the product and the vector loops; every
 * sum is combined in a fixed order (per-thread partial sums added in thread order), so a
 * run is reproducible for a given rank and thread count. */
#ifndef _DEFAULT_SOURCE /* smpicc's helpers define it already */
#define _DEFAULT_SOURCE
#endif
#define _POSIX_C_SOURCE 200809L
#include "npb_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CG_TOLERANCE 1e-10 /* relative error of zeta (verification.toml) */
#define CG_ITMAX 25        /* CG iterations per outer iteration */
#define CG_RCOND 0.1       /* condition number of the generated part */
#define CG_MAX_LOG2 32      /* bound on log2(npcols) */
#define CG_MAX_NZV 64       /* bound on the entries of one random vector (nonzer + 1) */

struct cg_class {
    char name;
    int na, nonzer, niter;
    double shift, zeta;
};

/* Class parameters and reference zeta: src/hpceval/benchmarks/npb/verification.toml. */
static const struct cg_class cg_classes[] = {
    {'S', 1400, 7, 15, 10.0, 8.5971775078648},
    {'W', 7000, 8, 15, 12.0, 10.362595087124},
    {'A', 14000, 11, 15, 20.0, 17.130235054029},
    {'B', 75000, 13, 75, 60.0, 22.712745482631},
    {'C', 150000, 15, 75, 110.0, 28.973605592845},
    {'D', 1500000, 21, 100, 500.0, 52.514532105794},
};

/* ------------------------------------------------------------ process grid -- */

/* Global indices are 0-based and ranges half-open: rows [row0, row0 + nrows),
 * columns [col0, col0 + ncols). */
struct cg_grid {
    int me, nprocs, nprows, npcols, proc_row, proc_col;
    int row0, nrows, col0, ncols;
    int send_start, send_len; /* the piece of w this rank finally owns and sends */
    int exch_proc;            /* transpose partner */
    int l2npcols;             /* exchanges along the process row */
    int exch[CG_MAX_LOG2];    /* partner of exchange i (i = 0 .. l2npcols - 1) */
    int red_send_start[CG_MAX_LOG2], red_send_len[CG_MAX_LOG2];
    int red_recv_len[CG_MAX_LOG2]; /* received at send_start */
};

static int ilog2(int n)
{
    int l = 0;
    while ((1 << l) < n) ++l;
    return l;
}

/* Splits [0, n) into `parts` contiguous pieces, the first n % parts one longer. */
static void split_range(int n, int parts, int index, int *first, int *count)
{
    int base = n / parts, extra = n % parts;
    *count = base + (index < extra ? 1 : 0);
    *first = index * base + (index < extra ? index : extra);
}

static void setup_grid(struct cg_grid *g, int na)
{
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &g->me));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &g->nprocs));
    if (!npb_is_power_of_two(g->nprocs))
        npb_fail("cg needs a power-of-two number of ranks, got %d", g->nprocs);
    int l2 = ilog2(g->nprocs);
    g->npcols = 1 << ((l2 + 1) / 2);
    g->nprows = 1 << (l2 / 2);
    if (g->npcols > na)
        npb_fail("cg with %d ranks needs %d process columns, more than the %d matrix columns",
                 g->nprocs, g->npcols, na);
    g->proc_row = g->me / g->npcols;
    g->proc_col = g->me % g->npcols;
    int square = g->npcols == g->nprows;

    /* Rows: na split over the process rows. Columns: the same split over npcols when the
     * grid is square; otherwise each row block is cut in two, the even column taking the
     * first (larger) half. (When npcols divides na this is the plain even split.) */
    split_range(na, g->nprows, g->proc_row, &g->row0, &g->nrows);
    if (square) {
        split_range(na, g->npcols, g->proc_col, &g->col0, &g->ncols);
    } else {
        int seg0, seglen;
        split_range(na, g->npcols / 2, g->proc_col / 2, &seg0, &seglen);
        int first_half = (seglen + 1) / 2;
        if (g->proc_col % 2 == 0) {
            g->col0 = seg0;
            g->ncols = first_half;
        } else {
            g->col0 = seg0 + first_half;
            g->ncols = seglen - first_half;
        }
    }

    if (square) {
        g->send_start = 0;
        g->send_len = g->nrows;
        g->exch_proc = (g->me % g->nprows) * g->nprows + g->me / g->nprows;
    } else {
        int first_half = (g->nrows + 1) / 2;
        g->send_start = g->me % 2 == 0 ? 0 : first_half;
        g->send_len = g->me % 2 == 0 ? first_half : g->nrows - first_half;
        g->exch_proc =
            2 * ((g->me / 2 % g->nprows) * g->nprows + g->me / 2 / g->nprows) + g->me % 2;
    }

    g->l2npcols = ilog2(g->npcols);
    /* Exchange i pairs ranks whose process columns differ by npcols / 2^(i+1). The row sum
     * runs i = l2npcols-1 down to 0 (nearest partner first); dot products run i = 0 up. */
    for (int i = 0, div = g->npcols; i < g->l2npcols; ++i, div /= 2) {
        int j = (g->proc_col + div / 2) % div + g->proc_col / div * div;
        g->exch[i] = g->proc_row * g->npcols + j;
        if (square) {
            g->red_send_start[i] = g->send_start;
            g->red_send_len[i] = g->send_len;
            g->red_recv_len[i] = g->nrows;
        } else if (i == g->l2npcols - 1) {
            /* First step, with the neighbour column: send it the half it will own. */
            g->red_recv_len[i] = g->send_len;
            g->red_send_len[i] = g->nrows - g->send_len;
            g->red_send_start[i] = g->me % 2 == 0 ? g->send_len : 0;
        } else {
            g->red_recv_len[i] = g->send_len;
            g->red_send_len[i] = g->send_len;
            g->red_send_start[i] = g->send_start;
        }
    }

    /* Consistency check of the schedules: what each partner sends is what this rank
     * expects to receive (one exchange per schedule entry, before anything is timed). */
    int theirs = 0;
    MPI_Request req;
    for (int i = 0; i < g->l2npcols; ++i) {
        NPB_CHECK_MPI(MPI_Irecv(&theirs, 1, MPI_INT, g->exch[i], 900 + i, MPI_COMM_WORLD, &req));
        NPB_CHECK_MPI(MPI_Send(&g->red_send_len[i], 1, MPI_INT, g->exch[i], 900 + i,
                               MPI_COMM_WORLD));
        NPB_CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (theirs != g->red_recv_len[i])
            npb_fail("cg internal error: row-sum step %d of rank %d: partner %d sends %d, "
                     "expected %d", i, g->me, g->exch[i], theirs, g->red_recv_len[i]);
    }
    NPB_CHECK_MPI(MPI_Irecv(&theirs, 1, MPI_INT, g->exch_proc, 950, MPI_COMM_WORLD, &req));
    NPB_CHECK_MPI(MPI_Send(&g->send_len, 1, MPI_INT, g->exch_proc, 950, MPI_COMM_WORLD));
    NPB_CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (theirs != g->ncols)
        npb_fail("cg internal error: transpose partner %d of rank %d sends %d, expected %d",
                 g->exch_proc, g->me, theirs, g->ncols);
}

/* ---------------------------------------------------------------- threads -- */

static inline int thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int team_size(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* This thread's static share [lo, hi) of [0, n). */
static inline void thread_range(int n, int *lo, int *hi)
{
    int t = thread_id(), nt = team_size();
    *lo = (int)((int64_t)n * t / nt);
    *hi = (int)((int64_t)n * (t + 1) / nt);
}

/* ------------------------------------------------------------------ makea -- */

struct cg_matrix {
    int nrows, ncols;
    int64_t nnz;
    int64_t *rowstr; /* nrows + 1 */
    int *colidx;     /* local column index */
    double *a;
};

/* The NPB random sparse vector: sprnvc draws `nonzer` distinct positions in 1..n (pairs of
 * draws: the value, then the position as int(nn1 * u) + 1, rejected if > n or repeated),
 * then vecset sets the entry at `iouter` to 0.5 (appending it if absent). Returns nzv. */
static int random_vector(int n, int nn1, int nonzer, int iouter, double *tran, double *v,
                         int *iv)
{
    const double amult = NPB_A;
    int nzv = 0;
    while (nzv < nonzer) {
        double vecelt = randlc(tran, amult);
        double vecloc = randlc(tran, amult);
        int i = (int)((double)nn1 * vecloc) + 1;
        if (i > n) continue;
        int seen = 0;
        for (int k = 0; k < nzv; ++k)
            if (iv[k] == i) {
                seen = 1;
                break;
            }
        if (seen) continue;
        v[nzv] = vecelt;
        iv[nzv] = i;
        ++nzv;
    }
    int set = 0;
    for (int k = 0; k < nzv; ++k)
        if (iv[k] == iouter) {
            v[k] = 0.5;
            set = 1;
        }
    if (!set) {
        v[nzv] = 0.5;
        iv[nzv] = iouter;
        ++nzv;
    }
    return nzv;
}

#ifdef HPCEVAL_SMPI
/* Under SMPI every rank lives in one process and would redraw the same na random vectors
 * twice: on 512 ranks that is ~10^10 generator calls, nearly all the simulation's time. The
 * whole sequence is drawn once, by the first rank, and shared through SMPI_SHARED_CALL (its
 * table lives in SimGrid, outside the ranks' privatized globals). Same vectors, same matrix:
 * the result is unchanged. Never freed: it lives as long as the simulation. */
struct cg_vector_table {
    int stride;   /* nonzer + 1: the most entries a vector has */
    int *nzv;     /* n: entries of vector iouter - 1 */
    int *iv;      /* n * stride positions */
    double *v;    /* n * stride values */
};

static void *cg_draw_vectors(int n, int nn1, int nonzer, double tran)
{
    struct cg_vector_table *t = npb_alloc(sizeof *t, "cg shared vectors");
    t->stride = nonzer + 1;
    t->nzv = npb_alloc(sizeof(int) * (size_t)n, "cg shared vectors");
    t->iv = npb_alloc(sizeof(int) * (size_t)n * (size_t)t->stride, "cg shared vectors");
    t->v = npb_alloc(sizeof(double) * (size_t)n * (size_t)t->stride, "cg shared vectors");
    for (int iouter = 1; iouter <= n; ++iouter) {
        size_t at = (size_t)(iouter - 1) * (size_t)t->stride;
        t->nzv[iouter - 1] = random_vector(n, nn1, nonzer, iouter, &tran, t->v + at, t->iv + at);
    }
    return t;
}

static int table_vector(const struct cg_vector_table *t, int iouter, double *v, int *iv)
{
    const size_t at = (size_t)(iouter - 1) * (size_t)t->stride;
    const int nzv = t->nzv[iouter - 1];
    memcpy(v, t->v + at, sizeof(double) * (size_t)nzv);
    memcpy(iv, t->iv + at, sizeof(int) * (size_t)nzv);
    return nzv;
}
#endif

/* Large arrays: plain allocations, as NPB's. Asking for transparent huge pages (which the
 * reference does not, and which a system with THP in "madvise" mode gives only on request)
 * cut the product's TLB misses enough to run it well ahead of NPB's. */
static void *alloc_big(size_t bytes, const char *what)
{
    return npb_alloc(bytes > 0 ? bytes : 1, what);
}

/* Builds this rank's block. Element (irow, jcol) of outer product `iouter` is
 * v[irow] * (size * v[jcol]), size = ratio^(iouter-1), ratio = rcond^(1/n); the diagonal
 * gets rcond - shift after all products. As NPB's sparse does: duplicates are summed in
 * this generation order, a row's columns come in the order they first become nonzero, and
 * entries that sum to exactly zero are dropped. (Sorting the columns would not help the
 * product: consecutive columns of a row lie hundreds of entries apart.)
 *
 * Two passes over the random sequence (it is cheap to redraw): the first counts the
 * entries of each local row, the second fills them; the duplicates are then merged in
 * place. No global-size array is ever allocated. */
static void makea(const struct cg_class *cls, const struct cg_grid *g, double tran0,
                  struct cg_matrix *m)
{
    const int n = cls->na, nonzer = cls->nonzer;
    const int r0 = g->row0, nr = g->nrows, c0 = g->col0, nc = g->ncols;
    int nn1 = 1;
    do nn1 *= 2;
    while (nn1 < n);
    double v[CG_MAX_NZV];
    int iv[CG_MAX_NZV];
    if (nonzer + 1 > CG_MAX_NZV) npb_fail("cg: nonzer %d too large", nonzer);

    m->nrows = nr;
    m->ncols = nc;
    int64_t *rowstr = npb_alloc(sizeof(int64_t) * ((size_t)nr + 1), "cg row pointers");
    memset(rowstr, 0, sizeof(int64_t) * ((size_t)nr + 1));

#ifdef HPCEVAL_SMPI
    char table_key[96];
    snprintf(table_key, sizeof table_key, "cg:%d:%d:%.17g", n, nonzer, tran0);
    const struct cg_vector_table *table =
        SMPI_SHARED_CALL(cg_draw_vectors, table_key, n, nn1, nonzer, tran0);
#define CG_NEXT_VECTOR(iouter) table_vector(table, (iouter), v, iv)
#else
#define CG_NEXT_VECTOR(iouter) random_vector(n, nn1, nonzer, (iouter), &tran, v, iv)
#endif

    /* Pass 1: entries per local row (rowstr[j + 1] counts row j). */
    double tran = tran0;
#ifdef HPCEVAL_SMPI
    (void)tran; /* the shared table replaces the generator */
#endif
    for (int iouter = 1; iouter <= n; ++iouter) {
        int nzv = CG_NEXT_VECTOR(iouter);
        int local_cols = 0;
        for (int k = 0; k < nzv; ++k)
            if (iv[k] - 1 >= c0 && iv[k] - 1 < c0 + nc) ++local_cols;
        if (local_cols == 0) continue;
        for (int k = 0; k < nzv; ++k) {
            int row = iv[k] - 1 - r0;
            if (row >= 0 && row < nr) rowstr[row + 1] += local_cols;
        }
    }
    for (int j = 0; j < nr; ++j) {
        int col = r0 + j - c0;
        if (col >= 0 && col < nc) rowstr[j + 1] += 1; /* the diagonal */
    }
    for (int j = 0; j < nr; ++j) rowstr[j + 1] += rowstr[j];
    int64_t ndup = rowstr[nr];

    /* First touched by the threads that will use each row (the same static share of rows
     * as in the product), so that pages land near them. Merging only moves entries back by
     * the few duplicates, so rows stay (nearly) on the pages they were touched on. */
    int *colidx = alloc_big(sizeof(int) * (size_t)ndup, "cg matrix column indices");
#ifdef HPCEVAL_SMPI_FOLD
    /* Folded: only the values, the column indices must stay this rank's own. */
    double *a = NPB_FOLDABLE_ALLOC(sizeof(double) * (size_t)ndup, "cg matrix values");
#else
    double *a = alloc_big(sizeof(double) * (size_t)ndup, "cg matrix values");
#endif
#pragma omp parallel for schedule(static)
    for (int j = 0; j < nr; ++j) {
        for (int64_t k = rowstr[j]; k < rowstr[j + 1]; ++k) {
            colidx[k] = 0;
            a[k] = 0.0;
        }
    }

    /* Pass 2: fill, in generation order. fill[j] is the next free slot of row j. */
    int64_t *fill = npb_alloc(sizeof(int64_t) * ((size_t)nr + 1), "cg fill pointers");
    memcpy(fill, rowstr, sizeof(int64_t) * ((size_t)nr + 1));
    const double ratio = pow(CG_RCOND, 1.0 / (double)n);
    double size = 1.0;
    tran = tran0;
    for (int iouter = 1; iouter <= n; ++iouter) {
        int nzv = CG_NEXT_VECTOR(iouter);
        for (int kc = 0; kc < nzv; ++kc) {
            int col = iv[kc] - 1 - c0;
            if (col < 0 || col >= nc) continue;
            double scale = size * v[kc];
            for (int kr = 0; kr < nzv; ++kr) {
                int row = iv[kr] - 1 - r0;
                if (row < 0 || row >= nr) continue;
                int64_t pos = fill[row]++;
                colidx[pos] = col;
                a[pos] = v[kr] * scale;
            }
        }
        size *= ratio;
    }
    for (int j = 0; j < nr; ++j) {
        int col = r0 + j - c0;
        if (col >= 0 && col < nc) {
            int64_t pos = fill[j]++;
            colidx[pos] = col;
            a[pos] = CG_RCOND - cls->shift;
        }
    }

    /* Merge duplicates row by row (threads on disjoint rows, each with its own dense
     * accumulator over the local columns), writing each merged row at the start of its
     * own range; fill[j] becomes the merged length. Then compact. */
    int nthreads = npb_threads();
    double *acc_all =
        npb_alloc(sizeof(double) * (size_t)nc * (size_t)nthreads, "cg accumulators");
    unsigned char *mark_all = npb_alloc((size_t)nc * (size_t)nthreads, "cg marks");
    int64_t maxrow = 0;
    for (int j = 0; j < nr; ++j)
        if (rowstr[j + 1] - rowstr[j] > maxrow) maxrow = rowstr[j + 1] - rowstr[j];
    int *list_all =
        npb_alloc(sizeof(int) * (size_t)(maxrow + 1) * (size_t)nthreads, "cg row lists");
#pragma omp parallel num_threads(nthreads)
    {
        const int t = thread_id();
        double *acc = acc_all + (size_t)nc * (size_t)t;
        unsigned char *mark = mark_all + (size_t)nc * (size_t)t;
        int *list = list_all + (size_t)(maxrow + 1) * (size_t)t;
        memset(acc, 0, sizeof(double) * (size_t)nc);
        memset(mark, 0, (size_t)nc);
#pragma omp for schedule(dynamic, 64)
        for (int j = 0; j < nr; ++j) {
            int nlist = 0;
            for (int64_t k = rowstr[j]; k < rowstr[j + 1]; ++k) {
                int c = colidx[k];
                acc[c] += a[k];
                if (!mark[c] && acc[c] != 0.0) {
                    mark[c] = 1;
                    list[nlist++] = c;
                }
            }
            int64_t out = rowstr[j];
            for (int l = 0; l < nlist; ++l) {
                int c = list[l];
                double val = acc[c];
                acc[c] = 0.0;
                mark[c] = 0;
                if (val != 0.0) {
                    colidx[out] = c;
                    a[out] = val;
                    ++out;
                }
            }
            fill[j] = out - rowstr[j];
        }
    }
    free(list_all);
    free(mark_all);
    free(acc_all);

    int64_t nnz = 0;
    for (int j = 0; j < nr; ++j) {
        int64_t len = fill[j];
        if (nnz != rowstr[j]) {
            memmove(colidx + nnz, colidx + rowstr[j], sizeof(int) * (size_t)len);
            memmove(a + nnz, a + rowstr[j], sizeof(double) * (size_t)len);
        }
        rowstr[j] = nnz;
        nnz += len;
    }
    rowstr[nr] = nnz;
    free(fill);

    /* Give back the space of the merged duplicates (shrinking keeps the pages). */
    m->nnz = nnz;
    m->rowstr = rowstr;
    int *colidx_fit = realloc(colidx, sizeof(int) * (size_t)(nnz > 0 ? nnz : 1));
#ifdef HPCEVAL_SMPI_FOLD
    double *a_fit = a; /* shared memory cannot be reallocated */
#else
    double *a_fit = realloc(a, sizeof(double) * (size_t)(nnz > 0 ? nnz : 1));
#endif
    m->colidx = colidx_fit != NULL ? colidx_fit : colidx;
    m->a = a_fit != NULL ? a_fit : a;
}

/* ------------------------------------------------------------ vector work -- */

/* Per-thread partial sums: one cache line per thread, one slot per kind of sum, so that a
 * slot is never rewritten before every thread has read it. */
#define CG_PSTRIDE 8
enum { SLOT_RR0, SLOT_PQ, SLOT_RR, SLOT_RES, SLOT_XZ, SLOT_ZZ };

struct cg_work {
    const struct cg_grid *g;
    const struct cg_matrix *m;
    int nthreads;
    double *x, *z, *p, *r; /* column range (ncols) */
    double *q;             /* column range, received from the transpose partner */
    double *w;             /* row range (nrows): the local product, then the row sum */
    double *rbuf;          /* row range: pieces received during the row sum */
    double *partial;       /* nthreads * CG_PSTRIDE */
    /* Values the master thread publishes to the team after an MPI exchange. */
    double shared_sum[CG_PSTRIDE];
    double *shared_vec;
};

static double *alloc_vector(int n, const char *what)
{
    size_t bytes = ((sizeof(double) * (size_t)(n + 1)) | 63) + 1;
    double *v = aligned_alloc(64, bytes);
    if (v == NULL) npb_fail("cannot allocate %zu bytes for %s", bytes, what);
    memset(v, 0, bytes);
    return v;
}

/* The vectors exchanged between ranks: folded too under HPCEVAL_SMPI_FOLD, because SMPI
 * does not copy the payload of a message between folded buffers (a tenth of the 512-rank
 * simulation's time went to those copies). */
static double *alloc_exchanged_vector(int n, const char *what)
{
#ifdef HPCEVAL_SMPI_FOLD
    size_t bytes = ((sizeof(double) * (size_t)(n + 1)) | 63) + 1;
    double *v = NPB_FOLDABLE_ALLOC(bytes, what);
    memset(v, 0, bytes);
    return v;
#else
    return alloc_vector(n, what);
#endif
}

/* Sums `count` doubles over the process row by pairwise exchanges (the NPB pattern,
 * equivalent to an allreduce over the row; every rank of the row ends with the same bits). */
static void row_allreduce(const struct cg_grid *g, double *val, int count)
{
    double other[2];
    for (int i = 0; i < g->l2npcols; ++i) {
        MPI_Request req;
        NPB_CHECK_MPI(MPI_Irecv(other, count, MPI_DOUBLE, g->exch[i], 200 + i, MPI_COMM_WORLD,
                                &req));
        NPB_CHECK_MPI(MPI_Send(val, count, MPI_DOUBLE, g->exch[i], 200 + i, MPI_COMM_WORLD));
        NPB_CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (int k = 0; k < count; ++k) val[k] += other[k];
    }
}

/* Called by every thread of the team after writing its partial in `slot`: the sum over the
 * threads (in thread order) and over the process row. Without row exchanges every thread
 * adds the partials itself (one barrier); otherwise the master thread adds them, does the
 * exchanges and publishes the result (two barriers). */
static double team_sum(struct cg_work *wk, int slot)
{
    const int nt = team_size();
#pragma omp barrier
    if (wk->g->l2npcols == 0) {
        double sum = 0.0;
        for (int t = 0; t < nt; ++t) sum += wk->partial[t * CG_PSTRIDE + slot];
        return sum;
    }
#pragma omp master
    {
        double sum = 0.0;
        for (int t = 0; t < nt; ++t) sum += wk->partial[t * CG_PSTRIDE + slot];
        row_allreduce(wk->g, &sum, 1);
        wk->shared_sum[slot] = sum;
    }
#pragma omp barrier
    return wk->shared_sum[slot];
}

/* Called by every thread: the full product A v on this rank's column range. The local
 * block product (rows shared among the threads), then, by the master thread, the sum over
 * the process row (nearest partner first, the received piece added to the owned piece) and
 * the exchange with the transpose partner. Returns where the result lies: `dest` (ncols),
 * or the owned piece of w itself when this rank is its own transpose partner. */
static double *matvec(struct cg_work *wk, const double *restrict v, double *dest)
{
    const struct cg_grid *g = wk->g;
    const struct cg_matrix *m = wk->m;
    const int64_t *restrict rowstr = m->rowstr;
    const int *restrict col = m->colidx;
    const double *restrict a = m->a;
    double *restrict w = wk->w;
    /* The hot loop of the benchmark: sampled under SMPI with HPCEVAL_SMPI_SAMPLE. */
    NPB_SAMPLED("cg-matvec")
    {
        /* Each row's sum in sequential order, as NPB's Fortran loop: without reassociation
         * the adds form one dependent chain, which is what the reference costs (a vector
         * reduction with gathers runs this loop about 1.7x faster; so do the dot products
         * below, also left sequential). */
#pragma omp for schedule(static)
        for (int j = 0; j < m->nrows; ++j) {
            double sum = 0.0;
            const int64_t k0 = rowstr[j], k1 = rowstr[j + 1];
            for (int64_t k = k0; k < k1; ++k) sum += a[k] * v[col[k]];
            w[j] = sum;
        }
    }
    /* (implicit barrier: w complete) */
    if (g->l2npcols == 0) return w;
#pragma omp master
    {
        double *rbuf = wk->rbuf;
        for (int i = g->l2npcols - 1; i >= 0; --i) {
            MPI_Request req;
            NPB_CHECK_MPI(MPI_Irecv(rbuf + g->send_start, g->red_recv_len[i], MPI_DOUBLE,
                                    g->exch[i], 100 + i, MPI_COMM_WORLD, &req));
            NPB_CHECK_MPI(MPI_Send(w + g->red_send_start[i], g->red_send_len[i], MPI_DOUBLE,
                                   g->exch[i], 100 + i, MPI_COMM_WORLD));
            NPB_CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            const int lo = g->send_start, hi = g->send_start + g->red_recv_len[i];
#pragma omp simd
            for (int j = lo; j < hi; ++j) w[j] += rbuf[j];
        }
        if (g->exch_proc == g->me) {
            wk->shared_vec = w + g->send_start;
        } else {
            MPI_Request req;
            NPB_CHECK_MPI(MPI_Irecv(dest, g->ncols, MPI_DOUBLE, g->exch_proc, 300, MPI_COMM_WORLD,
                                    &req));
            NPB_CHECK_MPI(MPI_Send(w + g->send_start, g->send_len, MPI_DOUBLE, g->exch_proc, 300,
                                   MPI_COMM_WORLD));
            NPB_CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            wk->shared_vec = dest;
        }
    }
#pragma omp barrier
    return wk->shared_vec;
}

/* 25 CG iterations on A z = x from z = 0; returns ||x - A z|| (computed, as NPB does, with
 * one more product). One parallel region; each thread owns a fixed share of the column
 * range for the vector loops. */
static double conj_grad(struct cg_work *wk)
{
    const int nc = wk->g->ncols;
    double *restrict x = wk->x, *restrict z = wk->z, *restrict p = wk->p, *restrict r = wk->r;
    double rnorm = 0.0;

#pragma omp parallel num_threads(wk->nthreads)
    {
        const int t = thread_id();
        double *part = wk->partial + t * CG_PSTRIDE;
        int lo, hi;
        thread_range(nc, &lo, &hi);

        double s = 0.0;
        for (int j = lo; j < hi; ++j) {
            z[j] = 0.0;
            r[j] = x[j];
            p[j] = x[j];
            s += x[j] * x[j];
        }
        part[SLOT_RR0] = s;
        double rho = team_sum(wk, SLOT_RR0);

        for (int cgit = 0; cgit < CG_ITMAX; ++cgit) {
            const double *restrict q = matvec(wk, p, wk->q);

            s = 0.0; /* p . q */
            NPB_SAMPLED("cg-pq")
            {
                for (int j = lo; j < hi; ++j) s += p[j] * q[j];
            }
            part[SLOT_PQ] = s;
            const double alpha = rho / team_sum(wk, SLOT_PQ);

            s = 0.0; /* z = z + alpha p, r = r - alpha q, r . r */
            NPB_SAMPLED("cg-zr")
            {
                for (int j = lo; j < hi; ++j) {
                    z[j] = z[j] + alpha * p[j];
                    const double rj = r[j] - alpha * q[j];
                    r[j] = rj;
                    s += rj * rj;
                }
            }
            part[SLOT_RR] = s;
            const double rho0 = rho;
            rho = team_sum(wk, SLOT_RR);
            const double beta = rho / rho0;

            NPB_SAMPLED("cg-p")
            {
#pragma omp simd
                for (int j = lo; j < hi; ++j) p[j] = r[j] + beta * p[j];
            }
#pragma omp barrier
        }

        /* ||x - A z||: A z lands in r (free now), as in NPB. */
        const double *restrict az = matvec(wk, z, r);
        s = 0.0;
        for (int j = lo; j < hi; ++j) {
            const double e = x[j] - az[j];
            s += e * e;
        }
        part[SLOT_RES] = s;
        double res = team_sum(wk, SLOT_RES);
#pragma omp master
        rnorm = sqrt(res);
    }
    return rnorm;
}

/* x . z and z . z summed over the process row, then x = z / ||z||; returns x . z. */
static double normalize(struct cg_work *wk)
{
    const int nc = wk->g->ncols;
    double *restrict x = wk->x, *restrict z = wk->z;
    double xz = 0.0;
#pragma omp parallel num_threads(wk->nthreads)
    {
        double *part = wk->partial + thread_id() * CG_PSTRIDE;
        int lo, hi;
        thread_range(nc, &lo, &hi);
        double sxz = 0.0, szz = 0.0;
        for (int j = lo; j < hi; ++j) {
            sxz += x[j] * z[j];
            szz += z[j] * z[j];
        }
        part[SLOT_XZ] = sxz;
        part[SLOT_ZZ] = szz;
#pragma omp barrier
#pragma omp master
        {
            const int nt = team_size();
            double norms[2] = {0.0, 0.0};
            for (int t = 0; t < nt; ++t) {
                norms[0] += wk->partial[t * CG_PSTRIDE + SLOT_XZ];
                norms[1] += wk->partial[t * CG_PSTRIDE + SLOT_ZZ];
            }
            row_allreduce(wk->g, norms, 2);
            wk->shared_sum[SLOT_XZ] = norms[0];
            wk->shared_sum[SLOT_ZZ] = norms[1];
        }
#pragma omp barrier
        const double scale = 1.0 / sqrt(wk->shared_sum[SLOT_ZZ]);
#pragma omp simd
        for (int j = lo; j < hi; ++j) x[j] = scale * z[j];
#pragma omp master
        xz = wk->shared_sum[SLOT_XZ];
    }
    return xz;
}

static void set_ones(struct cg_work *wk)
{
    const int nc = wk->g->ncols;
    double *x = wk->x;
#pragma omp parallel num_threads(wk->nthreads)
    {
        int lo, hi;
        thread_range(nc, &lo, &hi);
        for (int j = lo; j < hi; ++j) x[j] = 1.0;
    }
}

/* ------------------------------------------------------------------- main -- */

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    NPB_CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    struct npb_options opt;
    npb_parse_args(argc, argv, "cg", &opt);
    if (provided < MPI_THREAD_FUNNELED && npb_threads() > 1)
        npb_fail("the MPI library does not provide MPI_THREAD_FUNNELED, needed with %d threads",
                 npb_threads());

    const struct cg_class *cls = NULL;
    for (size_t i = 0; i < sizeof cg_classes / sizeof cg_classes[0]; ++i)
        if (cg_classes[i].name == opt.class_name) cls = &cg_classes[i];
    if (cls == NULL) npb_fail("no CG parameters for class %c", opt.class_name);

    struct cg_grid g;
    memset(&g, 0, sizeof g);
    setup_grid(&g, cls->na);

    char problem[160];
    snprintf(problem, sizeof problem, "{\"na\":%d,\"nonzer\":%d,\"niter\":%d,\"shift\":%.1f}",
             cls->na, cls->nonzer, cls->niter, cls->shift);
    npb_print_header("cg", cls->name, problem);

    /* The generator: seed 314159265, multiplier 5^13, one draw (NPB's zeta = randlc(...))
     * before makea. */
    double tran = NPB_SEED;
    (void)randlc(&tran, NPB_A);
    struct cg_matrix m;
    makea(cls, &g, tran, &m);

    struct cg_work wk;
    memset(&wk, 0, sizeof wk);
    wk.g = &g;
    wk.m = &m;
    wk.nthreads = npb_threads();
    wk.x = alloc_vector(g.ncols, "cg vector x");
    wk.z = alloc_vector(g.ncols, "cg vector z");
    wk.p = alloc_vector(g.ncols, "cg vector p");
    wk.r = alloc_exchanged_vector(g.ncols, "cg vector r");
    wk.q = alloc_exchanged_vector(g.ncols, "cg vector q");
    wk.w = alloc_exchanged_vector(g.nrows, "cg vector w");
    wk.rbuf = alloc_exchanged_vector(g.nrows, "cg receive buffer");
    wk.partial = alloc_vector(CG_PSTRIDE * wk.nthreads, "cg partial sums");

    /* One untimed outer iteration (page tables, caches), then x = 1 again. */
    set_ones(&wk);
    (void)conj_grad(&wk);
    (void)normalize(&wk);
    set_ones(&wk);

    /* Every outer iteration does the same work and messages, so a simulation may time a
     * few and extrapolate (SMPI builds, --iterations; the result is then not checked). */
    const int timed = opt.iterations > 0 && opt.iterations < cls->niter ? opt.iterations
                                                                         : cls->niter;
    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    double zeta = 0.0, rnorm = 0.0;
    for (int it = 1; it <= timed; ++it) {
        rnorm = conj_grad(&wk);
        zeta = cls->shift + 1.0 / normalize(&wk);
    }
    double elapsed = MPI_Wtime() - t0, tmax;
    NPB_CHECK_MPI(MPI_Allreduce(&elapsed, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));

    struct npb_result result;
    memset(&result, 0, sizeof result);
    result.kernel = "cg";
    result.class_name = cls->name;
    result.time_s = tmax * (double)cls->niter / timed;
    const double nz = cls->nonzer;
    result.mops_total = 1e-6 * 2.0 * cls->niter * (double)cls->na *
                        (3.0 + nz * (nz + 1.0) + 25.0 * (5.0 + nz * (nz + 1.0)) + 3.0) /
                        result.time_s;
    result.iterations = cls->niter;
    result.iterations_run = timed;
    result.verified = 1;
    npb_add_quantity(&result, "zeta", zeta, cls->zeta, CG_TOLERANCE);
    char note[128];
    snprintf(note, sizeof note, "rnorm=%.14e grid=%dx%d", rnorm, g.nprows, g.npcols);
    result.note = note;
    npb_print_result(&result);

    free(wk.x);
    free(wk.z);
    free(wk.p);
    NPB_FOLDABLE_FREE(wk.r);
    NPB_FOLDABLE_FREE(wk.q);
    NPB_FOLDABLE_FREE(wk.w);
    NPB_FOLDABLE_FREE(wk.rbuf);
    free(wk.partial);
    free(m.rowstr);
    free(m.colidx);
    NPB_FOLDABLE_FREE(m.a);
    NPB_CHECK_MPI(MPI_Finalize());
    return result.verified ? 0 : 3;
}
