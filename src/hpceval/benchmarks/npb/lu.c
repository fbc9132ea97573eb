/* NPB LU (NPB 3.4 definition): symmetric successive over-relaxation (SSOR) solution of the
 * 3-D compressible Navier-Stokes equations on an n^3 grid, C + MPI + OpenMP.
 *
 * Every SSOR iteration scales the residual by dt, runs the lower-triangular sweep (for each
 * k-plane upwards, each j-line, each point in i order: the 5x5 flux Jacobians towards the
 * lower neighbours, jacld, and the block Gauss-Seidel update, blts), then the upper sweep
 * downwards (jacu, buts), adds the correction to u and recomputes the steady-state residual
 * (rhs: central differences of the fluxes plus fourth-order artificial dissipation). The
 * forcing (erhs) makes a known polynomial (exact) the steady state; the start is a
 * transfinite interpolation of its boundary values (setbv, setiv). Verified quantities
 * (NPB's verify): the RMS norms of the final residual (xcr, five components), of the error
 * against the exact solution (xce) and a surface integral of the pressure (xci, pintgr),
 * relative tolerance 1e-8.
 *
 * Decomposition (NPB's MPI LU): the ranks form a px x py grid (NPB 3.4's proc_grid rule,
 * lu_process_grid below) and each owns a pencil of whole k-columns over an i x j rectangle.
 * The sweeps are pipelined wavefronts: before computing plane k a rank receives the last
 * solved line of that plane from its lower neighbours in i and j (north, west; in the upper
 * sweep south, east), and sends its own after (exchange_1). rhs refreshes two ghost layers
 * of u first in i, then in j (exchange_3); the surface integral passes face values to the
 * neighbour that closes a cell (exchange_4/5/6).
 *
 * OpenMP (NPB-OMP's pipelined LU): in a sweep the threads split the j-lines of a plane in
 * contiguous blocks; thread t starts plane k once thread t-1 has finished it (a counter per
 * thread), so the threads work on successive planes at once. With several ranks the first
 * thread of the pipeline receives a plane and the last one sends it; MPI calls are then
 * serialised (MPI_THREAD_SERIALIZED) and waits poll, so that no thread blocks another's call.
 *
 * Storage: u, rsd, frct and flux hold 5 components per point, i fastest, with two ghost
 * points on each side in i and j (local index -1..n+2) and none in k (1..nz); the indices
 * are NPB's (1-based, local), so that the loop bounds read as in the specification.
 *
 * lu_mz.c compiles this file in with LU_ZONE_SOLVER: the solver without the process grid,
 * ssor's loop or main; there a zone is a grid of the ranks of LU-MZ's process grid that
 * split it along i (north and south only), grid_comm those ranks. */
#define _POSIX_C_SOURCE 200809L
#include "npb_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define LU_TOLERANCE 1.0e-8
/* Relative error put on every reference value: 0 in every real build. The tests build with
 * -DLU_REFERENCE_ERROR=1e-6 to check that a wrong reference fails the verification. */
#ifndef LU_REFERENCE_ERROR
#define LU_REFERENCE_ERROR 0.0
#endif
#define OMEGA 1.2
#define TAG_LOWER_I 11 /* exchange_1, lower sweep, along i (north -> south) */
#define TAG_LOWER_J 12 /* along j (west -> east) */
#define TAG_UPPER_I 13 /* upper sweep (south -> north) */
#define TAG_UPPER_J 14 /* (east -> west) */
#define TAG_GHOST 20   /* exchange_3, + 0..3 per direction */
#define TAG_FACE 30    /* exchange_4/5/6 */
#define MAX_THREADS 256
#define CACHE_LINE_DOUBLES 8

typedef double vec5[5];
typedef double block5[5][5];

struct lu_class {
    char name;
    int n;      /* grid points per axis */
    int itmax;  /* SSOR iterations */
    double dt;
    double xcr[5]; /* RMS norms of the final residual */
    double xce[5]; /* RMS norms of the error */
    double xci;    /* surface integral */
};

#ifndef LU_ZONE_SOLVER
/* NPB 3.4 LU (setparams.c, verify.f). */
static const struct lu_class classes[] = {
    {'S', 12, 50, 0.5,
     {1.6196343210976702e-02, 2.1976745164821318e-03, 1.5179927653399185e-03,
      1.5029584435994323e-03, 3.4264073155896461e-02},
     {6.4223319957960924e-04, 8.4144342047347926e-05, 5.8588269616485186e-05,
      5.8474222595157350e-05, 1.3103347914111294e-03},
     7.8418928865937083e+00},
    {'W', 33, 300, 1.5e-3,
     {0.1236511638192e+02, 0.1317228477799e+01, 0.2550120713095e+01, 0.2326187750252e+01,
      0.2826799444189e+02},
     {0.4867877144216e+00, 0.5064652880982e-01, 0.9281818101960e-01, 0.8570126542733e-01,
      0.1084277417792e+01},
     0.1161399311023e+02},
    {'A', 64, 250, 2.0,
     {7.7902107606689367e+02, 6.3402765259692870e+01, 1.9499249727292479e+02,
      1.7845301160418537e+02, 1.8384760349464247e+03},
     {2.9964085685471943e+01, 2.8194576365003349e+00, 7.3473412698774742e+00,
      6.7139225687777051e+00, 7.0715315688392578e+01},
     2.6030925604886277e+01},
    {'B', 102, 250, 2.0,
     {3.5532672969982736e+03, 2.6214750795310692e+02, 8.8333721850952190e+02,
      7.7812774739425265e+02, 7.3087969592545314e+03},
     {1.1401176380212709e+02, 8.1098963655421574e+00, 2.8480597317698308e+01,
      2.5905394567832939e+01, 2.6054907504857413e+02},
     4.7887162703308227e+01},
    {'C', 162, 250, 2.0,
     {1.03766980323537846e+04, 8.92212458801008552e+02, 2.56238814582660871e+03,
      2.19194343857831427e+03, 1.78078057261061185e+04},
     {2.15986399716949279e+02, 1.55789559239863600e+01, 5.41318863077207766e+01,
      4.82262643154045421e+01, 4.55902910043250358e+02},
     6.66404553572181300e+01},
    {'D', 408, 300, 1.0,
     {0.4868417937025e+05, 0.4696371050071e+04, 0.1218114549776e+05, 0.1033801493461e+05,
      0.7142398413817e+05},
     {0.3752393004482e+03, 0.3084128893659e+02, 0.9434276905469e+02, 0.8230686681928e+02,
      0.7002620636210e+03},
     0.8334101392503e+02},
};
#endif

/* Physical and discretisation constants (NPB's setcoeff and lu_data). */
static const double c1 = 1.40, c2 = 0.40, c3 = 1.00e-01, c4 = 1.00, c5 = 1.40;
static double dxi, deta, dzeta, tx1, tx2, tx3, ty1, ty2, ty3, tz1, tz2, tz3;
static double dxc[5], dyc[5], dzc[5], dssp, dt, omega;
static int ii1, ii2, ji1, ji2, ki1, ki2;

/* Grid and decomposition. */
static int nx0, ny0, nz0;     /* global points per axis */
static int nx, ny, nz;        /* this rank's points */
static int ipt, jpt;          /* global offset of this rank's first point */
static int ist, iend, jst, jend; /* the interior points this rank updates */
static int north = -1, south = -1, west = -1, east = -1;
static int my_rank, nranks;
#ifndef LU_ZONE_SOLVER
static int px, py; /* the process grid */
#endif
static size_t ldx, ldy;       /* leading dimensions (nx + 4, ny + 4) */

static vec5 *u, *rsd, *frct, *flux;

/* Per thread: the Jacobian blocks of one j-line and the upper sweep's update. */
struct line_work {
    block5 *a, *b, *c, *d;
    vec5 *tv;
};
static struct line_work work[MAX_THREADS];
static int nthreads = 1;
/* Planes done per thread in the running sweep, one cache line each. */
static long planes_done[MAX_THREADS][CACHE_LINE_DOUBLES];
/* True when several threads may call MPI at once (then every call is serialised). */
static int threaded_mpi;
/* The ranks that share one grid and sum its norms and surface integral: all of them for LU,
 * the parts of a zone of LU-MZ (lu_mz.c; this rank alone when zones are not split). */
static MPI_Comm grid_comm;

#define AT(arr, i, j, k) \
    ((arr)[(((size_t)(k) - 1) * ldy + (size_t)((j) + 1)) * ldx + (size_t)((i) + 1)])

#ifdef LU_ZONE_SOLVER
/* NPB-MZ's rho_i (1 / density) and qs (half the squared momentum over the density) of every
 * point, which its rhs fills and its jacld/jacu read (lu_mz.c keeps one pair per zone). */
static double *rho_inv, *q_kin;
#endif

static double recv_buffer[2][5 * 4096];
static double send_buffer[2][5 * 4096];

#ifndef LU_ZONE_SOLVER /* LU-MZ: a zone is one rank's grid */
/* --- the process grid (NPB 3.4 proc_grid.f, subdomain.f) ------------------------------ */

/* NPB's isqrt2: the x-extent of a near-square factorisation of n (-1 if none). */
static int near_square_divisor(int n)
{
    if (n <= 0) return -1;
    /* x ends as the smallest integer with x^2 > n */
    int x = 1, square = 0;
    while (square <= n) {
        square = x * x;
        if (square == n) return x;
        ++x;
    }
    --x;
    int y = n / x;
    while (x * y != n && 2 * y >= x) {
        ++x;
        y = n / x;
    }
    return (x * y != n || 2 * y < x) ? -1 : x;
}

/* The px x py process grid for `n` ranks (0 when NPB 3.4 refuses the count). */
static int lu_process_grid(int n, int *gx, int *gy)
{
    int xdiv = near_square_divisor(n);
    if (xdiv <= 0) return 0;
    int x0 = xdiv, y0 = n / xdiv;
    int y = (int)(sqrt((double)n) + 0.001), x = n / y;
    while (y >= y0 && x * y != n) {
        --y;
        x = n / y;
    }
    if (x < x0 || y < y0 || x * y != n) return 0;
    *gx = x;
    *gy = y;
    return 1;
}

