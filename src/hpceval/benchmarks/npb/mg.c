/* NPB MG (NPB 3.x definition): V-cycle multigrid on a periodic nx^3 grid, C + MPI + OpenMP.
 *
 * The right-hand side v is zero except +1 at the ten largest and -1 at the ten smallest
 * values of a random field drawn with the NPB generator over the whole grid (zran3). From
 * u = 0 the benchmark computes r = v - A u, then nit times: one V-cycle (mg3P: rprj3
 * restrictions down to the 2^3 level, the psinv smoother there, then interp prolongation,
 * resid and psinv on the way up) followed by a new residual. The verified quantity is the
 * L2 norm of the final residual, rnm2.
 *
 * Decomposition (as NPB's MPI version): the ranks form a pi[0] x pi[1] x pi[2] grid (x is
 * the fastest axis; the rank count is split as NPB does: pi[0] = 2^floor(p/3), pi[1] =
 * 2^floor((p - log2 pi[0]) / 2), pi[2] the rest), each rank owns one block of every level
 * plus one ghost layer, and ghost layers are refreshed after every stencil by nearest-
 * neighbour face exchanges, axis by axis (comm3). The original keeps partial grids with
 * idle ranks on the coarse levels that have fewer points than ranks along an axis; here
 * instead, below the finest level l0 where every rank still owns at least one point per
 * axis, level l0's residual is gathered on every rank (MPI_Allgather of the blocks) and the
 * coarser levels (at most a few points per rank) are computed redundantly on every rank,
 * after which each rank takes its own block of the level-l0 correction. With up to 8 ranks
 * l0 is the coarsest level and every level is distributed. The arithmetic at every point is
 * the same as the original's, so results agree to rounding.
 *
 * Arrays: x is the fastest index; a level with interior n = (n0, n1, n2) is stored with
 * m = n + 2 points per axis, interior indices 1..n, ghosts 0 and n+1. */
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

#define MAXLEVEL 11 /* 2^10 = class D's 1024 points per axis */
#define NTOP 10     /* the ten largest and ten smallest values of the random field */

/* Loops over fewer points than this run on one thread: a parallel region costs more. */
#define OMP_MIN_POINTS 32768

struct level {
    int n[3];        /* interior points per axis on this rank */
    int m[3];        /* n + 2 */
    int gn;          /* global points per axis */
    int start[3];    /* global index of the first interior point */
    int distributed; /* 1: this rank's block, halos by MPI; 0: whole grid on every rank */
    size_t size;     /* m[0] * m[1] * m[2] */
};

/* The problem and the rank grid. */
static int nx_global, nit, lt, l0;
static double a_coef[4], c_coef[4];
static int my_rank, nranks;
static int pi_grid[3], coord[3];
static int neighbour[3][2]; /* [axis][0: lower, 1: upper] */

/* u and r on every level, v on the finest; the whole-grid copy of level l0 (l0 > 1). */
static struct level lev[MAXLEVEL + 1], full_l0;
static double *u_lev[MAXLEVEL + 1], *r_lev[MAXLEVEL + 1], *v_top;
static double *r_full, *u_full;
static double *face_send[2], *face_recv[2];
static double *gather_send, *gather_recv;
static double *plane_sums; /* one partial sum per plane: norms independent of threads */
static double *c1p_buff[4]; /* NPB's comm1p buffers (one rank), nm2 values each */
static size_t c1p_len;      /* NPB's nm2 = 2 nm^2, nm = 2 + the finest grid's extent */

#define IDX(L, i1, i2, i3)                                                                   \
    ((size_t)(i1) + (size_t)(L)->m[0] * ((size_t)(i2) + (size_t)(L)->m[1] * (size_t)(i3)))

/* ------------------------------------------------------------------ setup -- */

static int ilog2(int n)
{
    int k = 0;
    while ((1 << k) < n) ++k;
    return k;
}

/* Ranks per axis as NPB's MPI MG splits them: x gets floor(p/3) doublings, y half of the
 * rest, z what remains. */
static void rank_grid(int np, int pi[3])
{
    int p = ilog2(np);
    int dx = p / 3;
    int dy = (p - dx) / 2;
    pi[0] = 1 << dx;
    pi[1] = 1 << dy;
    pi[2] = np / (pi[0] * pi[1]);
}

static void rank_coords(int rank, int c[3])
{
    c[0] = rank % pi_grid[0];
    c[1] = (rank / pi_grid[0]) % pi_grid[1];
    c[2] = rank / (pi_grid[0] * pi_grid[1]);
}

static int rank_of(const int c[3])
{
    return c[0] + pi_grid[0] * (c[1] + pi_grid[1] * c[2]);
}

static void define_level(struct level *L, int gn, int distributed)
{
    L->gn = gn;
    L->distributed = distributed;
    for (int ax = 0; ax < 3; ++ax) {
        L->n[ax] = distributed ? gn / pi_grid[ax] : gn;
        L->start[ax] = distributed ? coord[ax] * L->n[ax] : 0;
        L->m[ax] = L->n[ax] + 2;
    }
    L->size = (size_t)L->m[0] * L->m[1] * L->m[2];
}

static void zero3(const struct level *L, double *x);

/* Zeroed by the threads' planes, so that pages are first touched where they are used. */
static double *alloc_grid(const struct level *L, const char *what)
{
    /* Grids hold values only: folded under SMPI with HPCEVAL_SMPI_FOLD. */
    double *p = NPB_FOLDABLE_ALLOC(L->size * sizeof(double), what);
    zero3(L, p);
    return p;
}