static void decompose(void)
{
    if (!lu_process_grid(nranks, &px, &py))
        npb_fail("lu cannot run on %d ranks: NPB 3.4 LU needs a count that splits into a "
                 "px x py grid as NPB 3.4's proc_grid (1, 2, 4, 6, 8, 9, 12, 16, ...)",
                 nranks);
    int row = my_rank % px + 1, col = my_rank / px + 1;
    north = row > 1 ? my_rank - 1 : -1;
    south = row < px ? my_rank + 1 : -1;
    west = col > 1 ? my_rank - px : -1;
    east = col < py ? my_rank + px : -1;
    int mm = nx0 % px;
    if (row <= mm) {
        nx = nx0 / px + 1;
        ipt = (row - 1) * nx;
    } else {
        nx = nx0 / px;
        ipt = (row - 1) * nx + mm;
    }
    mm = ny0 % py;
    if (col <= mm) {
        ny = ny0 / py + 1;
        jpt = (col - 1) * ny;
    } else {
        ny = ny0 / py;
        jpt = (col - 1) * ny + mm;
    }
    nz = nz0;
    if (nx0 / px < 3 || ny0 / py < 3)
        npb_fail("lu class with %d points per axis cannot run on %d ranks (%d x %d grid): "
                 "a rank needs at least 3 points per axis",
                 nx0, nranks, px, py);
    if (5 * (nx + 2) > (int)(sizeof recv_buffer[0] / sizeof(double)) ||
        5 * (ny + 2) > (int)(sizeof recv_buffer[0] / sizeof(double)))
        npb_fail("lu: a rank's %d x %d points exceed this program's message buffers", nx, ny);
    ist = north == -1 ? 2 : 1;
    iend = south == -1 ? nx - 1 : nx;
    jst = west == -1 ? 2 : 1;
    jend = east == -1 ? ny - 1 : ny;
    ldx = (size_t)nx + 4;
    ldy = (size_t)ny + 4;
}

#endif

static void set_coefficients(void)
{
    dxi = 1.0 / (nx0 - 1);
    deta = 1.0 / (ny0 - 1);
    dzeta = 1.0 / (nz0 - 1);
    tx1 = 1.0 / (dxi * dxi);
    tx2 = 1.0 / (2.0 * dxi);
    tx3 = 1.0 / dxi;
    ty1 = 1.0 / (deta * deta);
    ty2 = 1.0 / (2.0 * deta);
    ty3 = 1.0 / deta;
    tz1 = 1.0 / (dzeta * dzeta);
    tz2 = 1.0 / (2.0 * dzeta);
    tz3 = 1.0 / dzeta;
    ii1 = 2;
    ii2 = nx0 - 1;
    ji1 = 2;
    ji2 = ny0 - 2;
    ki1 = 3;
    ki2 = nz0 - 1;
    for (int m = 0; m < 5; ++m) {
        dxc[m] = 0.75;
        dyc[m] = 0.75;
        dzc[m] = 1.00;
    }
    dssp = 1.0 / 4.0; /* max(dx1, dy1, dz1) / 4 */
}

/* --- MPI helpers usable from the threads of a pipeline --------------------------------- */

static void wait_request(MPI_Request *request)
{
    if (!threaded_mpi) {
        NPB_CHECK_MPI(MPI_Wait(request, MPI_STATUS_IGNORE));
        return;
    }
    int done = 0;
    while (!done) {
        int rc;
#pragma omp critical(lu_mpi)
        rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) npb_fail("MPI_Test failed (MPI error %d)", rc);
    }
}

static void receive(double *buffer, int count, int source, int tag)
{
    MPI_Request request;
    int rc;
#pragma omp critical(lu_mpi)
    rc = MPI_Irecv(buffer, count, MPI_DOUBLE, source, tag, MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS) npb_fail("MPI_Irecv failed (MPI error %d)", rc);
    wait_request(&request);
}

static void send(double *buffer, int count, int dest, int tag)
{
    MPI_Request request;
    int rc;
#pragma omp critical(lu_mpi)
    rc = MPI_Isend(buffer, count, MPI_DOUBLE, dest, tag, MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS) npb_fail("MPI_Isend failed (MPI error %d)", rc);
    wait_request(&request);
}

/* --- exchange_1: one plane's boundary line of rsd between sweep neighbours ------------- */

/* Lower sweep, before plane k: the north neighbour's last i-line and the west one's last
 * j-line land in the ghost line 0. */
static void receive_lower(int k)
{
    double *buf = recv_buffer[0];
    if (north != -1) {
        receive(buf, 5 * (jend - jst + 1), north, TAG_LOWER_I);
        for (int j = jst; j <= jend; ++j)
            memcpy(AT(rsd, 0, j, k), buf + 5 * (j - jst), sizeof(vec5));
    }
    if (west != -1) {
        receive(buf, 5 * (iend - ist + 1), west, TAG_LOWER_J);
        memcpy(AT(rsd, ist, 0, k), buf, sizeof(vec5) * (size_t)(iend - ist + 1));
    }
}

static void send_lower(int k)
{
    double *buf = send_buffer[0];
    if (south != -1) {
        for (int j = jst; j <= jend; ++j)
            memcpy(buf + 5 * (j - jst), AT(rsd, nx, j, k), sizeof(vec5));
        send(buf, 5 * (jend - jst + 1), south, TAG_LOWER_I);
    }
    if (east != -1) {
        memcpy(buf, AT(rsd, ist, ny, k), sizeof(vec5) * (size_t)(iend - ist + 1));
        send(buf, 5 * (iend - ist + 1), east, TAG_LOWER_J);
    }
}

static void receive_upper(int k)
{
    double *buf = recv_buffer[1];
    if (south != -1) {
        receive(buf, 5 * (jend - jst + 1), south, TAG_UPPER_I);
        for (int j = jst; j <= jend; ++j)
            memcpy(AT(rsd, nx + 1, j, k), buf + 5 * (j - jst), sizeof(vec5));
    }
    if (east != -1) {
        receive(buf, 5 * (iend - ist + 1), east, TAG_UPPER_J);
        memcpy(AT(rsd, ist, ny + 1, k), buf, sizeof(vec5) * (size_t)(iend - ist + 1));
    }
}

static void send_upper(int k)
{
    double *buf = send_buffer[1];
    if (north != -1) {
        for (int j = jst; j <= jend; ++j)
            memcpy(buf + 5 * (j - jst), AT(rsd, 1, j, k), sizeof(vec5));
        send(buf, 5 * (jend - jst + 1), north, TAG_UPPER_I);
    }
    if (west != -1) {
        memcpy(buf, AT(rsd, ist, 1, k), sizeof(vec5) * (size_t)(iend - ist + 1));
        send(buf, 5 * (iend - ist + 1), west, TAG_UPPER_J);
    }
}

/* --- exchange_3: two ghost layers of a field, along i (axis 0) or j (axis 1) ----------- */

static void pack_i(const vec5 *g, int i0, double *buf)
{
    size_t n = 0;
    for (int k = 1; k <= nz; ++k)
        for (int j = 1; j <= ny; ++j) {
            memcpy(buf + n, AT(g, i0, j, k), sizeof(vec5));
            memcpy(buf + n + 5, AT(g, i0 + 1, j, k), sizeof(vec5));
            n += 10;
        }
}

static void unpack_i(vec5 *g, int i0, const double *buf)
{
    size_t n = 0;
    for (int k = 1; k <= nz; ++k)
        for (int j = 1; j <= ny; ++j) {
            memcpy(AT(g, i0, j, k), buf + n, sizeof(vec5));
            memcpy(AT(g, i0 + 1, j, k), buf + n + 5, sizeof(vec5));
            n += 10;
        }
}

static void pack_j(const vec5 *g, int j0, double *buf)
{
    size_t n = 0, line = sizeof(vec5) * (size_t)nx;
    for (int k = 1; k <= nz; ++k) {
        memcpy(buf + n, AT(g, 1, j0, k), line);
        memcpy(buf + n + 5 * (size_t)nx, AT(g, 1, j0 + 1, k), line);
        n += 10 * (size_t)nx;
    }
}

static void unpack_j(vec5 *g, int j0, const double *buf)
{
    size_t n = 0, line = sizeof(vec5) * (size_t)nx;
    for (int k = 1; k <= nz; ++k) {
        memcpy(AT(g, 1, j0, k), buf + n, line);
        memcpy(AT(g, 1, j0 + 1, k), buf + n + 5 * (size_t)nx, line);
        n += 10 * (size_t)nx;
    }
}

static double *ghost_send, *ghost_recv;

/* One direction: send the two layers next to `to`'s side, receive `from`'s into the ghosts
 * on the other side. `low` tells which side is sent (1: the first two lines). */
static void ghost_shift(vec5 *g, int axis, int to, int from, int low, int tag)
{
    int n = axis == 0 ? ny : nx;
    int count = 10 * n * nz;
    MPI_Request request = MPI_REQUEST_NULL;
    if (from != -1)
        NPB_CHECK_MPI(
            MPI_Irecv(ghost_recv, count, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, &request));
    if (to != -1) {
        if (axis == 0) pack_i(g, low ? 1 : nx - 1, ghost_send);
        else pack_j(g, low ? 1 : ny - 1, ghost_send);
        NPB_CHECK_MPI(MPI_Send(ghost_send, count, MPI_DOUBLE, to, tag, MPI_COMM_WORLD));
    }
    if (from != -1) {
        NPB_CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
        if (axis == 0) unpack_i(g, low ? nx + 1 : -1, ghost_recv);
        else unpack_j(g, low ? ny + 1 : -1, ghost_recv);
    }
}