static void setup(void)
{
    rank_grid(nranks, pi_grid);
    rank_coords(my_rank, coord);
    for (int ax = 0; ax < 3; ++ax) {
        int c[3] = {coord[0], coord[1], coord[2]};
        c[ax] = (coord[ax] + pi_grid[ax] - 1) % pi_grid[ax];
        neighbour[ax][0] = rank_of(c);
        c[ax] = (coord[ax] + 1) % pi_grid[ax];
        neighbour[ax][1] = rank_of(c);
    }
    lt = ilog2(nx_global);
    int pmax = pi_grid[0] > pi_grid[1] ? pi_grid[0] : pi_grid[1];
    if (pi_grid[2] > pmax) pmax = pi_grid[2];
    l0 = ilog2(pmax) > 1 ? ilog2(pmax) : 1;
    for (int k = 1; k <= lt; ++k) {
        define_level(&lev[k], 1 << k, k >= l0);
        u_lev[k] = alloc_grid(&lev[k], "u");
        r_lev[k] = alloc_grid(&lev[k], "r");
    }
    v_top = alloc_grid(&lev[lt], "v");
    if (l0 > 1) {
        define_level(&full_l0, 1 << l0, 0);
        r_full = alloc_grid(&full_l0, "r (whole coarse grid)");
        u_full = alloc_grid(&full_l0, "u (whole coarse grid)");
        size_t block = (size_t)lev[l0].n[0] * lev[l0].n[1] * lev[l0].n[2];
        gather_send = npb_alloc(block * sizeof(double), "gather buffer");
        gather_recv = npb_alloc(block * (size_t)nranks * sizeof(double), "gather buffer");
    }
    const struct level *T = &lev[lt];
    size_t face = 0; /* the packed faces, z planes too (as NPB's give3/take3) */
    for (int ax = 0; ax < 3; ++ax) {
        size_t f = T->size / (size_t)T->m[ax];
        if (f > face) face = f;
    }
    for (int d = 0; d < 2; ++d) {
        face_send[d] = npb_alloc(face * sizeof(double), "halo buffer");
        face_recv[d] = npb_alloc(face * sizeof(double), "halo buffer");
    }
    plane_sums = npb_alloc((size_t)(T->n[2] + 2) * sizeof(double), "plane sums");
    if (nranks == 1) {
        c1p_len = 2 * (size_t)T->m[0] * T->m[0];
        for (int b = 0; b < 4; ++b) {
            c1p_buff[b] = npb_alloc(c1p_len * sizeof(double), "comm1p buffer");
            memset(c1p_buff[b], 0, c1p_len * sizeof(double));
        }
    }
}

static void release(void)
{
    for (int k = 1; k <= lt; ++k) {
        NPB_FOLDABLE_FREE(u_lev[k]);
        NPB_FOLDABLE_FREE(r_lev[k]);
    }
    NPB_FOLDABLE_FREE(v_top);
    if (r_full != NULL) NPB_FOLDABLE_FREE(r_full);
    if (u_full != NULL) NPB_FOLDABLE_FREE(u_full);
    free(gather_send);
    free(gather_recv);
    for (int d = 0; d < 2; ++d) {
        free(face_send[d]);
        free(face_recv[d]);
    }
    free(plane_sums);
    for (int b = 0; b < 4; ++b) free(c1p_buff[b]);
}

/* ------------------------------------------------------------------ comm3 -- */

/* Pack (or unpack) the plane `p` normal to `ax`: x faces cover interior y and z, y faces all
 * x and interior z, z faces everything, so that after the three axes edges and corners
 * hold the right values too (as NPB's comm3). */
static void face_copy(const struct level *L, double *x, int ax, int p, double *buf, int unpack)
{
    const int m0 = L->m[0], m1 = L->m[1];
    const int n1 = L->n[1], n2 = L->n[2];
    if (ax == 0) {
        size_t k = 0;
        for (int i3 = 1; i3 <= n2; ++i3)
            for (int i2 = 1; i2 <= n1; ++i2, ++k) {
                size_t at = (size_t)p + (size_t)m0 * ((size_t)i2 + (size_t)m1 * i3);
                if (unpack) x[at] = buf[k];
                else buf[k] = x[at];
            }
    } else if (ax == 1) {
        for (int i3 = 1; i3 <= n2; ++i3) {
            double *row = x + IDX(L, 0, p, i3), *b = buf + (size_t)(i3 - 1) * m0;
            if (unpack) memcpy(row, b, (size_t)m0 * sizeof(double));
            else memcpy(b, row, (size_t)m0 * sizeof(double));
        }
    } else {
        size_t count = (size_t)m0 * m1;
        double *plane = x + IDX(L, 0, 0, p);
        if (unpack) memcpy(plane, buf, count * sizeof(double));
        else memcpy(buf, plane, count * sizeof(double));
    }
}

static size_t face_count(const struct level *L, int ax)
{
    if (ax == 0) return (size_t)L->n[1] * L->n[2];
    if (ax == 1) return (size_t)L->m[0] * L->n[2];
    return (size_t)L->m[0] * L->m[1];
}