static void exchange_ghosts(vec5 *g, int axis)
{
    if (nranks == 1) return;
    if (axis == 0) {
        ghost_shift(g, 0, south, north, 0, TAG_GHOST + 0);
        ghost_shift(g, 0, north, south, 1, TAG_GHOST + 1);
    } else {
        ghost_shift(g, 1, east, west, 0, TAG_GHOST + 2);
        ghost_shift(g, 1, west, east, 1, TAG_GHOST + 3);
    }
}

/* --- exact solution, boundary and initial values --------------------------------------- */

static void exact(int i, int j, int k, double *out)
{
    double xi = (double)(i - 1) / (nx0 - 1);
    double eta = (double)(j - 1) / (ny0 - 1);
    double zeta = (double)(k - 1) / (nz - 1);
    npb_adi_exact_solution(xi, eta, zeta, out); /* the same manufactured solution as BT/SP */
}

static void set_boundary_values(void)
{
    for (int j = 1; j <= ny; ++j)
        for (int i = 1; i <= nx; ++i) {
            exact(ipt + i, jpt + j, 1, AT(u, i, j, 1));
            exact(ipt + i, jpt + j, nz, AT(u, i, j, nz));
        }
    for (int k = 1; k <= nz; ++k) {
        if (west == -1)
            for (int i = 1; i <= nx; ++i) exact(ipt + i, 1, k, AT(u, i, 1, k));
        if (east == -1)
            for (int i = 1; i <= nx; ++i) exact(ipt + i, ny0, k, AT(u, i, ny, k));
        if (north == -1)
            for (int j = 1; j <= ny; ++j) exact(1, jpt + j, k, AT(u, 1, j, k));
        if (south == -1)
            for (int j = 1; j <= ny; ++j) exact(nx0, jpt + j, k, AT(u, nx, j, k));
    }
}

static void set_initial_values(void)
{
    for (int k = 2; k <= nz - 1; ++k) {
        double zeta = (double)(k - 1) / (nz - 1);
        for (int j = 1; j <= ny; ++j) {
            int jg = jpt + j;
            if (jg == 1 || jg == ny0) continue;
            double eta = (double)(jg - 1) / (ny0 - 1);
            for (int i = 1; i <= nx; ++i) {
                int ig = ipt + i;
                if (ig == 1 || ig == nx0) continue;
                double xi = (double)(ig - 1) / (nx0 - 1);
                double w1[5], wn[5], s1[5], sn[5], b1[5], bn[5];
                exact(1, jg, k, w1);
                exact(nx0, jg, k, wn);
                exact(ig, 1, k, s1);
                exact(ig, ny0, k, sn);
                exact(ig, jg, 1, b1);
                exact(ig, jg, nz, bn);
                for (int m = 0; m < 5; ++m) {
                    double pxi = (1.0 - xi) * w1[m] + xi * wn[m];
                    double peta = (1.0 - eta) * s1[m] + eta * sn[m];
                    double pzeta = (1.0 - zeta) * b1[m] + zeta * bn[m];
                    AT(u, i, j, k)[m] = pxi + peta + pzeta - pxi * peta - peta * pzeta -
                                        pzeta * pxi + pxi * peta * pzeta;
                }
            }
        }
    }
}

/* --- the residual operator (rhs, and erhs on the exact solution) ----------------------- */

/* out += the discretised steady-state operator applied to w: convective fluxes, viscous
 * fluxes and fourth-order dissipation, along i, j then k (rhs.f's order per point). w's
 * ghost layers are refreshed on the way. */
static void add_fluxes_i(vec5 *out, const vec5 *w)
{
    const int l1 = north == -1 ? 1 : 0, l2 = south == -1 ? nx : nx + 1;
    const int ist1 = north == -1 ? 4 : 1, iend1 = south == -1 ? nx - 3 : nx;
#pragma omp parallel for schedule(static)
    for (int k = 2; k <= nz - 1; ++k)
        for (int j = jst; j <= jend; ++j) {
            vec5 *f = &AT(flux, 0, j, k);
            const vec5 *g = &AT(w, 0, j, k);
            vec5 *r = &AT(out, 0, j, k);
            for (int i = l1; i <= l2; ++i) {
                double u21 = g[i][1] / g[i][0];
                double q = 0.5 * (g[i][1] * g[i][1] + g[i][2] * g[i][2] + g[i][3] * g[i][3]) /
                           g[i][0];
                f[i][0] = g[i][1];
                f[i][1] = g[i][1] * u21 + c2 * (g[i][4] - q);
                f[i][2] = g[i][2] * u21;
                f[i][3] = g[i][3] * u21;
                f[i][4] = (c1 * g[i][4] - c2 * q) * u21;
            }
            for (int i = ist; i <= iend; ++i)
                for (int m = 0; m < 5; ++m) r[i][m] -= tx2 * (f[i + 1][m] - f[i - 1][m]);
            for (int i = ist; i <= l2; ++i) {
                double tmp = 1.0 / g[i][0];
                double u21i = tmp * g[i][1], u31i = tmp * g[i][2], u41i = tmp * g[i][3],
                       u51i = tmp * g[i][4];
                tmp = 1.0 / g[i - 1][0];
                double u21im1 = tmp * g[i - 1][1], u31im1 = tmp * g[i - 1][2],
                       u41im1 = tmp * g[i - 1][3], u51im1 = tmp * g[i - 1][4];
                f[i][1] = (4.0 / 3.0) * tx3 * (u21i - u21im1);
                f[i][2] = tx3 * (u31i - u31im1);
                f[i][3] = tx3 * (u41i - u41im1);
                f[i][4] = 0.5 * (1.0 - c1 * c5) * tx3 *
                              ((u21i * u21i + u31i * u31i + u41i * u41i) -
                               (u21im1 * u21im1 + u31im1 * u31im1 + u41im1 * u41im1)) +
                          (1.0 / 6.0) * tx3 * (u21i * u21i - u21im1 * u21im1) +
                          c1 * c5 * tx3 * (u51i - u51im1);
            }
            for (int i = ist; i <= iend; ++i) {
                r[i][0] += dxc[0] * tx1 * (g[i - 1][0] - 2.0 * g[i][0] + g[i + 1][0]);
                for (int m = 1; m < 5; ++m)
                    r[i][m] = r[i][m] + tx3 * c3 * c4 * (f[i + 1][m] - f[i][m]) +
                              dxc[m] * tx1 * (g[i - 1][m] - 2.0 * g[i][m] + g[i + 1][m]);
            }
            if (north == -1)
                for (int m = 0; m < 5; ++m) {
                    r[2][m] -= dssp * (+5.0 * g[2][m] - 4.0 * g[3][m] + g[4][m]);
                    r[3][m] -= dssp * (-4.0 * g[2][m] + 6.0 * g[3][m] - 4.0 * g[4][m] + g[5][m]);
                }
            for (int i = ist1; i <= iend1; ++i)
                for (int m = 0; m < 5; ++m)
                    r[i][m] -= dssp * (g[i - 2][m] - 4.0 * g[i - 1][m] + 6.0 * g[i][m] -
                                       4.0 * g[i + 1][m] + g[i + 2][m]);
            if (south == -1)
                for (int m = 0; m < 5; ++m) {
                    r[nx - 2][m] -= dssp * (g[nx - 4][m] - 4.0 * g[nx - 3][m] +
                                            6.0 * g[nx - 2][m] - 4.0 * g[nx - 1][m]);
                    r[nx - 1][m] -= dssp * (g[nx - 3][m] - 4.0 * g[nx - 2][m] + 5.0 * g[nx - 1][m]);
                }
        }
}

static void add_fluxes_j(vec5 *out, const vec5 *w)
{
    const int l1 = west == -1 ? 1 : 0, l2 = east == -1 ? ny : ny + 1;
    const int jst1 = west == -1 ? 4 : 1, jend1 = east == -1 ? ny - 3 : ny;
#pragma omp parallel for schedule(static)
    for (int k = 2; k <= nz - 1; ++k) {
        for (int j = l1; j <= l2; ++j)
            for (int i = ist; i <= iend; ++i) {
                const double *g = AT(w, i, j, k);
                double *f = AT(flux, i, j, k);
                double u31 = g[2] / g[0];
                double q = 0.5 * (g[1] * g[1] + g[2] * g[2] + g[3] * g[3]) / g[0];
                f[0] = g[2];
                f[1] = g[1] * u31;
                f[2] = g[2] * u31 + c2 * (g[4] - q);
                f[3] = g[3] * u31;
                f[4] = (c1 * g[4] - c2 * q) * u31;
            }
        for (int j = jst; j <= jend; ++j)
            for (int i = ist; i <= iend; ++i)
                for (int m = 0; m < 5; ++m)
                    AT(out, i, j, k)[m] -= ty2 * (AT(flux, i, j + 1, k)[m] - AT(flux, i, j - 1, k)[m]);
        for (int j = jst; j <= l2; ++j)
            for (int i = ist; i <= iend; ++i) {
                const double *g = AT(w, i, j, k), *h = AT(w, i, j - 1, k);
                double *f = AT(flux, i, j, k);
                double tmp = 1.0 / g[0];
                double u21j = tmp * g[1], u31j = tmp * g[2], u41j = tmp * g[3], u51j = tmp * g[4];
                tmp = 1.0 / h[0];
                double u21jm1 = tmp * h[1], u31jm1 = tmp * h[2], u41jm1 = tmp * h[3],
                       u51jm1 = tmp * h[4];
                f[1] = ty3 * (u21j - u21jm1);
                f[2] = (4.0 / 3.0) * ty3 * (u31j - u31jm1);
                f[3] = ty3 * (u41j - u41jm1);
                f[4] = 0.5 * (1.0 - c1 * c5) * ty3 *
                           ((u21j * u21j + u31j * u31j + u41j * u41j) -
                            (u21jm1 * u21jm1 + u31jm1 * u31jm1 + u41jm1 * u41jm1)) +
                       (1.0 / 6.0) * ty3 * (u31j * u31j - u31jm1 * u31jm1) +
                       c1 * c5 * ty3 * (u51j - u51jm1);
            }
        for (int j = jst; j <= jend; ++j)
            for (int i = ist; i <= iend; ++i) {
                double *r = AT(out, i, j, k);
                const double *gm = AT(w, i, j - 1, k), *g = AT(w, i, j, k), *gp = AT(w, i, j + 1, k);
                const double *f = AT(flux, i, j, k), *fp = AT(flux, i, j + 1, k);
                r[0] += dyc[0] * ty1 * (gm[0] - 2.0 * g[0] + gp[0]);
                for (int m = 1; m < 5; ++m)
                    r[m] = r[m] + ty3 * c3 * c4 * (fp[m] - f[m]) + dyc[m] * ty1 * (gm[m] - 2.0 * g[m] + gp[m]);
            }
        if (west == -1)
            for (int i = ist; i <= iend; ++i)
                for (int m = 0; m < 5; ++m) {
                    AT(out, i, 2, k)[m] -= dssp * (+5.0 * AT(w, i, 2, k)[m] - 4.0 * AT(w, i, 3, k)[m] +
                                                   AT(w, i, 4, k)[m]);
                    AT(out, i, 3, k)[m] -= dssp * (-4.0 * AT(w, i, 2, k)[m] + 6.0 * AT(w, i, 3, k)[m] -
                                                   4.0 * AT(w, i, 4, k)[m] + AT(w, i, 5, k)[m]);
                }
        for (int j = jst1; j <= jend1; ++j)
            for (int i = ist; i <= iend; ++i)
                for (int m = 0; m < 5; ++m)
                    AT(out, i, j, k)[m] -=
                        dssp * (AT(w, i, j - 2, k)[m] - 4.0 * AT(w, i, j - 1, k)[m] +
                                6.0 * AT(w, i, j, k)[m] - 4.0 * AT(w, i, j + 1, k)[m] +
                                AT(w, i, j + 2, k)[m]);
        if (east == -1)
            for (int i = ist; i <= iend; ++i)
                for (int m = 0; m < 5; ++m) {
                    AT(out, i, ny - 2, k)[m] -=
                        dssp * (AT(w, i, ny - 4, k)[m] - 4.0 * AT(w, i, ny - 3, k)[m] +
                                6.0 * AT(w, i, ny - 2, k)[m] - 4.0 * AT(w, i, ny - 1, k)[m]);
                    AT(out, i, ny - 1, k)[m] -=
                        dssp * (AT(w, i, ny - 3, k)[m] - 4.0 * AT(w, i, ny - 2, k)[m] +
                                5.0 * AT(w, i, ny - 1, k)[m]);
                }
    }
}