/* Periodic copy within the rank along `ax` (one rank on that axis, or a whole-grid level). */
static void periodic_copy(const struct level *L, double *x, int ax)
{
    const int m0 = L->m[0], m1 = L->m[1];
    const int n0 = L->n[0], n1 = L->n[1], n2 = L->n[2];
    if (ax == 0) {
        for (int i3 = 1; i3 <= n2; ++i3)
            for (int i2 = 1; i2 <= n1; ++i2) {
                double *row = x + (size_t)m0 * ((size_t)i2 + (size_t)m1 * i3);
                row[0] = row[n0];
                row[n0 + 1] = row[1];
            }
    } else if (ax == 1) {
        for (int i3 = 1; i3 <= n2; ++i3) {
            memcpy(x + IDX(L, 0, 0, i3), x + IDX(L, 0, n1, i3), (size_t)m0 * sizeof(double));
            memcpy(x + IDX(L, 0, n1 + 1, i3), x + IDX(L, 0, 1, i3), (size_t)m0 * sizeof(double));
        }
    } else {
        size_t count = (size_t)m0 * m1;
        memcpy(x + IDX(L, 0, 0, 0), x + IDX(L, 0, 0, n2), count * sizeof(double));
        memcpy(x + IDX(L, 0, 0, n2 + 1), x + IDX(L, 0, 0, 1), count * sizeof(double));
    }
}

enum { TAG_TO_LOWER = 100, TAG_TO_UPPER = 200 };

/* Ghost exchange with the two neighbours along `ax`, in the order of NPB's comm3: both
 * receives posted first (ready), then the last interior plane packed and sent to the upper
 * neighbour and the first one to the lower neighbour, each with a blocking send (give3),
 * then each received face waited for and unpacked, the lower one first (take3). The
 * blocking sends are part of NPB's cost: a large face goes by rendezvous, so the sender
 * waits for its partner before it packs the next face. */
static void exchange(const struct level *L, double *x, int ax)
{
    MPI_Request from_lower, from_upper;
    const int count = (int)face_count(L, ax);
    const int lower = neighbour[ax][0], upper = neighbour[ax][1];
    NPB_CHECK_MPI(MPI_Irecv(face_recv[0], count, MPI_DOUBLE, lower, TAG_TO_UPPER + ax,
                            MPI_COMM_WORLD, &from_lower));
    NPB_CHECK_MPI(MPI_Irecv(face_recv[1], count, MPI_DOUBLE, upper, TAG_TO_LOWER + ax,
                            MPI_COMM_WORLD, &from_upper));
    face_copy(L, x, ax, L->n[ax], face_send[1], 0);
    NPB_CHECK_MPI(MPI_Send(face_send[1], count, MPI_DOUBLE, upper, TAG_TO_UPPER + ax,
                           MPI_COMM_WORLD));
    face_copy(L, x, ax, 1, face_send[0], 0);
    NPB_CHECK_MPI(MPI_Send(face_send[0], count, MPI_DOUBLE, lower, TAG_TO_LOWER + ax,
                           MPI_COMM_WORLD));
    NPB_CHECK_MPI(MPI_Wait(&from_lower, MPI_STATUS_IGNORE));
    face_copy(L, x, ax, 0, face_recv[0], 1);
    NPB_CHECK_MPI(MPI_Wait(&from_upper, MPI_STATUS_IGNORE));
    face_copy(L, x, ax, L->n[ax] + 1, face_recv[1], 1);
}

/* The periodic update of NPB's single-rank path (comm1p), with its memory traffic: the two
 * receive buffers zeroed, the two faces packed, both buffers copied whole (NPB's "send"),
 * the faces unpacked into the opposite ghost planes. */
static void comm1p(const struct level *L, double *x, int ax)
{
    memset(c1p_buff[1], 0, c1p_len * sizeof(double));
    memset(c1p_buff[3], 0, c1p_len * sizeof(double));
    face_copy(L, x, ax, L->n[ax], c1p_buff[2], 0);
    face_copy(L, x, ax, 1, c1p_buff[0], 0);
    for (size_t i = 0; i < c1p_len; ++i) {
        c1p_buff[3][i] = c1p_buff[2][i];
        c1p_buff[1][i] = c1p_buff[0][i];
    }
    face_copy(L, x, ax, L->n[ax] + 1, c1p_buff[1], 1);
    face_copy(L, x, ax, 0, c1p_buff[3], 1);
}

/* Ghost update as NPB's comm3: on one rank comm1p; on more, messages along every axis,
 * an axis of one rank included (the rank is its own neighbour, as in NPB). Whole-grid
 * coarse levels (below l0, on every rank) are updated in place. */
static void comm3(const struct level *L, double *x)
{
    for (int ax = 0; ax < 3; ++ax) {
        if (!L->distributed) periodic_copy(L, x, ax);
        else if (nranks == 1) comm1p(L, x, ax);
        else exchange(L, x, ax);
    }
}

/* ---------------------------------------------------------------- stencils -- */

static void zero3(const struct level *L, double *x)
{
    size_t plane = (size_t)L->m[0] * L->m[1];
    int m2 = L->m[2];
#pragma omp parallel for schedule(static) if (L->size >= OMP_MIN_POINTS)
    for (int i3 = 0; i3 < m2; ++i3) memset(x + plane * i3, 0, plane * sizeof(double));
}

/* The stencils sweep their level in blocks of y rows: each thread takes a range of z
 * planes and, for one block of rows at a time, runs through its planes, so that the three
 * planes' worth of rows a row of the stencil reads stay in cache (the whole-plane sweep
 * would stream the neighbouring planes from memory again). Each point is computed exactly
 * as in the plain sweep. */
static int block_rows(const struct level *L)
{
    int b = 16384 / L->m[0] - 2; /* (b + 2) rows of 3 planes: about 400 KB */
    if (b < 4) b = 4;
    if (b > L->n[1]) b = L->n[1];
    return b;
}

static void thread_planes(int n, int *lo, int *hi)
{
#ifdef _OPENMP
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
#else
    int nt = 1, t = 0;
#endif
    *lo = 1 + (int)((long long)n * t / nt);
    *hi = 1 + (int)((long long)n * (t + 1) / nt);
}

/* One row of r = v - A u (a1 = 0 is left out as NPB does). */
static inline void resid_row(const double *uc, const double *vr, double *rr, size_t sy, size_t sz,
                             int n0, int m0, double *u1, double *u2)
{
    const double a0 = a_coef[0], a2 = a_coef[2], a3 = a_coef[3];
    const double *ym = uc - sy, *yp = uc + sy, *zm = uc - sz, *zp = uc + sz;
    const double *ymzm = ym - sz, *ypzm = yp - sz, *ymzp = ym + sz, *ypzp = yp + sz;
    for (int i1 = 0; i1 < m0; ++i1) {
        u1[i1] = ym[i1] + yp[i1] + zm[i1] + zp[i1];
        u2[i1] = ymzm[i1] + ypzm[i1] + ymzp[i1] + ypzp[i1];
    }
    for (int i1 = 1; i1 <= n0; ++i1)
        rr[i1] = vr[i1] - a0 * uc[i1] - a2 * (u2[i1] + u1[i1 - 1] + u1[i1 + 1]) -
                 a3 * (u2[i1 - 1] + u2[i1 + 1]);
}

/* r = v - A u on the interior, then the halo of r (v and r may be the same array). */
static void resid(const struct level *L, const double *u, const double *v, double *r)
{
    const int m0 = L->m[0], n0 = L->n[0], n1 = L->n[1], n2 = L->n[2];
    const size_t sy = (size_t)m0, sz = (size_t)m0 * L->m[1];
    const int B = block_rows(L);
    /* Sampled under SMPI with HPCEVAL_SMPI_SAMPLE, per grid size (local points). */
    NPB_SAMPLED_SIZED("mg-resid", L->size)
    {
#pragma omp parallel if ((size_t)n0 * n1 * n2 >= OMP_MIN_POINTS)
        {
            double u1[m0], u2[m0];
            int lo, hi;
            thread_planes(n2, &lo, &hi);
            for (int b0 = 1; b0 <= n1; b0 += B) {
                const int b1 = b0 + B - 1 < n1 ? b0 + B - 1 : n1;
                for (int i3 = lo; i3 < hi; ++i3)
                    for (int i2 = b0; i2 <= b1; ++i2) {
                        const size_t o = sy * i2 + sz * i3;
                        resid_row(u + o, v + o, r + o, sy, sz, n0, m0, u1, u2);
                    }
            }
        }
    }
    comm3(L, r);
}

/* One row of u = u + C r (c3 = 0 is left out as NPB does). */
static inline void psinv_row(const double *rc, double *uu, size_t sy, size_t sz, int n0, int m0,
                             double *r1, double *r2)
{
    const double c0 = c_coef[0], c1 = c_coef[1], c2 = c_coef[2];
    const double *ym = rc - sy, *yp = rc + sy, *zm = rc - sz, *zp = rc + sz;
    const double *ymzm = ym - sz, *ypzm = yp - sz, *ymzp = ym + sz, *ypzp = yp + sz;
    for (int i1 = 0; i1 < m0; ++i1) {
        r1[i1] = ym[i1] + yp[i1] + zm[i1] + zp[i1];
        r2[i1] = ymzm[i1] + ypzm[i1] + ymzp[i1] + ypzp[i1];
    }
    for (int i1 = 1; i1 <= n0; ++i1)
        uu[i1] = uu[i1] + c0 * rc[i1] + c1 * (rc[i1 - 1] + rc[i1 + 1] + r1[i1]) +
                 c2 * (r2[i1] + r1[i1 - 1] + r1[i1 + 1]);
}

/* u = u + C r on the interior (the smoother), then the halo of u. */
static void psinv(const struct level *L, const double *r, double *u)
{
    const int m0 = L->m[0], n0 = L->n[0], n1 = L->n[1], n2 = L->n[2];
    const size_t sy = (size_t)m0, sz = (size_t)m0 * L->m[1];
    const int B = block_rows(L);
    /* Sampled under SMPI with HPCEVAL_SMPI_SAMPLE, per grid size (local points). */
    NPB_SAMPLED_SIZED("mg-psinv", L->size)
    {
#pragma omp parallel if ((size_t)n0 * n1 * n2 >= OMP_MIN_POINTS)
        {
            double r1[m0], r2[m0];
            int lo, hi;
            thread_planes(n2, &lo, &hi);
            for (int b0 = 1; b0 <= n1; b0 += B) {
                const int b1 = b0 + B - 1 < n1 ? b0 + B - 1 : n1;
                for (int i3 = lo; i3 < hi; ++i3)
                    for (int i2 = b0; i2 <= b1; ++i2) {
                        const size_t o = sy * i2 + sz * i3;
                        psinv_row(r + o, u + o, sy, sz, n0, m0, r1, r2);
                    }
            }
        }
    }
    comm3(L, u);
}