static void add_fluxes_k(vec5 *out, const vec5 *w)
{
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int k = 1; k <= nz; ++k)
            for (int j = jst; j <= jend; ++j)
                for (int i = ist; i <= iend; ++i) {
                    const double *g = AT(w, i, j, k);
                    double *f = AT(flux, i, j, k);
                    double u41 = g[3] / g[0];
                    double q = 0.5 * (g[1] * g[1] + g[2] * g[2] + g[3] * g[3]) / g[0];
                    f[0] = g[3];
                    f[1] = g[1] * u41;
                    f[2] = g[2] * u41;
                    f[3] = g[3] * u41 + c2 * (g[4] - q);
                    f[4] = (c1 * g[4] - c2 * q) * u41;
                }
#pragma omp for schedule(static)
        for (int k = 2; k <= nz - 1; ++k)
            for (int j = jst; j <= jend; ++j)
                for (int i = ist; i <= iend; ++i)
                    for (int m = 0; m < 5; ++m)
                        AT(out, i, j, k)[m] -= tz2 * (AT(flux, i, j, k + 1)[m] - AT(flux, i, j, k - 1)[m]);
#pragma omp for schedule(static)
        for (int k = 2; k <= nz; ++k)
            for (int j = jst; j <= jend; ++j)
                for (int i = ist; i <= iend; ++i) {
                    const double *g = AT(w, i, j, k), *h = AT(w, i, j, k - 1);
                    double *f = AT(flux, i, j, k);
                    double tmp = 1.0 / g[0];
                    double u21k = tmp * g[1], u31k = tmp * g[2], u41k = tmp * g[3], u51k = tmp * g[4];
                    tmp = 1.0 / h[0];
                    double u21km1 = tmp * h[1], u31km1 = tmp * h[2], u41km1 = tmp * h[3],
                           u51km1 = tmp * h[4];
                    f[1] = tz3 * (u21k - u21km1);
                    f[2] = tz3 * (u31k - u31km1);
                    f[3] = (4.0 / 3.0) * tz3 * (u41k - u41km1);
                    f[4] = 0.5 * (1.0 - c1 * c5) * tz3 *
                               ((u21k * u21k + u31k * u31k + u41k * u41k) -
                                (u21km1 * u21km1 + u31km1 * u31km1 + u41km1 * u41km1)) +
                           (1.0 / 6.0) * tz3 * (u41k * u41k - u41km1 * u41km1) +
                           c1 * c5 * tz3 * (u51k - u51km1);
                }
#pragma omp for schedule(static)
        for (int k = 2; k <= nz - 1; ++k)
            for (int j = jst; j <= jend; ++j)
                for (int i = ist; i <= iend; ++i) {
                    double *r = AT(out, i, j, k);
                    const double *gm = AT(w, i, j, k - 1), *g = AT(w, i, j, k), *gp = AT(w, i, j, k + 1);
                    const double *f = AT(flux, i, j, k), *fp = AT(flux, i, j, k + 1);
                    r[0] += dzc[0] * tz1 * (gm[0] - 2.0 * g[0] + gp[0]);
                    for (int m = 1; m < 5; ++m)
                        r[m] = r[m] + tz3 * c3 * c4 * (fp[m] - f[m]) + dzc[m] * tz1 * (gm[m] - 2.0 * g[m] + gp[m]);
                    /* fourth-order dissipation, one-sided next to the k boundaries */
                    for (int m = 0; m < 5; ++m) {
                        double d4;
                        if (k == 2)
                            d4 = 5.0 * g[m] - 4.0 * gp[m] + AT(w, i, j, 4)[m];
                        else if (k == 3)
                            d4 = -4.0 * gm[m] + 6.0 * g[m] - 4.0 * gp[m] + AT(w, i, j, 5)[m];
                        else if (k == nz - 2)
                            d4 = AT(w, i, j, nz - 4)[m] - 4.0 * gm[m] + 6.0 * g[m] - 4.0 * gp[m];
                        else if (k == nz - 1)
                            d4 = AT(w, i, j, nz - 3)[m] - 4.0 * gm[m] + 5.0 * g[m];
                        else
                            d4 = AT(w, i, j, k - 2)[m] - 4.0 * gm[m] + 6.0 * g[m] - 4.0 * gp[m] +
                                 AT(w, i, j, k + 2)[m];
                        r[m] -= dssp * d4;
                    }
                }
    }
}

static void add_operator(vec5 *out, vec5 *w)
{
    exchange_ghosts(w, 0);
    add_fluxes_i(out, w);
    exchange_ghosts(w, 1);
    add_fluxes_j(out, w);
    add_fluxes_k(out, w);
}

/* rsd = operator(u) - frct */
static void compute_rhs(void)
{
#pragma omp parallel for schedule(static)
    for (int k = 1; k <= nz; ++k)
        for (int j = 1; j <= ny; ++j) {
            for (int i = 1; i <= nx; ++i)
                for (int m = 0; m < 5; ++m) AT(rsd, i, j, k)[m] = -AT(frct, i, j, k)[m];
#ifdef LU_ZONE_SOLVER
            for (int i = 1; i <= nx; ++i) {
                const double *w = AT(u, i, j, k), tmp = 1.0 / w[0];
                AT(rho_inv, i, j, k) = tmp;
                AT(q_kin, i, j, k) = 0.50 * (w[1] * w[1] + w[2] * w[2] + w[3] * w[3]) * tmp;
            }
#endif
        }
    add_operator(rsd, u);
#ifdef LU_ZONE_SOLVER
    /* A zone split along i: rho_i and qs also on the ghost line next to each neighbouring
     * part (NPB-MZ's rhs from L1 = 0 to L2 = nx + 1), which the Jacobians read. */
    if (north != -1 || south != -1)
        for (int k = 1; k <= nz; ++k)
            for (int j = 1; j <= ny; ++j)
                for (int side = 0; side < 2; ++side) {
                    const int i = side == 0 ? 0 : nx + 1;
                    if ((side == 0 ? north : south) == -1) continue;
                    const double *w = AT(u, i, j, k), tmp = 1.0 / w[0];
                    AT(rho_inv, i, j, k) = tmp;
                    AT(q_kin, i, j, k) = 0.50 * (w[1] * w[1] + w[2] * w[2] + w[3] * w[3]) * tmp;
                }
#endif
}

/* frct = operator(exact solution); rsd holds the exact solution meanwhile (as erhs.f). */
static void compute_forcing(void)
{
    for (int k = 1; k <= nz; ++k)
        for (int j = 1; j <= ny; ++j)
            for (int i = 1; i <= nx; ++i) {
                exact(ipt + i, jpt + j, k, AT(rsd, i, j, k));
                memset(AT(frct, i, j, k), 0, sizeof(vec5));
            }
    add_operator(frct, rsd);
}

/* --- the flux Jacobians (jacld, jacu) --------------------------------------------------- */

/* The Jacobian blocks are stored by columns, as NPB's a(m, n, i): blk[n][m] holds row m,
 * column n (the products with a vector then run down contiguous columns, which the compiler
 * vectorises across the five equations). JB names an entry with NPB's 1-based (row, column). */
#define JB(blk, m, n) ((blk)[(n) - 1][(m) - 1])

/* The block coupling a point to its neighbour w along one axis, each of the 25 entries
 * written out as in NPB's jacld/jacu (same expressions, same operation count). q is the
 * momentum component along the axis (2: i, 3: j, 4: k, NPB's 1-based numbering), p and o
 * the other two in ascending order; r = -dt * t2 towards the lower neighbour (jacld),
 * +dt * t2 towards the upper one (jacu); e = dt * t1; dd the axis' dissipation
 * coefficients. Called with constants for q, p and o, the entries fold to straight code. */