/* Restriction: coarse point j takes the 27-point weighted average around fine point 2j
 * (interior indices from 1), then the halo of s. */
static void rprj3(const struct level *F, const double *r, const struct level *C, double *s)
{
    const int m0 = F->m[0];
    const size_t sy = (size_t)m0, sz = (size_t)m0 * F->m[1];
    const int c0 = C->n[0], c1 = C->n[1], c2 = C->n[2];
    int B = block_rows(F) / 2; /* coarse rows per block: twice as many fine rows */
    if (B < 2) B = 2;
    /* Sampled under SMPI with HPCEVAL_SMPI_SAMPLE, per grid size (local points). */
    NPB_SAMPLED_SIZED("mg-rprj3", F->size)
    {
#pragma omp parallel if ((size_t)F->n[0] * F->n[1] * F->n[2] >= OMP_MIN_POINTS)
        {
            double x1[m0], y1[m0];
            int lo, hi;
            thread_planes(c2, &lo, &hi);
            for (int b0 = 1; b0 <= c1; b0 += B) {
                const int b1 = b0 + B - 1 < c1 ? b0 + B - 1 : c1;
                for (int j3 = lo; j3 < hi; ++j3)
                    for (int j2 = b0; j2 <= b1; ++j2) {
                        const double *rc = r + sy * (size_t)(2 * j2) + sz * (size_t)(2 * j3);
                        const double *ym = rc - sy, *yp = rc + sy, *zm = rc - sz, *zp = rc + sz;
                        const double *ymzm = ym - sz, *ypzm = yp - sz, *ymzp = ym + sz, *ypzp = yp + sz;
                        for (int i1 = 1; i1 <= 2 * c0 + 1; ++i1) {
                            x1[i1] = ym[i1] + yp[i1] + zm[i1] + zp[i1];
                            y1[i1] = ymzm[i1] + ymzp[i1] + ypzm[i1] + ypzp[i1];
                        }
                        double *ss = s + IDX(C, 0, j2, j3);
                        for (int j1 = 1; j1 <= c0; ++j1) {
                            const int i1 = 2 * j1;
                            ss[j1] = 0.5 * rc[i1] + 0.25 * (rc[i1 - 1] + rc[i1 + 1] + x1[i1]) +
                                     0.125 * (x1[i1 - 1] + x1[i1 + 1] + y1[i1]) +
                                     0.0625 * (y1[i1 - 1] + y1[i1 + 1]);
                        }
                    }
            }
        }
    }
    comm3(C, s);
}

/* Prolongation: u += trilinear interpolation of the coarse z, over the whole fine block
 * ghosts included (coarse point i, from 0, sits on fine point 2i; fine 2i+1 is halfway to
 * coarse i+1). */
static void interp(const struct level *C, const double *z, const struct level *F, double *u)
{
    const int mm0 = C->m[0], mm1 = C->m[1], mm2 = C->m[2];
    const size_t zy = (size_t)mm0, zz = (size_t)mm0 * mm1;
    const size_t uy = (size_t)F->m[0], uz = (size_t)F->m[0] * F->m[1];
    if (F->m[0] != 2 * mm0 - 2 || F->m[1] != 2 * mm1 - 2 || F->m[2] != 2 * mm2 - 2)
        npb_fail("internal error: interp between levels of sizes %d and %d", mm0, F->m[0]);
    /* Sampled under SMPI with HPCEVAL_SMPI_SAMPLE, per grid size (local points). */
    NPB_SAMPLED_SIZED("mg-interp", C->size)
    {
#pragma omp parallel if (F->size >= OMP_MIN_POINTS)
        {
            double z1[mm0], z2[mm0], z3[mm0];
#pragma omp for schedule(static)
            for (int i3 = 0; i3 < mm2 - 1; ++i3)
                for (int i2 = 0; i2 < mm1 - 1; ++i2) {
                    const double *zc = z + zy * i2 + zz * i3;
                    const double *zyp = zc + zy, *zzp = zc + zz, *zyzp = zc + zy + zz;
                    for (int i1 = 0; i1 < mm0; ++i1) {
                        z1[i1] = zyp[i1] + zc[i1];
                        z2[i1] = zzp[i1] + zc[i1];
                        z3[i1] = zyzp[i1] + zzp[i1] + z1[i1];
                    }
                    double *p00 = u + uy * (size_t)(2 * i2) + uz * (size_t)(2 * i3);
                    double *p10 = p00 + uy, *p01 = p00 + uz, *p11 = p00 + uy + uz;
                    for (int i1 = 0; i1 < mm0 - 1; ++i1) {
                        p00[2 * i1] += zc[i1];
                        p00[2 * i1 + 1] += 0.5 * (zc[i1 + 1] + zc[i1]);
                        p10[2 * i1] += 0.5 * z1[i1];
                        p10[2 * i1 + 1] += 0.25 * (z1[i1] + z1[i1 + 1]);
                        p01[2 * i1] += 0.5 * z2[i1];
                        p01[2 * i1 + 1] += 0.25 * (z2[i1] + z2[i1 + 1]);
                        p11[2 * i1] += 0.25 * z3[i1];
                        p11[2 * i1 + 1] += 0.125 * (z3[i1] + z3[i1 + 1]);
                    }
                }
        }
    }
}