static inline __attribute__((always_inline)) void neighbour_block(
    double (*restrict blk)[5], const double *restrict w, const double tmp1, const double qs,
    const int q, const int p, const int o, const double r, const double e,
    const double *restrict dd)
{
    const double r43 = 4.0 / 3.0, c34 = c3 * c4, c1345 = c1 * c3 * c4 * c5;
    const double u5 = w[4], uq = w[q - 1], up = w[p - 1], uo = w[o - 1];
    const double u2 = w[1], u3 = w[2], u4 = w[3];
    const double tmp2 = tmp1 * tmp1, tmp3 = tmp1 * tmp2;
    /* the viscous weight of u2..u4 squared: r43 on the axis' own component */
    const double w2 = (q == 2 ? r43 * c34 : c34) - c1345, w3 = (q == 3 ? r43 * c34 : c34) - c1345,
                 w4 = (q == 4 ? r43 * c34 : c34) - c1345;
#ifndef LU_ZONE_SOLVER
    /* (u2^2 + u3^2 + u4^2 + 2 uq^2) in row 5, column q: NPB writes 3.0 * uq * uq in place */
    const double s2 = q == 2 ? 3.0 * u2 * u2 : u2 * u2, s3 = q == 3 ? 3.0 * u3 * u3 : u3 * u3,
                 s4 = q == 4 ? 3.0 * u4 * u4 : u4 * u4;
    (void)qs;
#endif

    JB(blk, 1, 1) = -e * dd[0];
    JB(blk, 1, p) = 0.0;
    JB(blk, 1, o) = 0.0;
    JB(blk, 1, q) = r;
    JB(blk, 1, 5) = 0.0;

#ifdef LU_ZONE_SOLVER /* NPB-MZ: the kinetic term from qs */
    JB(blk, q, 1) = r * (-(uq * tmp1) * (uq * tmp1) + c2 * qs * tmp1) - e * (-r43 * c34 * tmp2 * uq);
#else
    JB(blk, q, 1) = r * (-(uq * tmp1) * (uq * tmp1) +
                         0.50 * c2 * ((u2 * u2 + u3 * u3 + u4 * u4) * tmp2)) -
                    e * (-r43 * c34 * tmp2 * uq);
#endif
    JB(blk, q, p) = r * (-c2 * (up * tmp1));
    JB(blk, q, o) = r * (-c2 * (uo * tmp1));
    JB(blk, q, q) = r * ((2.0 - c2) * (uq * tmp1)) - e * (r43 * c34 * tmp1) - e * dd[q - 1];
    JB(blk, q, 5) = r * c2;

    JB(blk, p, 1) = r * (-(up * uq) * tmp2) - e * (-c34 * tmp2 * up);
    JB(blk, p, p) = r * (uq * tmp1) - e * (c34 * tmp1) - e * dd[p - 1];
    JB(blk, p, o) = 0.0;
    JB(blk, p, q) = r * (up * tmp1);
    JB(blk, p, 5) = 0.0;

    JB(blk, o, 1) = r * (-(uo * uq) * tmp2) - e * (-c34 * tmp2 * uo);
    JB(blk, o, p) = 0.0;
    JB(blk, o, o) = r * (uq * tmp1) - e * (c34 * tmp1) - e * dd[o - 1];
    JB(blk, o, q) = r * (uo * tmp1);
    JB(blk, o, 5) = 0.0;

#ifdef LU_ZONE_SOLVER
    JB(blk, 5, 1) = r * ((c2 * 2.0 * qs - c1 * u5) * uq * tmp2) -
#else
    JB(blk, 5, 1) = r * ((c2 * (u2 * u2 + u3 * u3 + u4 * u4) * tmp2 - c1 * (u5 * tmp1)) *
                         (uq * tmp1)) -
#endif
                    e * (-w2 * tmp3 * (u2 * u2) - w3 * tmp3 * (u3 * u3) - w4 * tmp3 * (u4 * u4) -
                         c1345 * tmp2 * u5);
    JB(blk, 5, p) = r * (-c2 * (up * uq) * tmp2) - e * (c34 - c1345) * tmp2 * up;
    JB(blk, 5, o) = r * (-c2 * (uo * uq) * tmp2) - e * (c34 - c1345) * tmp2 * uo;
#ifdef LU_ZONE_SOLVER
    JB(blk, 5, q) = r * (c1 * (u5 * tmp1) - c2 * (qs * tmp1 + uq * uq * tmp2)) -
                    e * (r43 * c34 - c1345) * tmp2 * uq;
#else
    JB(blk, 5, q) = r * (c1 * (u5 * tmp1) - 0.50 * c2 * ((s2 + s3 + s4) * tmp2)) -
                    e * (r43 * c34 - c1345) * tmp2 * uq;
#endif
    JB(blk, 5, 5) = r * (c1 * (uq * tmp1)) - e * c1345 * tmp1 - e * dd[4];
}

/* The constants of the Jacobians, as locals of the line loops (stores to the blocks could
 * otherwise alias the globals and force reloads). */
struct jacobian_constants {
    double dt, tx1, tx2, ty1, ty2, tz1, tz2;
    double dx[5], dy[5], dz[5];
};

static struct jacobian_constants jacobian_constants(void)
{
    struct jacobian_constants jc = {dt, tx1, tx2, ty1, ty2, tz1, tz2, {0}, {0}, {0}};
    memcpy(jc.dx, dxc, sizeof dxc);
    memcpy(jc.dy, dyc, sizeof dyc);
    memcpy(jc.dz, dzc, sizeof dzc);
    return jc;
}

/* The diagonal block (the same in jacld and jacu), entry by entry as NPB writes it. */
static inline __attribute__((always_inline)) void diagonal_block(
    double (*restrict d)[5], const double *restrict w, const double tmp1,
    const struct jacobian_constants *jc)
{
    const double r43 = 4.0 / 3.0, c34 = c3 * c4, c1345 = c1 * c3 * c4 * c5;
    const double u2 = w[1], u3 = w[2], u4 = w[3], u5 = w[4];
    const double tmp2 = tmp1 * tmp1, tmp3 = tmp1 * tmp2;
    const double x1 = jc->tx1, y1 = jc->ty1, z1 = jc->tz1, dt2 = jc->dt * 2.0;
    const double *dx = jc->dx, *dy = jc->dy, *dz = jc->dz;

#ifdef LU_ZONE_SOLVER
    /* NPB-MZ's jacld/jacu factor the three axes' weights out of each entry */
    const double a = r43 * c34 - c1345, b = c34 - c1345;
    JB(d, 1, 1) = 1.0 + dt2 * (x1 * dx[0] + y1 * dy[0] + z1 * dz[0]);
    JB(d, 1, 2) = 0.0;
    JB(d, 1, 3) = 0.0;
    JB(d, 1, 4) = 0.0;
    JB(d, 1, 5) = 0.0;

    JB(d, 2, 1) = -dt2 * (x1 * r43 + y1 + z1) * c34 * tmp2 * u2;
    JB(d, 2, 2) = 1.0 + dt2 * c34 * tmp1 * (x1 * r43 + y1 + z1) +
                  dt2 * (x1 * dx[1] + y1 * dy[1] + z1 * dz[1]);
    JB(d, 2, 3) = 0.0;
    JB(d, 2, 4) = 0.0;
    JB(d, 2, 5) = 0.0;

    JB(d, 3, 1) = -dt2 * (x1 + y1 * r43 + z1) * c34 * tmp2 * u3;
    JB(d, 3, 2) = 0.0;
    JB(d, 3, 3) = 1.0 + dt2 * c34 * tmp1 * (x1 + y1 * r43 + z1) +
                  dt2 * (x1 * dx[2] + y1 * dy[2] + z1 * dz[2]);
    JB(d, 3, 4) = 0.0;
    JB(d, 3, 5) = 0.0;

    JB(d, 4, 1) = -dt2 * (x1 + y1 + z1 * r43) * c34 * tmp2 * u4;
    JB(d, 4, 2) = 0.0;
    JB(d, 4, 3) = 0.0;
    JB(d, 4, 4) = 1.0 + dt2 * c34 * tmp1 * (x1 + y1 + z1 * r43) +
                  dt2 * (x1 * dx[3] + y1 * dy[3] + z1 * dz[3]);
    JB(d, 4, 5) = 0.0;

    JB(d, 5, 1) = -dt2 * (((x1 * a + y1 * b + z1 * b) * (u2 * u2) +
                           (x1 * b + y1 * a + z1 * b) * (u3 * u3) +
                           (x1 * b + y1 * b + z1 * a) * (u4 * u4)) *
                              tmp3 +
                          (x1 + y1 + z1) * c1345 * tmp2 * u5);
    JB(d, 5, 2) = dt2 * tmp2 * u2 * (x1 * a + y1 * b + z1 * b);
    JB(d, 5, 3) = dt2 * tmp2 * u3 * (x1 * b + y1 * a + z1 * b);
    JB(d, 5, 4) = dt2 * tmp2 * u4 * (x1 * b + y1 * b + z1 * a);
    JB(d, 5, 5) = 1.0 + dt2 * (x1 + y1 + z1) * c1345 * tmp1 +
                  dt2 * (x1 * dx[4] + y1 * dy[4] + z1 * dz[4]);
#else
    JB(d, 1, 1) = 1.0 + dt2 * (x1 * dx[0] + y1 * dy[0] + z1 * dz[0]);
    JB(d, 1, 2) = 0.0;
    JB(d, 1, 3) = 0.0;
    JB(d, 1, 4) = 0.0;
    JB(d, 1, 5) = 0.0;

    JB(d, 2, 1) = dt2 * (x1 * (-r43 * c34 * tmp2 * u2) + y1 * (-c34 * tmp2 * u2) +
                         z1 * (-c34 * tmp2 * u2));
    JB(d, 2, 2) = 1.0 + dt2 * (x1 * r43 * c34 * tmp1 + y1 * c34 * tmp1 + z1 * c34 * tmp1) +
                  dt2 * (x1 * dx[1] + y1 * dy[1] + z1 * dz[1]);
    JB(d, 2, 3) = 0.0;
    JB(d, 2, 4) = 0.0;
    JB(d, 2, 5) = 0.0;

    JB(d, 3, 1) = dt2 * (x1 * (-c34 * tmp2 * u3) + y1 * (-r43 * c34 * tmp2 * u3) +
                         z1 * (-c34 * tmp2 * u3));
    JB(d, 3, 2) = 0.0;
    JB(d, 3, 3) = 1.0 + dt2 * (x1 * c34 * tmp1 + y1 * r43 * c34 * tmp1 + z1 * c34 * tmp1) +
                  dt2 * (x1 * dx[2] + y1 * dy[2] + z1 * dz[2]);
    JB(d, 3, 4) = 0.0;
    JB(d, 3, 5) = 0.0;

    JB(d, 4, 1) = dt2 * (x1 * (-c34 * tmp2 * u4) + y1 * (-c34 * tmp2 * u4) +
                         z1 * (-r43 * c34 * tmp2 * u4));
    JB(d, 4, 2) = 0.0;
    JB(d, 4, 3) = 0.0;
    JB(d, 4, 4) = 1.0 + dt2 * (x1 * c34 * tmp1 + y1 * c34 * tmp1 + z1 * r43 * c34 * tmp1) +
                  dt2 * (x1 * dx[3] + y1 * dy[3] + z1 * dz[3]);
    JB(d, 4, 5) = 0.0;

    const double a = r43 * c34 - c1345, b = c34 - c1345;
    JB(d, 5, 1) = dt2 * (x1 * (-a * tmp3 * (u2 * u2) - b * tmp3 * (u3 * u3) -
                               b * tmp3 * (u4 * u4) - c1345 * tmp2 * u5) +
                         y1 * (-b * tmp3 * (u2 * u2) - a * tmp3 * (u3 * u3) -
                               b * tmp3 * (u4 * u4) - c1345 * tmp2 * u5) +
                         z1 * (-b * tmp3 * (u2 * u2) - b * tmp3 * (u3 * u3) -
                               a * tmp3 * (u4 * u4) - c1345 * tmp2 * u5));
    JB(d, 5, 2) = dt2 * (x1 * a * tmp2 * u2 + y1 * b * tmp2 * u2 + z1 * b * tmp2 * u2);
    JB(d, 5, 3) = dt2 * (x1 * b * tmp2 * u3 + y1 * a * tmp2 * u3 + z1 * b * tmp2 * u3);
    JB(d, 5, 4) = dt2 * (x1 * b * tmp2 * u4 + y1 * b * tmp2 * u4 + z1 * a * tmp2 * u4);
    JB(d, 5, 5) = 1.0 + dt2 * (x1 * c1345 * tmp1 + y1 * c1345 * tmp1 + z1 * c1345 * tmp1) +
                  dt2 * (x1 * dx[4] + y1 * dy[4] + z1 * dz[4]);
#endif
}

/* jacld: for the line (j, k), a = towards k-1, b = j-1, c = i-1. */
#ifdef LU_ZONE_SOLVER /* NPB-MZ reads 1 / density and qs filled by the rhs */
#define INV_DENSITY(i, j, k) AT(rho_inv, i, j, k)
#define KINETIC(i, j, k) AT(q_kin, i, j, k)
#else /* NPB-MPI divides in place */
#define INV_DENSITY(i, j, k) (1.0 / AT(u, i, j, k)[0])
#define KINETIC(i, j, k) 0.0
#endif

static void jacobians_lower(struct line_work *lw, int j, int k)
{
    const struct jacobian_constants jc = jacobian_constants();
    const double rx = -jc.dt * jc.tx2, ry = -jc.dt * jc.ty2, rz = -jc.dt * jc.tz2;
    const double ex = jc.dt * jc.tx1, ey = jc.dt * jc.ty1, ez = jc.dt * jc.tz1;
    const int i0 = ist, i1 = iend;
    for (int i = i0; i <= i1; ++i) {
        diagonal_block(lw->d[i], AT(u, i, j, k), INV_DENSITY(i, j, k), &jc);
        neighbour_block(lw->a[i], AT(u, i, j, k - 1), INV_DENSITY(i, j, k - 1),
                        KINETIC(i, j, k - 1), 4, 2, 3, rz, ez, jc.dz);
        neighbour_block(lw->b[i], AT(u, i, j - 1, k), INV_DENSITY(i, j - 1, k),
                        KINETIC(i, j - 1, k), 3, 2, 4, ry, ey, jc.dy);
        neighbour_block(lw->c[i], AT(u, i - 1, j, k), INV_DENSITY(i - 1, j, k),
                        KINETIC(i - 1, j, k), 2, 3, 4, rx, ex, jc.dx);
    }
}

/* jacu: a = towards i+1, b = j+1, c = k+1. */
static void jacobians_upper(struct line_work *lw, int j, int k)
{
    const struct jacobian_constants jc = jacobian_constants();
    const double rx = jc.dt * jc.tx2, ry = jc.dt * jc.ty2, rz = jc.dt * jc.tz2;
    const double ex = jc.dt * jc.tx1, ey = jc.dt * jc.ty1, ez = jc.dt * jc.tz1;
    const int i0 = ist, i1 = iend;
    for (int i = i0; i <= i1; ++i) {
        diagonal_block(lw->d[i], AT(u, i, j, k), INV_DENSITY(i, j, k), &jc);
        neighbour_block(lw->a[i], AT(u, i + 1, j, k), INV_DENSITY(i + 1, j, k),
                        KINETIC(i + 1, j, k), 2, 3, 4, rx, ex, jc.dx);
        neighbour_block(lw->b[i], AT(u, i, j + 1, k), INV_DENSITY(i, j + 1, k),
                        KINETIC(i, j + 1, k), 3, 2, 4, ry, ey, jc.dy);
        neighbour_block(lw->c[i], AT(u, i, j, k + 1), INV_DENSITY(i, j, k + 1),
                        KINETIC(i, j, k + 1), 4, 2, 3, rz, ez, jc.dz);
    }
}

/* Solves t x = x in place by Gaussian elimination without pivoting (t, stored by columns,
 * is overwritten). */
static inline __attribute__((always_inline)) void solve_block(double (*restrict t)[5],
                                                              double *restrict x)
{
    for (int p = 0; p < 4; ++p) {
        double inv = 1.0 / t[p][p];
        for (int r = p + 1; r < 5; ++r) {
            double f = inv * t[p][r];
            for (int c = p + 1; c < 5; ++c) t[c][r] -= f * t[c][p];
            x[r] -= x[p] * f;
        }
    }
    for (int r = 4; r >= 0; --r) {
        for (int c = r + 1; c < 5; ++c) x[r] -= t[c][r] * x[c];
        x[r] /= t[r][r];
    }
}

/* blts: the lower-triangular update of line (j, k), i ascending. Each point works on
 * locals (its neighbours' values are read once, the block solve runs in registers). */
static void lower_line(struct line_work *lw, int j, int k)
{
    vec5 *restrict v = &AT(rsd, 0, j, k);
    const vec5 *restrict vz = &AT(rsd, 0, j, k - 1), *restrict vy = &AT(rsd, 0, j - 1, k);
    const double om = omega;
    const int i0 = ist, i1 = iend;
    for (int i = i0; i <= i1; ++i) {
        const double z[5] = {vz[i][0], vz[i][1], vz[i][2], vz[i][3], vz[i][4]};
        const double(*a)[5] = lw->a[i];
        for (int m = 0; m < 5; ++m)
            v[i][m] -= om * (a[0][m] * z[0] + a[1][m] * z[1] + a[2][m] * z[2] + a[3][m] * z[3] +
                             a[4][m] * z[4]);
    }
    double x[5] = {v[i0 - 1][0], v[i0 - 1][1], v[i0 - 1][2], v[i0 - 1][3], v[i0 - 1][4]};
    for (int i = i0; i <= i1; ++i) {
        const double y[5] = {vy[i][0], vy[i][1], vy[i][2], vy[i][3], vy[i][4]};
        const double w[5] = {x[0], x[1], x[2], x[3], x[4]}; /* the point i - 1, solved */
        const double(*b)[5] = lw->b[i], (*c)[5] = lw->c[i];
        for (int m = 0; m < 5; ++m)
            x[m] = v[i][m] - om * (b[0][m] * y[0] + c[0][m] * w[0] + b[1][m] * y[1] +
                                   c[1][m] * w[1] + b[2][m] * y[2] + c[2][m] * w[2] +
                                   b[3][m] * y[3] + c[3][m] * w[3] + b[4][m] * y[4] +
                                   c[4][m] * w[4]);
        solve_block(lw->d[i], x);
        for (int m = 0; m < 5; ++m) v[i][m] = x[m];
    }
}

/* buts: the upper-triangular update of line (j, k), i descending. */
static void upper_line(struct line_work *lw, int j, int k)
{
    vec5 *restrict v = &AT(rsd, 0, j, k), *restrict tv = lw->tv;
    const vec5 *restrict vz = &AT(rsd, 0, j, k + 1), *restrict vy = &AT(rsd, 0, j + 1, k);
    const double om = omega;
    const int i0 = ist, i1 = iend;
    for (int i = i1; i >= i0; --i) {
        const double z[5] = {vz[i][0], vz[i][1], vz[i][2], vz[i][3], vz[i][4]};
        const double(*c)[5] = lw->c[i];
        for (int m = 0; m < 5; ++m)
            tv[i][m] = om * (c[0][m] * z[0] + c[1][m] * z[1] + c[2][m] * z[2] + c[3][m] * z[3] +
                             c[4][m] * z[4]);
    }
    double w[5] = {v[i1 + 1][0], v[i1 + 1][1], v[i1 + 1][2], v[i1 + 1][3], v[i1 + 1][4]};
    for (int i = i1; i >= i0; --i) {
        const double y[5] = {vy[i][0], vy[i][1], vy[i][2], vy[i][3], vy[i][4]};
        double x[5];
        const double(*b)[5] = lw->b[i], (*a)[5] = lw->a[i];
        for (int m = 0; m < 5; ++m)
            x[m] = tv[i][m] + om * (b[0][m] * y[0] + a[0][m] * w[0] + b[1][m] * y[1] +
                                    a[1][m] * w[1] + b[2][m] * y[2] + a[2][m] * w[2] +
                                    b[3][m] * y[3] + a[3][m] * w[3] + b[4][m] * y[4] +
                                    a[4][m] * w[4]);
        solve_block(lw->d[i], x);
        for (int m = 0; m < 5; ++m) {
            v[i][m] -= x[m];
            w[m] = v[i][m]; /* the point i + 1 of the next one */
        }
    }
}