/* L2 norm (sqrt of the mean square over the whole grid) and max norm of the interior.
 * Plane sums are added in plane order, so the result does not depend on the threads. */
static void norm2u3(const struct level *L, const double *r, double *rnm2, double *rnmu)
{
    const int n0 = L->n[0], n1 = L->n[1], n2 = L->n[2];
    double local_max = 0.0;
#pragma omp parallel for schedule(static) reduction(max : local_max)                            \
    if ((size_t)n0 * n1 * n2 >= OMP_MIN_POINTS)
    for (int i3 = 1; i3 <= n2; ++i3) {
        double s = 0.0, mx = 0.0;
        for (int i2 = 1; i2 <= n1; ++i2) {
            const double *row = r + IDX(L, 0, i2, i3);
            for (int i1 = 1; i1 <= n0; ++i1) {
                s += row[i1] * row[i1];
                double a = fabs(row[i1]);
                if (a > mx) mx = a;
            }
        }
        plane_sums[i3] = s;
        if (mx > local_max) local_max = mx;
    }
    double sum = 0.0;
    for (int i3 = 1; i3 <= n2; ++i3) sum += plane_sums[i3];
    double global_sum, global_max;
    NPB_CHECK_MPI(MPI_Allreduce(&sum, &global_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    NPB_CHECK_MPI(MPI_Allreduce(&local_max, &global_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    double points = (double)nx_global * nx_global * nx_global;
    *rnm2 = sqrt(global_sum / points);
    *rnmu = global_max;
}

/* ------------------------------------------------- coarse levels on every rank -- */

/* Level l0's residual gathered on every rank into the whole-grid copy. */
static void gather_l0(void)
{
    const struct level *L = &lev[l0];
    const int n0 = L->n[0], n1 = L->n[1], n2 = L->n[2];
    const size_t block = (size_t)n0 * n1 * n2;
    size_t k = 0;
    for (int i3 = 1; i3 <= n2; ++i3)
        for (int i2 = 1; i2 <= n1; ++i2)
            for (int i1 = 1; i1 <= n0; ++i1) gather_send[k++] = r_lev[l0][IDX(L, i1, i2, i3)];
    NPB_CHECK_MPI(MPI_Allgather(gather_send, (int)block, MPI_DOUBLE, gather_recv, (int)block,
                                MPI_DOUBLE, MPI_COMM_WORLD));
    for (int q = 0; q < nranks; ++q) {
        int c[3];
        rank_coords(q, c);
        const double *b = gather_recv + block * (size_t)q;
        k = 0;
        for (int i3 = 1; i3 <= n2; ++i3)
            for (int i2 = 1; i2 <= n1; ++i2)
                for (int i1 = 1; i1 <= n0; ++i1)
                    r_full[IDX(&full_l0, c[0] * n0 + i1, c[1] * n1 + i2, c[2] * n2 + i3)] = b[k++];
    }
    comm3(&full_l0, r_full);
}

/* This rank's block of level l0 (ghosts included) += the whole-grid interpolation. */
static void scatter_l0(double *u)
{
    const struct level *L = &lev[l0];
    const int g = full_l0.gn;
    for (int i3 = 0; i3 < L->m[2]; ++i3)
        for (int i2 = 0; i2 < L->m[1]; ++i2)
            for (int i1 = 0; i1 < L->m[0]; ++i1) {
                /* global index of the point, folded into the periodic whole grid (1..g) */
                int f1 = (L->start[0] + i1 - 1 + g) % g + 1;
                int f2 = (L->start[1] + i2 - 1 + g) % g + 1;
                int f3 = (L->start[2] + i3 - 1 + g) % g + 1;
                u[IDX(L, i1, i2, i3)] += u_full[IDX(&full_l0, f1, f2, f3)];
            }
}

/* ------------------------------------------------------------------ V-cycle -- */

static void restrict_to(int k) /* level k from level k+1 */
{
    if (k + 1 == l0 && l0 > 1) {
        gather_l0();
        rprj3(&full_l0, r_full, &lev[k], r_lev[k]);
    } else {
        rprj3(&lev[k + 1], r_lev[k + 1], &lev[k], r_lev[k]);
    }
}

static void prolongate_to(int k) /* u on level k += interpolation of u on level k-1 */
{
    if (k == l0 && l0 > 1) {
        zero3(&full_l0, u_full);
        interp(&lev[k - 1], u_lev[k - 1], &full_l0, u_full);
        scatter_l0(u_lev[k]);
    } else {
        interp(&lev[k - 1], u_lev[k - 1], &lev[k], u_lev[k]);
    }
}

static void mg3p(void)
{
    for (int k = lt - 1; k >= 1; --k) restrict_to(k);
    zero3(&lev[1], u_lev[1]);
    psinv(&lev[1], r_lev[1], u_lev[1]);
    for (int k = 2; k <= lt - 1; ++k) {
        zero3(&lev[k], u_lev[k]);
        prolongate_to(k);
        resid(&lev[k], u_lev[k], r_lev[k], r_lev[k]);
        psinv(&lev[k], r_lev[k], u_lev[k]);
    }
    prolongate_to(lt);
    resid(&lev[lt], u_lev[lt], v_top, r_lev[lt]);
    psinv(&lev[lt], r_lev[lt], u_lev[lt]);
}

/* ------------------------------------------------------------------- zran3 -- */

struct candidate {
    double value;
    long long index; /* global linear index x + nx*(y + nx*z), -1 when empty */
};

/* Keeps the NTOP largest (ascending, [0] the smallest of them) and the NTOP smallest
 * (descending, [0] the largest of them) values seen. */
static void consider(struct candidate *top, struct candidate *bottom, double value, long long index)
{
    if (value > top[0].value) {
        top[0].value = value;
        top[0].index = index;
        for (int i = 0; i + 1 < NTOP && top[i].value > top[i + 1].value; ++i) {
            struct candidate t = top[i];
            top[i] = top[i + 1];
            top[i + 1] = t;
        }
    }
    if (value < bottom[0].value) {
        bottom[0].value = value;
        bottom[0].index = index;
        for (int i = 0; i + 1 < NTOP && bottom[i].value < bottom[i + 1].value; ++i) {
            struct candidate t = bottom[i];
            bottom[i] = bottom[i + 1];
            bottom[i + 1] = t;
        }
    }
}

static int by_value_desc(const void *a, const void *b)
{
    double x = ((const struct candidate *)a)->value, y = ((const struct candidate *)b)->value;
    return (x < y) - (x > y);
}

static void set_if_local(double *z, long long index, double value)
{
    const struct level *L = &lev[lt];
    long long n = nx_global;
    int g[3] = {(int)(index % n), (int)((index / n) % n), (int)(index / (n * n))};
    int l[3];
    for (int ax = 0; ax < 3; ++ax) {
        l[ax] = g[ax] - L->start[ax] + 1;
        if (l[ax] < 1 || l[ax] > L->n[ax]) return;
    }
    z[IDX(L, l[0], l[1], l[2])] = value;
}

/* The NPB generator on one row: x_{k+1} = a x_k mod 2^46, z_k = x_k 2^-46. The product of
 * two numbers below 2^46 is exact modulo 2^64 in unsigned integers, so keeping its low 46
 * bits gives exactly randlc's sequence (which splits the product into 23-bit halves to stay
 * exact in doubles) at a fraction of the cost. */
static void generator_row(double *z, int n, double seed, double multiplier)
{
    const uint64_t mask = ((uint64_t)1 << 46) - 1;
    const uint64_t a = (uint64_t)multiplier;
    const double scale = 1.0 / 70368744177664.0; /* 2^-46 */
    uint64_t x = (uint64_t)seed;
    for (int i = 0; i < n; ++i) {
        x = (x * a) & mask;
        z[i] = scale * (double)x;
    }
}

/* The right-hand side: the random field is the NPB generator's stream laid over the whole
 * grid in x-fastest order (point g gets the (g+1)-th number after the seed), each rank
 * jumping to its block's rows as NPB's zran3 does (a^nx from row to row, a^(nx ny) from
 * plane to plane); then +1 at the ten largest values, -1 at the ten smallest. */
static void zran3(double *z)
{
    const struct level *L = &lev[lt];
    const long long n = nx_global;
    const double a = NPB_A;
    const double a1 = npb_jump_multiplier(a, n);
    const long long first = L->start[0] + n * (L->start[1] + n * (long long)L->start[2]);
    zero3(L, z);
#pragma omp parallel for schedule(static)
    for (int i3 = 1; i3 <= L->n[2]; ++i3) {
        double x1 = NPB_SEED;
        randlc(&x1, npb_jump_multiplier(a, first + n * n * (i3 - 1)));
        for (int i2 = 1; i2 <= L->n[1]; ++i2) {
            generator_row(z + IDX(L, 1, i2, i3), L->n[0], x1, a);
            randlc(&x1, a1);
        }
    }

    struct candidate mine[2 * NTOP];
    struct candidate *top = mine, *bottom = mine + NTOP;
    for (int i = 0; i < NTOP; ++i) {
        top[i] = (struct candidate){0.0, -1};
        bottom[i] = (struct candidate){1.0, -1};
    }
    for (int i3 = 1; i3 <= L->n[2]; ++i3)
        for (int i2 = 1; i2 <= L->n[1]; ++i2) {
            const double *row = z + IDX(L, 0, i2, i3);
            const long long y = L->start[1] + i2 - 1, z_plane = L->start[2] + i3 - 1;
            const long long row_start = L->start[0] - 1 + n * (y + n * z_plane);
            for (int i1 = 1; i1 <= L->n[0]; ++i1)
                if (row[i1] > top[0].value || row[i1] < bottom[0].value)
                    consider(top, bottom, row[i1], row_start + i1);
        }

    /* Every rank gets every rank's candidates and picks the global ten of each kind. */
    double values[2 * NTOP];
    long long indices[2 * NTOP];
    for (int i = 0; i < 2 * NTOP; ++i) {
        values[i] = mine[i].value;
        indices[i] = mine[i].index;
    }
    size_t total = (size_t)nranks * 2 * NTOP;
    double *all_values = npb_alloc(total * sizeof(double), "zran3 candidates");
    long long *all_indices = npb_alloc(total * sizeof(long long), "zran3 candidates");
    NPB_CHECK_MPI(MPI_Allgather(values, 2 * NTOP, MPI_DOUBLE, all_values, 2 * NTOP, MPI_DOUBLE,
                                MPI_COMM_WORLD));
    NPB_CHECK_MPI(MPI_Allgather(indices, 2 * NTOP, MPI_LONG_LONG, all_indices, 2 * NTOP,
                                MPI_LONG_LONG, MPI_COMM_WORLD));
    struct candidate *tops = npb_alloc((size_t)nranks * NTOP * sizeof *tops, "zran3 candidates");
    struct candidate *bottoms =
        npb_alloc((size_t)nranks * NTOP * sizeof *bottoms, "zran3 candidates");
    size_t nt = 0, nb = 0;
    for (int q = 0; q < nranks; ++q)
        for (int i = 0; i < NTOP; ++i) {
            size_t at = (size_t)q * 2 * NTOP + i;
            if (all_indices[at] >= 0)
                tops[nt++] = (struct candidate){all_values[at], all_indices[at]};
            at += NTOP;
            if (all_indices[at] >= 0)
                bottoms[nb++] = (struct candidate){all_values[at], all_indices[at]};
        }
    if (nt < NTOP || nb < NTOP) npb_fail("internal error: fewer than %d grid points", NTOP);
    qsort(tops, nt, sizeof *tops, by_value_desc);
    qsort(bottoms, nb, sizeof *bottoms, by_value_desc);

    zero3(L, z);
    for (int i = 0; i < NTOP; ++i) set_if_local(z, bottoms[nb - 1 - i].index, -1.0);
    for (int i = 0; i < NTOP; ++i) set_if_local(z, tops[i].index, +1.0);
    comm3(L, z);
    free(all_values);
    free(all_indices);
    free(tops);
    free(bottoms);
}

/* -------------------------------------------------------------------- main -- */

struct mg_class {
    char name;
    int nx, nit;
    double rnm2;
};

static const struct mg_class classes[] = {
    {'S', 32, 4, 0.5307707005734e-04},   {'W', 128, 4, 0.6467329375339e-05},
    {'A', 256, 4, 0.2433365309069e-05},  {'B', 256, 20, 0.1800564401355e-05},
    {'C', 512, 20, 0.5706732285740e-06}, {'D', 1024, 50, 0.1583275060440e-09},
};
static const double MG_TOLERANCE = 1e-8;

int main(int argc, char **argv)
{
    NPB_CHECK_MPI(MPI_Init(&argc, &argv));
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &my_rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    struct npb_options opt;
    npb_parse_args(argc, argv, "mg", &opt);
    const struct mg_class *cls = NULL;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; ++i)
        if (classes[i].name == opt.class_name) cls = &classes[i];
    if (cls == NULL) npb_fail("unknown class %c", opt.class_name);
    nx_global = cls->nx;
    nit = cls->nit;

    if (!npb_is_power_of_two(nranks))
        npb_fail("mg needs a power-of-two number of ranks, got %d", nranks);
    int pi[3];
    rank_grid(nranks, pi);
    if (pi[0] > nx_global || pi[1] > nx_global || pi[2] > nx_global)
        npb_fail("mg class %c (%d^3 grid) cannot use %d ranks: the %dx%dx%d rank grid needs at "
                 "most %d ranks per axis",
                 cls->name, nx_global, nranks, pi[0], pi[1], pi[2], nx_global);

    /* Stencil coefficients: A (the discrete operator) and C (the smoother). */
    a_coef[0] = -8.0 / 3.0;
    a_coef[1] = 0.0;
    a_coef[2] = 1.0 / 6.0;
    a_coef[3] = 1.0 / 12.0;
    if (cls->name == 'S' || cls->name == 'W' || cls->name == 'A') {
        c_coef[0] = -3.0 / 8.0;
        c_coef[1] = 1.0 / 32.0;
        c_coef[2] = -1.0 / 64.0;
    } else {
        c_coef[0] = -3.0 / 17.0;
        c_coef[1] = 1.0 / 33.0;
        c_coef[2] = -1.0 / 61.0;
    }
    c_coef[3] = 0.0;

    char problem[160];
    snprintf(problem, sizeof problem, "{\"nx\":%d,\"ny\":%d,\"nz\":%d,\"nit\":%d}", nx_global,
             nx_global, nx_global, nit);
    npb_print_header("mg", cls->name, problem);

    setup();
    const struct level *T = &lev[lt];
    double *u = u_lev[lt], *r = r_lev[lt];

    /* Untimed warm-up as NPB: one residual and one iteration, then back to the start. */
    zero3(T, u);
    zran3(v_top);
    resid(T, u, v_top, r);
    mg3p();
    resid(T, u, v_top, r);
    zero3(T, u);
    zran3(v_top);

    double rnm2, rnmu;
    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    resid(T, u, v_top, r);
    norm2u3(T, r, &rnm2, &rnmu);
    for (int it = 1; it <= nit; ++it) {
        mg3p();
        resid(T, u, v_top, r);
    }
    norm2u3(T, r, &rnm2, &rnmu);
    double t_local = MPI_Wtime() - t0, t;
    NPB_CHECK_MPI(MPI_Allreduce(&t_local, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));

    struct npb_result result;
    memset(&result, 0, sizeof result);
    result.kernel = "mg";
    result.class_name = cls->name;
    result.time_s = t;
    double points = (double)nx_global * nx_global * nx_global;
    result.mops_total = t > 0.0 ? 58.0e-6 * nit * points / t : 0.0;
    result.iterations = nit;
    result.verified = 1;
    npb_add_quantity(&result, "rnm2", rnm2, cls->rnm2, MG_TOLERANCE);
    npb_print_result(&result);
    int status = result.verified ? 0 : 3;
    release();
    NPB_CHECK_MPI(MPI_Finalize());
    return status;
}