/* --- the pipelined sweeps ---------------------------------------------------------------- */

static int thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int team_size(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

static void wait_for_predecessor(int me, long planes)
{
    while (__atomic_load_n(&planes_done[me - 1][0], __ATOMIC_ACQUIRE) < planes) {
    }
}

/* One sweep, called by every thread of a team: `upper` selects buts/jacu downwards. */
static void sweep(int upper)
{
    const int me = thread_id(), nth = team_size();
    const int lines = jend - jst + 1, active = nth < lines ? nth : lines;
#pragma omp single
    for (int t = 0; t < nth; ++t) __atomic_store_n(&planes_done[t][0], 0, __ATOMIC_RELAXED);
    if (me >= active) return;
    /* lower: thread 0 owns the first block of lines; upper: the last (it starts the wave) */
    const int block = upper ? active - 1 - me : me;
    const int j0 = jst + block * lines / active, j1 = jst + (block + 1) * lines / active - 1;
    struct line_work *lw = &work[me];
    long plane = 0;
    for (int s = 2; s <= nz - 1; ++s, ++plane) {
        const int k = upper ? nz + 1 - s : s;
        if (me == 0) {
            if (upper) receive_upper(k);
            else receive_lower(k);
        } else {
            wait_for_predecessor(me, plane + 1);
        }
        if (upper)
            for (int j = j1; j >= j0; --j) {
                jacobians_upper(lw, j, k);
                upper_line(lw, j, k);
            }
        else
            for (int j = j0; j <= j1; ++j) {
                jacobians_lower(lw, j, k);
                lower_line(lw, j, k);
            }
        if (me == active - 1) {
            if (upper) send_upper(k);
            else send_lower(k);
        }
        __atomic_store_n(&planes_done[me][0], plane + 1, __ATOMIC_RELEASE);
    }
}

/* --- norms, error, surface integral ------------------------------------------------------ */

static void rms_norm(const vec5 *v, double *norm)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s0, s1, s2, s3, s4)
    for (int k = 2; k <= nz0 - 1; ++k)
        for (int j = jst; j <= jend; ++j)
            for (int i = ist; i <= iend; ++i) {
                const double *p = AT(v, i, j, k);
                s0 += p[0] * p[0];
                s1 += p[1] * p[1];
                s2 += p[2] * p[2];
                s3 += p[3] * p[3];
                s4 += p[4] * p[4];
            }
    double local[5] = {s0, s1, s2, s3, s4};
    NPB_CHECK_MPI(MPI_Allreduce(local, norm, 5, MPI_DOUBLE, MPI_SUM, grid_comm));
    for (int m = 0; m < 5; ++m) norm[m] = sqrt(norm[m] / ((double)(nx0 - 2) * (ny0 - 2) * (nz0 - 2)));
}

static void error_norm(double *norm)
{
    double local[5] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (int k = 2; k <= nz - 1; ++k)
        for (int j = jst; j <= jend; ++j)
            for (int i = ist; i <= iend; ++i) {
                double e[5];
                exact(ipt + i, jpt + j, k, e);
                for (int m = 0; m < 5; ++m) {
                    double d = e[m] - AT(u, i, j, k)[m];
                    local[m] += d * d;
                }
            }
    NPB_CHECK_MPI(MPI_Allreduce(local, norm, 5, MPI_DOUBLE, MPI_SUM, grid_comm));
    for (int m = 0; m < 5; ++m) norm[m] = sqrt(norm[m] / ((double)(nx0 - 2) * (ny0 - 2) * (nz0 - 2)));
}

static double pressure(const double *w)
{
    return c2 * (w[4] - 0.5 * (w[1] * w[1] + w[2] * w[2] + w[3] * w[3]) / w[0]);
}

/* The trapezoidal sum over the cells [a0, a1] x [b0, b1] of two face arrays (ld values a
 * row), over all ranks. */
static double cell_sum(const double *phi1, const double *phi2, size_t ld, int a0, int a1, int b0,
                       int b1)
{
    double local = 0.0, total;
    for (int b = b0; b <= b1; ++b)
        for (int a = a0; a <= a1; ++a) {
            size_t p = (size_t)b * ld + (size_t)a, q = p + ld;
            local += phi1[p] + phi1[p + 1] + phi1[q] + phi1[q + 1] + phi2[p] + phi2[p + 1] +
                     phi2[q] + phi2[q + 1];
        }
    NPB_CHECK_MPI(MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, grid_comm));
    return total;
}

/* exchange_5/6: the neighbour `from`'s first face values phi(1, 1..nz) become this rank's
 * phi(n + 1, 1..nz), then this rank's go to `to`. */
static void exchange_face_line(double *phi, size_t ld, int n, int receive_it, int from,
                               int send_it, int to, int tag)
{
    double *buf = npb_alloc((size_t)nz * sizeof(double), "face line");
    if (receive_it) {
        NPB_CHECK_MPI(
            MPI_Recv(buf, nz, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int k = 1; k <= nz; ++k) phi[(size_t)k * ld + (size_t)n + 1] = buf[k - 1];
    }
    if (send_it) {
        for (int k = 1; k <= nz; ++k) buf[k - 1] = phi[(size_t)k * ld + 1];
        NPB_CHECK_MPI(MPI_Send(buf, nz, MPI_DOUBLE, to, tag, MPI_COMM_WORLD));
    }
    free(buf);
}

/* pintgr: the surface integral of the pressure over three pairs of faces of the box
 * [ii1, ii2] x [ji1, ji2] x [ki1, ki2], trapezoidal in each cell. */
static double surface_integral(void)
{
    const int dim = (nx > ny ? nx : ny) > nz ? (nx > ny ? nx : ny) : nz;
    const size_t ld = (size_t)dim + 2;
    double *phi1 = npb_alloc(ld * ld * sizeof(double), "phi1");
    double *phi2 = npb_alloc(ld * ld * sizeof(double), "phi2");
#define PHI(a, x, y) (a)[(size_t)(y) * ld + (size_t)(x)]
    int ibeg = nx + 1, ifin = 0, jbeg = ny + 1, jfin = 0;
    const int ig1 = ipt + 1, ig2 = ipt + nx, jg1 = jpt + 1, jg2 = jpt + ny;
    if (ig1 >= ii1 && ig2 < ii2 + nx) ibeg = 1;
    if (ig1 > ii1 - nx && ig2 <= ii2) ifin = nx;
    if (ii1 >= ig1 && ii1 <= ig2) ibeg = ii1 - ipt;
    if (ii2 >= ig1 && ii2 <= ig2) ifin = ii2 - ipt;
    if (jg1 >= ji1 && jg2 < ji2 + ny) jbeg = 1;
    if (jg1 > ji1 - ny && jg2 <= ji2) jfin = ny;
    if (ji1 >= jg1 && ji1 <= jg2) jbeg = ji1 - jpt;
    if (ji2 >= jg1 && ji2 <= jg2) jfin = ji2 - jpt;
    int ifin1 = ifin, jfin1 = jfin;
    if (ipt + ifin1 == ii2) ifin1 = ifin - 1;
    if (jpt + jfin1 == ji2) jfin1 = jfin - 1;

    /* the k faces: phi(i, j) */
    memset(phi1, 0, ld * ld * sizeof(double));
    memset(phi2, 0, ld * ld * sizeof(double));
    for (int j = jbeg; j <= jfin; ++j)
        for (int i = ibeg; i <= ifin; ++i) {
            PHI(phi1, i, j) = pressure(AT(u, i, j, ki1));
            PHI(phi2, i, j) = pressure(AT(u, i, j, ki2));
        }
    /* exchange_4: the east neighbour's first row j = 1 (i = 1..nx), then the south
     * neighbour's first column i = 1 (j = 0..ny+1, so the corner comes along) */
    {
        double *buf = npb_alloc(2 * (ld + 2) * sizeof(double), "pintgr buffer");
        if (jfin1 == ny) {
            NPB_CHECK_MPI(MPI_Recv(buf, 2 * nx, MPI_DOUBLE, east, TAG_FACE + 1, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            for (int i = 1; i <= nx; ++i) {
                PHI(phi1, i, ny + 1) = buf[i - 1];
                PHI(phi2, i, ny + 1) = buf[nx + i - 1];
            }
        }
        if (jbeg == 1) {
            for (int i = 1; i <= nx; ++i) {
                buf[i - 1] = PHI(phi1, i, 1);
                buf[nx + i - 1] = PHI(phi2, i, 1);
            }
            NPB_CHECK_MPI(MPI_Send(buf, 2 * nx, MPI_DOUBLE, west, TAG_FACE + 1, MPI_COMM_WORLD));
        }
        const int n2 = ny + 2;
        if (ifin1 == nx) {
            NPB_CHECK_MPI(MPI_Recv(buf, 2 * n2, MPI_DOUBLE, south, TAG_FACE + 2, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            for (int j = 0; j <= ny + 1; ++j) {
                PHI(phi1, nx + 1, j) = buf[j];
                PHI(phi2, nx + 1, j) = buf[j + n2];
            }
        }
        if (ibeg == 1) {
            for (int j = 0; j <= ny + 1; ++j) {
                buf[j] = PHI(phi1, 1, j);
                buf[j + n2] = PHI(phi2, 1, j);
            }
            NPB_CHECK_MPI(MPI_Send(buf, 2 * n2, MPI_DOUBLE, north, TAG_FACE + 2, MPI_COMM_WORLD));
        }
        free(buf);
    }
    const double frc1 = dxi * deta * cell_sum(phi1, phi2, ld, ibeg, ifin1, jbeg, jfin1);

    /* the j faces: phi(i, k); exchange_5 along i */
    memset(phi1, 0, ld * ld * sizeof(double));
    memset(phi2, 0, ld * ld * sizeof(double));
    const int on_j1 = jpt + jbeg == ji1, on_j2 = jpt + jfin == ji2;
    for (int k = ki1; k <= ki2; ++k)
        for (int i = ibeg; i <= ifin; ++i) {
            if (on_j1) PHI(phi1, i, k) = pressure(AT(u, i, jbeg, k));
            if (on_j2) PHI(phi2, i, k) = pressure(AT(u, i, jfin, k));
        }
    if (on_j1) exchange_face_line(phi1, ld, nx, ifin1 == nx, south, ibeg == 1, north, TAG_FACE + 3);
    if (on_j2) exchange_face_line(phi2, ld, nx, ifin1 == nx, south, ibeg == 1, north, TAG_FACE + 3);
    const double frc2 = dxi * dzeta * cell_sum(phi1, phi2, ld, ibeg, ifin1, ki1, ki2 - 1);

    /* the i faces: phi(j, k); exchange_6 along j */
    memset(phi1, 0, ld * ld * sizeof(double));
    memset(phi2, 0, ld * ld * sizeof(double));
    const int on_i1 = ipt + ibeg == ii1, on_i2 = ipt + ifin == ii2;
    for (int k = ki1; k <= ki2; ++k)
        for (int j = jbeg; j <= jfin; ++j) {
            if (on_i1) PHI(phi1, j, k) = pressure(AT(u, ibeg, j, k));
            if (on_i2) PHI(phi2, j, k) = pressure(AT(u, ifin, j, k));
        }
    if (on_i1) exchange_face_line(phi1, ld, ny, jfin1 == ny, east, jbeg == 1, west, TAG_FACE + 4);
    if (on_i2) exchange_face_line(phi2, ld, ny, jfin1 == ny, east, jbeg == 1, west, TAG_FACE + 4);
    const double frc3 = deta * dzeta * cell_sum(phi1, phi2, ld, jbeg, jfin1, ki1, ki2 - 1);
#undef PHI
    free(phi1);
    free(phi2);
    return 0.25 * (frc1 + frc2 + frc3);
}

/* --- SSOR -------------------------------------------------------------------------------- */

/* One SSOR iteration up to the new u (ssor.f before its rhs): rsd scaled by dt, the lower
 * and upper sweeps, u += update * rsd. */
static void ssor_update(double update)
{
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int k = 2; k <= nz - 1; ++k)
            for (int j = jst; j <= jend; ++j)
                for (int i = ist; i <= iend; ++i)
                    for (int m = 0; m < 5; ++m) AT(rsd, i, j, k)[m] *= dt;
        sweep(0);
#pragma omp barrier
        sweep(1);
#pragma omp barrier
#pragma omp for schedule(static)
        for (int k = 2; k <= nz - 1; ++k)
            for (int j = jst; j <= jend; ++j)
                for (int i = ist; i <= iend; ++i)
                    for (int m = 0; m < 5; ++m) AT(u, i, j, k)[m] += update * AT(rsd, i, j, k)[m];
    }
}

#ifndef LU_ZONE_SOLVER
/* ssor(niter): returns the timed seconds (max over ranks); rsdnm gets the final residual. */
static double ssor(int niter, int itmax, double *rsdnm)
{
    const double tolrsd = (double)1.0e-8f; /* NPB's single-precision literal 1.0e-08 */
    const double update = 1.0 / (omega * (2.0 - omega));
    double delunm[5];
    compute_rhs();
    rms_norm(rsd, rsdnm);
    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (int step = 1; step <= niter; ++step) {
        ssor_update(update);
        if (step % itmax == 0) rms_norm(rsd, delunm);
        compute_rhs();
        if (step % itmax == 0 || step == itmax) rms_norm(rsd, rsdnm);
        int converged = 1;
        for (int m = 0; m < 5; ++m) converged &= rsdnm[m] < tolrsd;
        if (converged) break;
    }
    double t_local = MPI_Wtime() - t0, t;
    NPB_CHECK_MPI(MPI_Allreduce(&t_local, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return t;
}

#endif

#ifndef LU_ZONE_SOLVER
/* u, rsd, frct and flux over this rank's points (ldx x ldy x nz). */
static void allocate_fields(void)
{
    size_t points = ldx * ldy * (size_t)nz;
    u = NPB_FOLDABLE_ALLOC(points * sizeof(vec5), "u");
    rsd = NPB_FOLDABLE_ALLOC(points * sizeof(vec5), "rsd");
    frct = NPB_FOLDABLE_ALLOC(points * sizeof(vec5), "frct");
    flux = NPB_FOLDABLE_ALLOC(points * sizeof(vec5), "flux");
    memset(u, 0, points * sizeof(vec5));
    memset(rsd, 0, points * sizeof(vec5));
    memset(frct, 0, points * sizeof(vec5));
    memset(flux, 0, points * sizeof(vec5));
}
#endif

/* The ghost exchange buffers and every thread's line of Jacobian blocks (nx, ny, nz: the
 * largest grid the buffers serve). */
static void allocate_work(void)
{
    size_t ghost = 10 * (size_t)(nx > ny ? nx : ny) * (size_t)nz;
    ghost_send = npb_alloc(ghost * sizeof(double), "ghost send buffer");
    ghost_recv = npb_alloc(ghost * sizeof(double), "ghost receive buffer");
    size_t line = (size_t)nx + 2;
    for (int t = 0; t < nthreads; ++t) {
        work[t].a = npb_alloc(line * sizeof(block5), "jacobian a");
        work[t].b = npb_alloc(line * sizeof(block5), "jacobian b");
        work[t].c = npb_alloc(line * sizeof(block5), "jacobian c");
        work[t].d = npb_alloc(line * sizeof(block5), "jacobian d");
        work[t].tv = npb_alloc(line * sizeof(vec5), "tv");
    }
}

static void release_work(void)
{
    free(ghost_send);
    free(ghost_recv);
    for (int t = 0; t < nthreads; ++t) {
        free(work[t].a);
        free(work[t].b);
        free(work[t].c);
        free(work[t].d);
        free(work[t].tv);
    }
}

#ifndef LU_ZONE_SOLVER
static void release(void)
{
    NPB_FOLDABLE_FREE(u);
    NPB_FOLDABLE_FREE(rsd);
    NPB_FOLDABLE_FREE(frct);
    NPB_FOLDABLE_FREE(flux);
    release_work();
}

int main(int argc, char **argv)
{
    int provided;
    NPB_CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &my_rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    struct npb_options opt;
    npb_parse_args(argc, argv, "lu", &opt);
    const struct lu_class *cls = NULL;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; ++i)
        if (classes[i].name == opt.class_name) cls = &classes[i];
    if (cls == NULL) npb_fail("unknown class %c", opt.class_name);
    nthreads = npb_threads();
    if (nthreads > MAX_THREADS)
        npb_fail("lu: %d OpenMP threads is more than this program's limit of %d", nthreads,
                 MAX_THREADS);
    threaded_mpi = nthreads > 1 && nranks > 1;
    grid_comm = MPI_COMM_WORLD;
    if (threaded_mpi && provided < MPI_THREAD_SERIALIZED)
        npb_fail("lu with %d threads per rank needs MPI_THREAD_SERIALIZED, the MPI library "
                 "provides level %d",
                 nthreads, provided);

    nx0 = ny0 = nz0 = cls->n;
    dt = cls->dt;
    omega = OMEGA;
    decompose();

    char problem[200];
    snprintf(problem, sizeof problem,
             "{\"nx\":%d,\"ny\":%d,\"nz\":%d,\"itmax\":%d,\"dt\":%.17g,\"px\":%d,\"py\":%d}",
             nx0, ny0, nz0, cls->itmax, cls->dt, px, py);
    npb_print_header("lu", cls->name, problem);

    set_coefficients();
    allocate_fields();
    allocate_work();
    set_boundary_values();
    set_initial_values();
    compute_forcing();

    /* One untimed iteration touches all code and data, then the start again (as NPB). */
    double rsdnm[5];
    ssor(1, cls->itmax, rsdnm);
    set_boundary_values();
    set_initial_values();
    double t = ssor(cls->itmax, cls->itmax, rsdnm);

    double errnm[5];
    error_norm(errnm);
    double frc = surface_integral();

    struct npb_result result;
    memset(&result, 0, sizeof result);
    result.kernel = "lu";
    result.class_name = cls->name;
    result.time_s = t;
    const double n3 = (double)nx0 * ny0 * nz0;
    const double navg = (nx0 + ny0 + nz0) / 3.0;
    result.mops_total = t > 0.0 ? 1.0e-6 * cls->itmax *
                                      (1984.77 * n3 - 10923.3 * navg * navg + 27770.9 * navg -
                                       144010.0) /
                                      t
                                : 0.0;
    result.iterations = cls->itmax;
    result.verified = 1;
    npb_add_quantities(&result, "xcr", 5, rsdnm, cls->xcr, 1.0 + LU_REFERENCE_ERROR,
                       LU_TOLERANCE);
    npb_add_quantities(&result, "xce", 5, errnm, cls->xce, 1.0 + LU_REFERENCE_ERROR,
                       LU_TOLERANCE);
    npb_add_quantity(&result, "xci", frc, cls->xci * (1.0 + LU_REFERENCE_ERROR), LU_TOLERANCE);
    npb_print_result(&result);
    int status = result.verified ? 0 : 3;
    release();
    NPB_CHECK_MPI(MPI_Finalize());
    return status;
}
#endif /* LU_ZONE_SOLVER */
