/* NPB SP (NPB 3.4 definition): scalar pentadiagonal ADI solver of the 3-D compressible
 * Navier-Stokes equations, C + MPI + OpenMP.
 *
 * The problem: the five conserved quantities u = (rho, rho u, rho v, rho w, rho e) on a
 * grid_points^3 mesh of the unit cube, a manufactured exact solution (a polynomial with
 * NPB's coefficients ce) that fixes the boundary values and, through exact_rhs, a forcing
 * term. From a transfinite interpolation of the boundary values, niter time steps of the
 * Beam-Warming approximate factorization, diagonalized as Pulliam and Chaussee do it:
 *   compute_rhs  (central fluxes in x, y, z and fourth-order dissipation, times dt),
 *   txinvr       (multiplication by the inverse of the x eigenvector matrix),
 *   x_solve      (three scalar pentadiagonal systems per x-line: u, u+c and u-c, the rhs
 *                 components 1-3 share the first one), ninvr,
 *   y_solve, pinvr, z_solve, tzetar, add.
 * Verified: the RMS norms of the residual (the last rhs / dt) and of the error against the
 * exact solution, each of the five components, relative error 1e-8 against NPB's values.
 *
 * Decomposition (NPB-MPI SP's multi-partition): with p^2 ranks the grid is cut into p^3
 * cells, rank (i0, j0) owns the p cells (i0 + c, j0 - c, c) mod p, c = 0..p-1, so that every
 * rank owns one cell of every slab in each direction. A line solve sweeps the cells of a
 * line of cells stage by stage: the forward elimination of the cell in slab s needs the
 * last two rows of slab s-1 (from the predecessor rank), the back substitution of slab s
 * the first two solved rows of slab s+1 (from the successor), and every rank is busy at
 * every stage. copy_faces refreshes two ghost layers of u on every face before compute_rhs.
 * With one rank there is one cell and no message.
 *
 * Storage (as the original, x fastest): per cell, u with two ghost layers and odd padded
 * x/y extents (IMAXP, JMAXP), the point-wise auxiliaries (us, vs, ws, qs, rho_i, speed,
 * ainv, square) with one ghost layer, rhs and forcing (5 components) and lhs (15: the five
 * diagonals of the u, u+c and u-c systems). OpenMP threads share the planes of every loop
 * nest (the outer transverse loop of each sweep; z sweeps share j inside each k plane).
 * SP-MZ's zones (SP_ZONE_SOLVER) are stored as NPB-MZ's instead: u, rhs and forcing
 * point-major (5, nxmax, ny, nz), the auxiliaries (nxmax, ny, nz), no ghost layers. */
#define _POSIX_C_SOURCE 200809L
#include "npb_common.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SP_ZONE_SOLVER
#define MAX_CELLS 1024 /* SP-MZ: zones per rank (class D has 1024) */
#else
#define MAX_CELLS 128 /* cells per rank = sqrt(ranks): up to 16384 ranks */
#endif
#define NPB_SP_EPSILON 1.0e-8
/* Storage of u, rhs and forcing: GHOST ghost layers of u per side, PT the stride of i
 * (the components of a point at u_sm, r_sm from each other), DERIVED_GHOSTS the ghost
 * layers of the derived fields compute_rhs fills. The multi-partition's cells: component
 * planes, unit stride in i, two ghost layers that copy_faces refreshes. SP-MZ's zones
 * follow NPB-MZ's u(5, 0:nxmax-1, 0:ny-1, 0:nz-1): point-major (the five components of a
 * point adjacent), no ghost layers (a zone's outermost points are its boundary, which the
 * zone exchange fills), nx padded to an odd nxmax. */
#ifdef SP_ZONE_SOLVER
#define GHOST 0
#define PT 5
#define DERIVED_GHOSTS 0
#else
#define GHOST 2
#define PT 1
#define DERIVED_GHOSTS 1
#endif

struct sp_class {
    char name;
    int size, niter;
    double dt;
    double xcr[5], xce[5]; /* reference RMS norms: residual, error */
};

static const struct sp_class sp_classes[] = {
    {'S', 12, 100, 0.015,
     {2.7470315451339479e-02, 1.0360746705285417e-02, 1.6235745065095532e-02,
      1.5840557224455615e-02, 3.4849040609362460e-02},
     {2.7289258557377227e-05, 1.0364446640837285e-05, 1.6154798287166471e-05,
      1.5750704994480102e-05, 3.4177666183390531e-05}},
    {'W', 36, 400, 0.0015,
     {0.1893253733584e-02, 0.1717075447775e-03, 0.2778153350936e-03, 0.2887475409984e-03,
      0.3143611161242e-02},
     {0.7542088599534e-04, 0.6512852253086e-05, 0.1049092285688e-04, 0.1128838671535e-04,
      0.1212845639773e-03}},
    {'A', 64, 400, 0.0015,
     {2.4799822399300195e0, 1.1276337964368832e0, 1.5028977888770491e0, 1.4217816211695179e0,
      2.1292113035138280e0},
     {1.0900140297820550e-04, 3.7343951769282091e-05, 5.0092785406541633e-05,
      4.7671093939528255e-05, 1.3621613399213001e-04}},
    {'B', 102, 400, 0.001,
     {0.6903293579998e+02, 0.3095134488084e+02, 0.4103336647017e+02, 0.3864769009604e+02,
      0.5643482272596e+02},
     {0.9810006190188e-02, 0.1022827905670e-02, 0.1720597911692e-02, 0.1694479428231e-02,
      0.1847456263981e-01}},
    {'C', 162, 400, 0.00067,
     {0.5881691581829e+03, 0.2454417603569e+03, 0.3293829191851e+03, 0.3081924971891e+03,
      0.4597223799176e+03},
     {0.2598120500183e+00, 0.2590888922315e-01, 0.5132886416320e-01, 0.4806073419454e-01,
      0.5483377491301e+00}},
    {'D', 408, 500, 0.00030,
     {0.1044696216887e+05, 0.3204427762578e+04, 0.4648680733032e+04, 0.4238923283697e+04,
      0.7588412036136e+04},
     {0.5089471423669e+01, 0.5323514855894e+00, 0.1187051008971e+01, 0.1083734951938e+01,
      0.1164108338568e+02}},
};

/* ---------------------------------------------------------------- problem -- */

static int grid_points[3], niter;
static double dt;

/* Constants of the discretization (NPB's names: t* metric terms, d* dissipation, c* gas
 * constants, *con* viscous terms, comz* the fourth-order dissipation of the lhs). */
static double c1, c2, c3, c4, c5, bt, c1c2, c1c5, c3c4, c1345, conz1, c2iv, con43, con16;
static double dnxm1, dnym1, dnzm1;
static double tx1, tx2, tx3, ty1, ty2, ty3, tz1, tz2, tz3;
static double dx1, dx2, dx3, dx4, dx5, dy1, dy2, dy3, dy4, dy5, dz1, dz2, dz3, dz4, dz5;
static double dxmax, dymax, dzmax, dssp, c4dssp, c5dssp;
static double dttx1, dttx2, dtty1, dtty2, dttz1, dttz2, c2dttx1, c2dtty1, c2dttz1;
static double dtdssp, comz1, comz4, comz5, comz6, c3c4tx3, c3c4ty3, c3c4tz3;
static double dx1tx1, dx2tx1, dx3tx1, dx4tx1, dx5tx1, dy1ty1, dy2ty1, dy3ty1, dy4ty1, dy5ty1;
static double dz1tz1, dz2tz1, dz3tz1, dz4tz1, dz5tz1;
static double xxcon1, xxcon2, xxcon3, xxcon4, xxcon5, yycon1, yycon2, yycon3, yycon4, yycon5;
static double zzcon1, zzcon2, zzcon3, zzcon4, zzcon5;

/* ----------------------------------------------------------- decomposition -- */

static int node, no_nodes, ncells;
static MPI_Comm comm_setup, comm_solve, comm_rhs;
static int predecessor[3], successor[3];

struct cell {
    int coord[3]; /* 0..ncells-1 per axis */
    int low[3];   /* global index of the first point */
    int size[3];  /* points per axis */
    int start[3]; /* 1: the first point is on the physical boundary (not solved for) */
    int end[3];   /* 1: the last point is on the physical boundary */
};
static struct cell cells[MAX_CELLS];
static int slice_cell[3][MAX_CELLS]; /* [axis][slab]: the cell of this rank in that slab */

/* ------------------------------------------------------------------ arrays -- */

static int imax, jmax, kmax, imaxp, jmaxp, max_cell_dim;
static double *u, *us, *vs, *ws, *qs, *ainv, *rho_i, *speed, *square;
static double *rhs, *forcing, *lhs, *in_buffer, *out_buffer;
/* Strides: u (ghosts -GHOST..), the auxiliaries (ghosts -DERIVED_GHOSTS..), rhs/forcing/lhs
 * (no ghosts); *_sc a cell's whole array. The component stride of u and rhs/forcing: a
 * plane (u_sm, r_sm) of the multi-partition's cells, 1 in SP-MZ's point-major zones. */
static ptrdiff_t u_sj, u_sk, u_sc, a_sj, a_sk, a_sc, r_sj, r_sk, r_sc, l_sc;
#ifdef SP_ZONE_SOLVER
static const ptrdiff_t u_sm = 1, r_sm = 1;
#else
static ptrdiff_t u_sm, r_sm;
#endif
static ptrdiff_t u_stride[3], a_stride[3], r_stride[3];
static size_t face_count[6]; /* copy_faces: values sent per face (+x, -x, +y, -y, +z, -z) */

#define UIX(i, j, k) ((ptrdiff_t)(i) * PT + (ptrdiff_t)(j) * u_sj + (ptrdiff_t)(k) * u_sk)
#define AIX(i, j, k) ((ptrdiff_t)(i) + (ptrdiff_t)(j) * a_sj + (ptrdiff_t)(k) * a_sk)
#define RIX(i, j, k) ((ptrdiff_t)(i) * PT + (ptrdiff_t)(j) * r_sj + (ptrdiff_t)(k) * r_sk)
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
/* The stride of u (and rhs, forcing) along axis d; PT, a constant, along i in the zones. */
#ifdef SP_ZONE_SOLVER
#define U_STRIDE(d) ((d) == 0 ? (ptrdiff_t)PT : u_stride[d])
#define R_STRIDE(d) ((d) == 0 ? (ptrdiff_t)PT : r_stride[d])
#else
#define U_STRIDE(d) u_stride[d]
#define R_STRIDE(d) r_stride[d]
#endif

/* Cell c's point (0,0,0) in each array. */
static inline double *u_cell(int c)
{
    return u + (ptrdiff_t)c * u_sc + GHOST * PT + GHOST * u_sj + GHOST * u_sk;
}
static inline double *aux_cell(double *a, int c)
{
    return a + (ptrdiff_t)c * a_sc + DERIVED_GHOSTS + DERIVED_GHOSTS * a_sj + DERIVED_GHOSTS * a_sk;
}
static inline double *rhs_cell(double *r, int c)
{
    return r + (ptrdiff_t)c * r_sc;
}
static inline double *lhs_cell(int c)
{
    return lhs + (ptrdiff_t)c * l_sc;
}

/* Loops over a box of a cell in NPB's order (k, j, i), the (k, j) planes shared by the
 * threads of the enclosing parallel region. */
#define OMP_FOR_PLANES _Pragma("omp for collapse(2) schedule(static)")
#define OMP_FOR_PLANES_NOWAIT _Pragma("omp for collapse(2) schedule(static) nowait")

/* The interior (solved) points of a cell along each axis. */
static inline void interior(const struct cell *cl, int lo[3], int hi[3])
{
    for (int d = 0; d < 3; ++d) {
        lo[d] = cl->start[d];
        hi[d] = cl->size[d] - cl->end[d] - 1;
    }
}

/* -------------------------------------------------------------------- setup -- */

/* spacing[d]: the grid step along axis d (1 / (n - 1) on SP's unit cube; SP-MZ's zones
 * use the zone mesh's step, NPB-MZ's dnxm1 = x_zones / (gx_size - 1)). */
static void set_constants(const double spacing[3])
{
    c1 = 1.4;
    c2 = 0.4;
    c3 = 0.1;
    c4 = 1.0;
    c5 = 1.4;
    bt = sqrt(0.5);
    dnxm1 = spacing[0];
    dnym1 = spacing[1];
    dnzm1 = spacing[2];
    c1c2 = c1 * c2;
    c1c5 = c1 * c5;
    c3c4 = c3 * c4;
    c1345 = c1c5 * c3c4;
    conz1 = 1.0 - c1c5;
    tx1 = 1.0 / (dnxm1 * dnxm1);
    tx2 = 1.0 / (2.0 * dnxm1);
    tx3 = 1.0 / dnxm1;
    ty1 = 1.0 / (dnym1 * dnym1);
    ty2 = 1.0 / (2.0 * dnym1);
    ty3 = 1.0 / dnym1;
    tz1 = 1.0 / (dnzm1 * dnzm1);
    tz2 = 1.0 / (2.0 * dnzm1);
    tz3 = 1.0 / dnzm1;
    dx1 = dx2 = dx3 = dx4 = dx5 = 0.75;
    dy1 = dy2 = dy3 = dy4 = dy5 = 0.75;
    dz1 = dz2 = dz3 = dz4 = dz5 = 1.0;
    dxmax = MAX2(dx3, dx4);
    dymax = MAX2(dy2, dy4);
    dzmax = MAX2(dz2, dz3);
    dssp = 0.25 * MAX2(dx1, MAX2(dy1, dz1));
    c4dssp = 4.0 * dssp;
    c5dssp = 5.0 * dssp;
    dttx1 = dt * tx1;
    dttx2 = dt * tx2;
    dtty1 = dt * ty1;
    dtty2 = dt * ty2;
    dttz1 = dt * tz1;
    dttz2 = dt * tz2;
    c2dttx1 = 2.0 * dttx1;
    c2dtty1 = 2.0 * dtty1;
    c2dttz1 = 2.0 * dttz1;
    dtdssp = dt * dssp;
    comz1 = dtdssp;
    comz4 = 4.0 * dtdssp;
    comz5 = 5.0 * dtdssp;
    comz6 = 6.0 * dtdssp;
    c3c4tx3 = c3c4 * tx3;
    c3c4ty3 = c3c4 * ty3;
    c3c4tz3 = c3c4 * tz3;
    dx1tx1 = dx1 * tx1;
    dx2tx1 = dx2 * tx1;
    dx3tx1 = dx3 * tx1;
    dx4tx1 = dx4 * tx1;
    dx5tx1 = dx5 * tx1;
    dy1ty1 = dy1 * ty1;
    dy2ty1 = dy2 * ty1;
    dy3ty1 = dy3 * ty1;
    dy4ty1 = dy4 * ty1;
    dy5ty1 = dy5 * ty1;
    dz1tz1 = dz1 * tz1;
    dz2tz1 = dz2 * tz1;
    dz3tz1 = dz3 * tz1;
    dz4tz1 = dz4 * tz1;
    dz5tz1 = dz5 * tz1;
    c2iv = 2.5;
    con43 = 4.0 / 3.0;
    con16 = 1.0 / 6.0;
    xxcon1 = c3c4tx3 * con43 * tx3;
    xxcon2 = c3c4tx3 * tx3;
    xxcon3 = c3c4tx3 * conz1 * tx3;
    xxcon4 = c3c4tx3 * con16 * tx3;
    xxcon5 = c3c4tx3 * c1c5 * tx3;
    yycon1 = c3c4ty3 * con43 * ty3;
    yycon2 = c3c4ty3 * ty3;
    yycon3 = c3c4ty3 * conz1 * ty3;
    yycon4 = c3c4ty3 * con16 * ty3;
    yycon5 = c3c4ty3 * c1c5 * ty3;
    zzcon1 = c3c4tz3 * con43 * tz3;
    zzcon2 = c3c4tz3 * tz3;
    zzcon3 = c3c4tz3 * conz1 * tz3;
    zzcon4 = c3c4tz3 * con16 * tz3;
    zzcon5 = c3c4tz3 * c1c5 * tz3;
}

/* The multi-partition: cells of this rank, their sizes, neighbours along each axis. */
static void make_set(void)
{
    const int p = ncells;
    int coord[MAX_CELLS][3];
    npb_multipartition(node, p, coord, predecessor, successor);
    for (int c = 0; c < p; ++c)
        for (int d = 0; d < 3; ++d) {
            cells[c].coord[d] = coord[c][d];
            slice_cell[d][coord[c][d]] = c;
        }
    for (int d = 0; d < 3; ++d) {
        for (int c = 0; c < p; ++c) {
            struct cell *cl = &cells[c];
            const int x = cl->coord[d];
            npb_cell_extent("sp", no_nodes, grid_points[d], p, x, &cl->size[d], &cl->low[d]);
            cl->start[d] = x == 0;
            cl->end[d] = x == p - 1;
        }
    }
}

static double *alloc_doubles(size_t count, const char *what)
{
    return npb_alloc(count * sizeof(double), what);
}

static void alloc_space(void)
{
#ifdef SP_ZONE_SOLVER
    /* SP-MZ: the largest zone per axis (NPB-MZ's zones are whole grids, unpadded in z). */
    imax = jmax = kmax = 0;
    for (int c = 0; c < ncells; ++c) {
        imax = MAX2(imax, cells[c].size[0]);
        jmax = MAX2(jmax, cells[c].size[1]);
        kmax = MAX2(kmax, cells[c].size[2]);
    }
    max_cell_dim = MAX2(imax, MAX2(jmax, kmax));
#else
    max_cell_dim = grid_points[0] / ncells + 1;
    for (int d = 1; d < 3; ++d) max_cell_dim = MAX2(max_cell_dim, grid_points[d] / ncells + 1);
    imax = jmax = kmax = max_cell_dim;
#endif
    /* Odd x and y extents, as the original: power-of-two strides thrash the caches. */
    imaxp = imax / 2 * 2 + 1;
    jmaxp = jmax / 2 * 2 + 1;

#ifdef SP_ZONE_SOLVER
    /* NPB-MZ's zone arrays: u, rhs, forcing (5, 0:nxmax-1, 0:ny-1, 0:nz-1), the derived
     * fields (0:nxmax-1, 0:ny-1, 0:nz-1), nxmax = imaxp; no ghost layers, y and z
     * unpadded. */
    u_sj = 5 * (ptrdiff_t)imaxp;
    u_sk = u_sj * jmax;
    u_sc = u_sk * kmax;
    a_sj = imaxp;
    a_sk = a_sj * jmax;
    a_sc = a_sk * kmax;
    r_sj = u_sj;
    r_sk = u_sk;
    r_sc = u_sc;
    l_sc = 0;
#else
    u_sj = imaxp + 4;
    u_sk = u_sj * (jmaxp + 4);
    u_sm = u_sk * (kmax + 4);
    u_sc = 5 * u_sm;
    a_sj = imax + 2;
    a_sk = a_sj * (jmax + 2);
    a_sc = a_sk * (kmax + 2);
    r_sj = imaxp;
    r_sk = r_sj * jmaxp;
    r_sm = r_sk * kmax;
    r_sc = 5 * r_sm;
    l_sc = 15 * r_sm;
#endif
    u_stride[0] = PT, u_stride[1] = u_sj, u_stride[2] = u_sk;
    a_stride[0] = 1, a_stride[1] = a_sj, a_stride[2] = a_sk;
    r_stride[0] = PT, r_stride[1] = r_sj, r_stride[2] = r_sk;

    const size_t nc = (size_t)ncells;
    u = alloc_doubles(nc * (size_t)u_sc, "u");
    double **aux[] = {&us, &vs, &ws, &qs, &ainv, &rho_i, &speed, &square};
    for (size_t i = 0; i < sizeof aux / sizeof aux[0]; ++i)
        *aux[i] = alloc_doubles(nc * (size_t)a_sc, "point-wise auxiliaries");
    rhs = alloc_doubles(nc * (size_t)r_sc, "rhs");
    forcing = alloc_doubles(nc * (size_t)r_sc, "forcing");
#ifdef SP_ZONE_SOLVER
    /* SP-MZ solves line by line in per-thread arrays (sp_mz.c); its zones exchange their
     * faces through the zone mesh's buffers (npb_mz.c). */
    lhs = in_buffer = out_buffer = NULL;
#else
    lhs = alloc_doubles(nc * (size_t)l_sc, "lhs");

    /* Buffers: the faces of copy_faces, or one stage of a line solve (22 values per
     * line: the last two rows of three pentadiagonal systems and their five rhs). */
    size_t total = 0;
    for (int d = 0; d < 3; ++d) {
        size_t plus = 0, minus = 0;
        for (int c = 0; c < ncells; ++c) {
            const struct cell *cl = &cells[c];
            size_t face = 2 * 5;
            for (int e = 0; e < 3; ++e)
                if (e != d) face *= (size_t)cl->size[e];
            if (cl->coord[d] != ncells - 1) plus += face;
            if (cl->coord[d] != 0) minus += face;
        }
        face_count[2 * d] = plus;
        face_count[2 * d + 1] = minus;
        total += plus + minus;
    }
    const size_t solve = 22 * (size_t)max_cell_dim * (size_t)max_cell_dim;
    const size_t buffer_len = MAX2(total, solve) + 1;
    in_buffer = alloc_doubles(buffer_len, "receive buffer");
    out_buffer = alloc_doubles(buffer_len, "send buffer");
#endif
}

static void free_space(void)
{
    double *all[] = {u, us, vs, ws, qs, ainv, rho_i, speed, square, rhs, forcing, lhs,
                     in_buffer, out_buffer};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) free(all[i]);
}

/* ---------------------------------------------------- exact solution, setup -- */

/* u: the transfinite (tri-linear) interpolation of the exact boundary values inside (the
 * boundary faces: set_boundary_face). */
static void interpolate_cells(void)
{
    for (int c = 0; c < ncells; ++c) {
        double *uc = u_cell(c);
        /* compute_rhs takes 1/rho at every point of the ghost-extended box (the cell and
         * DERIVED_GHOSTS layers), also where no neighbour fills it: keep those values
         * harmless. */
        for (int k = -DERIVED_GHOSTS; k <= kmax - 1 + DERIVED_GHOSTS; ++k)
            for (int j = -DERIVED_GHOSTS; j <= jmax - 1 + DERIVED_GHOSTS; ++j)
                for (int i = -DERIVED_GHOSTS; i <= imax - 1 + DERIVED_GHOSTS; ++i) {
                    const ptrdiff_t p = UIX(i, j, k);
                    uc[p] = 1.0;
                    uc[p + u_sm] = 0.0;
                    uc[p + 2 * u_sm] = 0.0;
                    uc[p + 3 * u_sm] = 0.0;
                    uc[p + 4 * u_sm] = 1.0;
                }
    }
    for (int c = 0; c < ncells; ++c) {
        const struct cell *cl = &cells[c];
        double *uc = u_cell(c);
        for (int kk = 0; kk < cl->size[2]; ++kk) {
            const double zeta = (double)(kk + cl->low[2]) * dnzm1;
            for (int jj = 0; jj < cl->size[1]; ++jj) {
                const double eta = (double)(jj + cl->low[1]) * dnym1;
                for (int ii = 0; ii < cl->size[0]; ++ii) {
                    const double xi = (double)(ii + cl->low[0]) * dnxm1;
                    double face[3][2][5];
                    for (int s = 0; s < 2; ++s) {
                        npb_adi_exact_solution((double)s, eta, zeta, face[0][s]);
                        npb_adi_exact_solution(xi, (double)s, zeta, face[1][s]);
                        npb_adi_exact_solution(xi, eta, (double)s, face[2][s]);
                    }
                    for (int m = 0; m < 5; ++m) {
                        const double pxi = xi * face[0][1][m] + (1.0 - xi) * face[0][0][m];
                        const double peta = eta * face[1][1][m] + (1.0 - eta) * face[1][0][m];
                        const double pzeta = zeta * face[2][1][m] + (1.0 - zeta) * face[2][0][m];
                        uc[m * u_sm + UIX(ii, jj, kk)] = pxi + peta + pzeta - pxi * peta -
                                                         pxi * pzeta - peta * pzeta +
                                                         pxi * peta * pzeta;
                    }
                }
            }
        }
    }
}

/* The exact solution on the face of cell c on the grid boundary at side 0 or 1 of axis d. */
static void set_boundary_face(int c, int d, int side)
{
    {
        {
            const struct cell *cl = &cells[c];
            double *uc = u_cell(c);
            int lo[3] = {0, 0, 0}, hi[3];
            for (int e = 0; e < 3; ++e) hi[e] = cl->size[e] - 1;
            lo[d] = hi[d] = side ? cl->size[d] - 1 : 0;
            for (int k = lo[2]; k <= hi[2]; ++k)
                for (int j = lo[1]; j <= hi[1]; ++j)
                    for (int i = lo[0]; i <= hi[0]; ++i) {
                        double xyz[3] = {(double)(i + cl->low[0]) * dnxm1,
                                         (double)(j + cl->low[1]) * dnym1,
                                         (double)(k + cl->low[2]) * dnzm1};
                        xyz[d] = (double)side;
                        double value[5];
                        npb_adi_exact_solution(xyz[0], xyz[1], xyz[2], value);
                        for (int m = 0; m < 5; ++m) uc[m * u_sm + UIX(i, j, k)] = value[m];
                    }
        }
    }
}

static void initialize(void)
{
    interpolate_cells();
    for (int d = 0; d < 3; ++d)
        for (int side = 0; side < 2; ++side)
            set_boundary_face(slice_cell[d][side ? ncells - 1 : 0], d, side);
}

#ifndef SP_ZONE_SOLVER /* the multi-partition's cell-wide lhs */
/* lhs: zero, with ones on the three diagonals; the boundary rows stay so (identity rows
 * whose rhs is zero), every other row is rebuilt by each solve. */
static void lhsinit(void)
{
    for (int c = 0; c < ncells; ++c) {
        double *L = lhs_cell(c);
        memset(L, 0, (size_t)l_sc * sizeof(double));
        const struct cell *cl = &cells[c];
        for (int set = 0; set < 3; ++set)
            for (int k = 0; k < cl->size[2]; ++k)
                for (int j = 0; j < cl->size[1]; ++j)
                    for (int i = 0; i < cl->size[0]; ++i)
                        L[(5 * set + 2) * r_sm + RIX(i, j, k)] = 1.0;
    }
}
#endif

/* The forcing term: minus the discrete operator of compute_rhs applied to the exact
 * solution, line by line along each axis. */
static void exact_rhs(void)
{
    const double t2[3] = {tx2, ty2, tz2};
    const double dd[3][5] = {{dx1tx1, dx2tx1, dx3tx1, dx4tx1, dx5tx1},
                             {dy1ty1, dy2ty1, dy3ty1, dy4ty1, dy5ty1},
                             {dz1tz1, dz2tz1, dz3tz1, dz4tz1, dz5tz1}};
    const double con[3][5] = {{xxcon1, xxcon2, xxcon3, xxcon4, xxcon5},
                              {yycon1, yycon2, yycon3, yycon4, yycon5},
                              {zzcon1, zzcon2, zzcon3, zzcon4, zzcon5}};
    const double spacing[3] = {dnxm1, dnym1, dnzm1};
    const int len = max_cell_dim + 4;
    double *ue = alloc_doubles(5 * (size_t)len, "exact_rhs line"), *buf = alloc_doubles(5 * (size_t)len, "exact_rhs line");
    double *cuf = alloc_doubles((size_t)len, "exact_rhs line"), *q = alloc_doubles((size_t)len, "exact_rhs line");
#define UE(s, m) ue[(m) * len + (s) + 2]
#define BUF(s, m) buf[(m) * len + (s) + 2]
#define CUF(s) cuf[(s) + 2]
#define Q(s) q[(s) + 2]
    for (int c = 0; c < ncells; ++c) {
        const struct cell *cl = &cells[c];
        double *fc = rhs_cell(forcing, c);
        memset(fc, 0, (size_t)r_sc * sizeof(double));
        int lo[3], hi[3];
        interior(cl, lo, hi);
        for (int d = 0; d < 3; ++d) {
            const int a = d == 2 ? 1 : 2, b = d == 0 ? 1 : 0; /* outer, inner transverse axes */
            const int n = cl->size[d];
            const int s_lo = -2 * (1 - cl->start[d]), s_hi = n + 1 - 2 * cl->end[d];
            for (int ta = lo[a]; ta <= hi[a]; ++ta)
                for (int tb = lo[b]; tb <= hi[b]; ++tb) {
                    int pt[3];
                    pt[a] = ta;
                    pt[b] = tb;
                    for (int s = s_lo; s <= s_hi; ++s) {
                        pt[d] = s;
                        double dtemp[5];
                        npb_adi_exact_solution((double)(pt[0] + cl->low[0]) * spacing[0],
                                       (double)(pt[1] + cl->low[1]) * spacing[1],
                                       (double)(pt[2] + cl->low[2]) * spacing[2], dtemp);
                        for (int m = 0; m < 5; ++m) UE(s, m) = dtemp[m];
                        const double dtpp = 1.0 / dtemp[0];
                        for (int m = 1; m < 5; ++m) BUF(s, m) = dtpp * dtemp[m];
                        CUF(s) = BUF(s, d + 1) * BUF(s, d + 1);
                        double sum = CUF(s);
                        for (int e = 0; e < 3; ++e)
                            if (e != d) sum += BUF(s, e + 1) * BUF(s, e + 1);
                        BUF(s, 0) = sum;
                        Q(s) = 0.5 * (BUF(s, 1) * UE(s, 1) + BUF(s, 2) * UE(s, 2) +
                                      BUF(s, 3) * UE(s, 3));
                    }
                    pt[d] = 0;
                    double *f = fc + RIX(pt[0], pt[1], pt[2]);
                    const ptrdiff_t st = r_stride[d];
                    const int nm = d + 1; /* the momentum component normal to the line */
                    for (int s = lo[d]; s <= hi[d]; ++s) {
                        const int sp = s + 1, sm = s - 1;
                        double *fs = f + s * st;
                        fs[0] += -t2[d] * (UE(sp, nm) - UE(sm, nm)) +
                                 dd[d][0] * (UE(sp, 0) - 2.0 * UE(s, 0) + UE(sm, 0));
                        for (int m = 1; m < 4; ++m) {
                            double flux;
                            if (m == nm)
                                flux = (UE(sp, m) * BUF(sp, nm) + c2 * (UE(sp, 4) - Q(sp))) -
                                       (UE(sm, m) * BUF(sm, nm) + c2 * (UE(sm, 4) - Q(sm)));
                            else
                                flux = UE(sp, m) * BUF(sp, nm) - UE(sm, m) * BUF(sm, nm);
                            fs[m * r_sm] += -t2[d] * flux +
                                            (m == nm ? con[d][0] : con[d][1]) *
                                                (BUF(sp, m) - 2.0 * BUF(s, m) + BUF(sm, m)) +
                                            dd[d][m] * (UE(sp, m) - 2.0 * UE(s, m) + UE(sm, m));
                        }
                        fs[4 * r_sm] +=
                            -t2[d] * (BUF(sp, nm) * (c1 * UE(sp, 4) - c2 * Q(sp)) -
                                      BUF(sm, nm) * (c1 * UE(sm, 4) - c2 * Q(sm))) +
                            0.5 * con[d][2] * (BUF(sp, 0) - 2.0 * BUF(s, 0) + BUF(sm, 0)) +
                            con[d][3] * (CUF(sp) - 2.0 * CUF(s) + CUF(sm)) +
                            con[d][4] * (BUF(sp, 4) - 2.0 * BUF(s, 4) + BUF(sm, 4)) +
                            dd[d][4] * (UE(sp, 4) - 2.0 * UE(s, 4) + UE(sm, 4));
                    }
                    /* Fourth-order dissipation, one-sided next to the boundary. */
                    for (int m = 0; m < 5; ++m) {
                        double *fm = f + m * r_sm;
                        if (cl->start[d]) {
                            fm[1 * st] -= dssp * (5.0 * UE(1, m) - 4.0 * UE(2, m) + UE(3, m));
                            fm[2 * st] -= dssp * (-4.0 * UE(1, m) + 6.0 * UE(2, m) -
                                                  4.0 * UE(3, m) + UE(4, m));
                        }
                        for (int s = 3 * cl->start[d]; s <= n - 3 * cl->end[d] - 1; ++s)
                            fm[s * st] -= dssp * (UE(s - 2, m) - 4.0 * UE(s - 1, m) +
                                                  6.0 * UE(s, m) - 4.0 * UE(s + 1, m) +
                                                  UE(s + 2, m));
                        if (cl->end[d]) {
                            const int s1 = n - 3, s2 = n - 2;
                            fm[s1 * st] -= dssp * (UE(s1 - 2, m) - 4.0 * UE(s1 - 1, m) +
                                                   6.0 * UE(s1, m) - 4.0 * UE(s1 + 1, m));
                            fm[s2 * st] -= dssp * (UE(s2 - 2, m) - 4.0 * UE(s2 - 1, m) +
                                                   5.0 * UE(s2, m));
                        }
                    }
                }
        }
        for (int m = 0; m < 5; ++m)
            for (int k = lo[2]; k <= hi[2]; ++k)
                for (int j = lo[1]; j <= hi[1]; ++j)
                    for (int i = lo[0]; i <= hi[0]; ++i) fc[m * r_sm + RIX(i, j, k)] *= -1.0;
    }
#undef UE
#undef BUF
#undef CUF
#undef Q
    free(ue);
    free(buf);
    free(cuf);
    free(q);
}

/* ------------------------------------------------------------- compute_rhs -- */

#ifdef SP_ZONE_SOLVER
/* Fourth-order dissipation along axis d (one-sided next to the zone's boundary) at the
 * interior points of the zone's row (j, k): rhs -= dssp * (stencil of u), NPB-MZ's loops
 * (along x the points 1, 2, those between, n-3 and n-2 of the row, along y and z the
 * stencil of the row's j or k; the five components of a point together, adjacent in the
 * zone's arrays). Inside the caller's loop over the rows. */
static inline __attribute__((always_inline)) void add_dissipation_row(int d, const struct cell *cl,
                                                                      const double *restrict uc,
                                                                      double *restrict rc, int k,
                                                                      int j)
{
    const ptrdiff_t st = U_STRIDE(d);
    const double *restrict ur = uc + UIX(0, j, k);
    double *restrict rr = rc + RIX(0, j, k);
    const int n0 = cl->size[0];
    /* U(o): component m of u at o points from point i along d. */
#define U(o) ur[p + (o) * st]
#define DISSIPATE(i, stencil)                                                                \
    do {                                                                                     \
        for (int m = 0; m < 5; ++m) {                                                        \
            const ptrdiff_t p = (ptrdiff_t)(i) * PT + m;                                     \
            rr[p] -= dssp * (stencil);                                                       \
        }                                                                                    \
    } while (0)
#define INNER (U(-2) - 4.0 * U(-1) + 6.0 * U(0) - 4.0 * U(1) + U(2))
    if (d == 0) {
        DISSIPATE(1, 5.0 * U(0) - 4.0 * U(1) + U(2));
        DISSIPATE(2, -4.0 * U(-1) + 6.0 * U(0) - 4.0 * U(1) + U(2));
        for (int i = 3; i <= n0 - 4; ++i) DISSIPATE(i, INNER);
        DISSIPATE(n0 - 3, U(-2) - 4.0 * U(-1) + 6.0 * U(0) - 4.0 * U(1));
        DISSIPATE(n0 - 2, U(-2) - 4.0 * U(-1) + 5.0 * U(0));
    } else {
        const int s = d == 1 ? j : k, n = cl->size[d];
        if (s == 1)
            for (int i = 1; i <= n0 - 2; ++i) DISSIPATE(i, 5.0 * U(0) - 4.0 * U(1) + U(2));
        else if (s == 2)
            for (int i = 1; i <= n0 - 2; ++i)
                DISSIPATE(i, -4.0 * U(-1) + 6.0 * U(0) - 4.0 * U(1) + U(2));
        else if (s == n - 3)
            for (int i = 1; i <= n0 - 2; ++i)
                DISSIPATE(i, U(-2) - 4.0 * U(-1) + 6.0 * U(0) - 4.0 * U(1));
        else if (s == n - 2)
            for (int i = 1; i <= n0 - 2; ++i) DISSIPATE(i, U(-2) - 4.0 * U(-1) + 5.0 * U(0));
        else
            for (int i = 1; i <= n0 - 2; ++i) DISSIPATE(i, INNER);
    }
#undef INNER
#undef DISSIPATE
#undef U
}
#else
/* Fourth-order dissipation along axis d (one-sided next to the physical boundary), for
 * the interior points of the cell: rhs -= dssp * (stencil of u). Inside a parallel region. */
static inline void add_dissipation(int d, const struct cell *cl, const double *restrict uc,
                                   double *restrict rc)
{
    int lo[3], hi[3];
    interior(cl, lo, hi);
    const ptrdiff_t us1 = u_stride[d];
    const int n = cl->size[d];
    for (int m = 0; m < 5; ++m) {
        const double *restrict um = uc + m * u_sm;
        double *restrict rm = rc + m * r_sm;
        int blo[3] = {lo[0], lo[1], lo[2]}, bhi[3] = {hi[0], hi[1], hi[2]};
        if (cl->start[d]) {
            blo[d] = bhi[d] = 1;
            OMP_FOR_PLANES_NOWAIT
            for (int k = blo[2]; k <= bhi[2]; ++k)
                for (int j = blo[1]; j <= bhi[1]; ++j)
                    for (int i = blo[0]; i <= bhi[0]; ++i) {
                        const ptrdiff_t p = UIX(i, j, k);
                        rm[RIX(i, j, k)] -= dssp * (5.0 * um[p] - 4.0 * um[p + us1] + um[p + 2 * us1]);
                    }
            blo[d] = bhi[d] = 2;
            OMP_FOR_PLANES_NOWAIT
            for (int k = blo[2]; k <= bhi[2]; ++k)
                for (int j = blo[1]; j <= bhi[1]; ++j)
                    for (int i = blo[0]; i <= bhi[0]; ++i) {
                        const ptrdiff_t p = UIX(i, j, k);
                        rm[RIX(i, j, k)] -= dssp * (-4.0 * um[p - us1] + 6.0 * um[p] -
                                                    4.0 * um[p + us1] + um[p + 2 * us1]);
                    }
        }
        blo[d] = 3 * cl->start[d];
        bhi[d] = n - 3 * cl->end[d] - 1;
        OMP_FOR_PLANES_NOWAIT
        for (int k = blo[2]; k <= bhi[2]; ++k)
            for (int j = blo[1]; j <= bhi[1]; ++j)
                for (int i = blo[0]; i <= bhi[0]; ++i) {
                    const ptrdiff_t p = UIX(i, j, k);
                    rm[RIX(i, j, k)] -= dssp * (um[p - 2 * us1] - 4.0 * um[p - us1] + 6.0 * um[p] -
                                                4.0 * um[p + us1] + um[p + 2 * us1]);
                }
        if (cl->end[d]) {
            blo[d] = bhi[d] = n - 3;
            OMP_FOR_PLANES_NOWAIT
            for (int k = blo[2]; k <= bhi[2]; ++k)
                for (int j = blo[1]; j <= bhi[1]; ++j)
                    for (int i = blo[0]; i <= bhi[0]; ++i) {
                        const ptrdiff_t p = UIX(i, j, k);
                        rm[RIX(i, j, k)] -= dssp * (um[p - 2 * us1] - 4.0 * um[p - us1] +
                                                    6.0 * um[p] - 4.0 * um[p + us1]);
                    }
            blo[d] = bhi[d] = n - 2;
            OMP_FOR_PLANES_NOWAIT
            for (int k = blo[2]; k <= bhi[2]; ++k)
                for (int j = blo[1]; j <= bhi[1]; ++j)
                    for (int i = blo[0]; i <= bhi[0]; ++i) {
                        const ptrdiff_t p = UIX(i, j, k);
                        rm[RIX(i, j, k)] -= dssp * (um[p - 2 * us1] - 4.0 * um[p - us1] + 5.0 * um[p]);
                    }
        }
    }
    /* Every loop above writes its own rows of one component: only the next sweep (other
     * lines to other threads) needs them all done. */
#pragma omp barrier
}
#endif

/* The point-wise auxiliaries of a cell that the fluxes read. */
struct point_values {
    const double *rho, *vel[3], *square, *qs; /* 1/rho, u/v/w velocity, kinetic energy, q */
};

/* Central convective and viscous fluxes along axis d at the interior points of the cell,
 * added to rhs (NPB's xi-, eta- and zeta-direction flux loops: component d + 1 is the
 * momentum normal to the direction, with the pressure term and the 4/3 viscous factor).
 * Inside a parallel region; d is a constant after inlining. SP-MZ: at the interior points
 * of the zone's row (j, k) only, inside the caller's loop over the rows. */
static inline __attribute__((always_inline)) void add_fluxes(int d, const struct cell *cl,
                                                             const double *restrict uc,
                                                             double *restrict rc,
                                                             struct point_values pv
#ifdef SP_ZONE_SOLVER
                                                             ,
                                                             int k, int j
#endif
)
{
    const double t2 = d == 0 ? tx2 : d == 1 ? ty2 : tz2;
    const double dd1 = d == 0 ? dx1tx1 : d == 1 ? dy1ty1 : dz1tz1;
    const double dd2 = d == 0 ? dx2tx1 : d == 1 ? dy2ty1 : dz2tz1;
    const double dd3 = d == 0 ? dx3tx1 : d == 1 ? dy3ty1 : dz3tz1;
    const double dd4 = d == 0 ? dx4tx1 : d == 1 ? dy4ty1 : dz4tz1;
    const double dd5 = d == 0 ? dx5tx1 : d == 1 ? dy5ty1 : dz5tz1;
    const double con2 = d == 0 ? xxcon2 : d == 1 ? yycon2 : zzcon2;
    const double con3 = d == 0 ? xxcon3 : d == 1 ? yycon3 : zzcon3;
    const double con4 = d == 0 ? xxcon4 : d == 1 ? yycon4 : zzcon4;
    const double con5 = d == 0 ? xxcon5 : d == 1 ? yycon5 : zzcon5;
    const double dd[3] = {dd2, dd3, dd4};
    const ptrdiff_t us1 = U_STRIDE(d), as1 = a_stride[d];
    const double *restrict rho = pv.rho, *restrict sq = pv.square, *restrict qsc = pv.qs;
    const double *restrict vn = pv.vel[d]; /* the velocity normal to the direction */
    const ptrdiff_t mn = (d + 1) * u_sm, m4 = 4 * u_sm;
    int lo[3], hi[3];
    interior(cl, lo, hi);
#ifndef SP_ZONE_SOLVER
    OMP_FOR_PLANES
    for (int k = lo[2]; k <= hi[2]; ++k)
        for (int j = lo[1]; j <= hi[1]; ++j)
#endif
            for (int i = lo[0]; i <= hi[0]; ++i) {
                const ptrdiff_t p = UIX(i, j, k), a = AIX(i, j, k), r = RIX(i, j, k);
                const ptrdiff_t pp = p + us1, pm = p - us1, ap = a + as1, am = a - as1;
                const double vijk = vn[a], vp1 = vn[ap], vm1 = vn[am];
                rc[r] += dd1 * (uc[pp] - 2.0 * uc[p] + uc[pm]) - t2 * (uc[pp + mn] - uc[pm + mn]);
                for (int c = 0; c < 3; ++c) {
                    const ptrdiff_t mc = (c + 1) * u_sm;
                    const double diffusion = dd[c] * (uc[pp + mc] - 2.0 * uc[p + mc] + uc[pm + mc]);
                    if (c == d) {
                        rc[r + (c + 1) * r_sm] +=
                            diffusion + con2 * con43 * (vp1 - 2.0 * vijk + vm1) -
                            t2 * (uc[pp + mc] * vp1 - uc[pm + mc] * vm1 +
                                  (uc[pp + m4] - sq[ap] - uc[pm + m4] + sq[am]) * c2);
                    } else {
                        const double *restrict vc = pv.vel[c];
                        rc[r + (c + 1) * r_sm] += diffusion +
                                                  con2 * (vc[ap] - 2.0 * vc[a] + vc[am]) -
                                                  t2 * (uc[pp + mc] * vp1 - uc[pm + mc] * vm1);
                    }
                }
                rc[r + 4 * r_sm] += dd5 * (uc[pp + m4] - 2.0 * uc[p + m4] + uc[pm + m4]) +
                                    con3 * (qsc[ap] - 2.0 * qsc[a] + qsc[am]) +
                                    con4 * (vp1 * vp1 - 2.0 * vijk * vijk + vm1 * vm1) +
                                    con5 * (uc[pp + m4] * rho[ap] - 2.0 * uc[p + m4] * rho[a] +
                                            uc[pm + m4] * rho[am]) -
                                    t2 * ((c1 * uc[pp + m4] - c2 * sq[ap]) * vp1 -
                                          (c1 * uc[pm + m4] - c2 * sq[am]) * vm1);
            }
}

/* compute_rhs of one cell (SP-MZ runs it zone by zone, as NPB-MZ's adi). */
static void compute_rhs_cell(int c)
{
    {
        const struct cell *cl = &cells[c];
        const double *restrict uc = u_cell(c);
        double *restrict rho = aux_cell(rho_i, c), *restrict usc = aux_cell(us, c),
                         *restrict vsc = aux_cell(vs, c), *restrict wsc = aux_cell(ws, c),
                         *restrict sq = aux_cell(square, c), *restrict qsc = aux_cell(qs, c),
                         *restrict spd = aux_cell(speed, c), *restrict ai = aux_cell(ainv, c);
        double *restrict rc = rhs_cell(rhs, c);
        const double *restrict fc = rhs_cell(forcing, c);
        const int n0 = cl->size[0], n1 = cl->size[1], n2 = cl->size[2];
        int lo[3], hi[3];
        interior(cl, lo, hi);
        const ptrdiff_t m1 = u_sm, m2 = 2 * u_sm, m3 = 3 * u_sm, m4 = 4 * u_sm;
        const struct point_values aux = {.rho = rho, .vel = {usc, vsc, wsc}, .square = sq, .qs = qsc};
#pragma omp parallel
        {
            /* Reciprocal density, velocities, kinetic energy, speed of sound. */
            /* With one ghost layer (NPB's MPI SP: -1..n; SP-MZ's zones have none). */
            OMP_FOR_PLANES
            for (int k = -DERIVED_GHOSTS; k < n2 + DERIVED_GHOSTS; ++k)
                for (int j = -DERIVED_GHOSTS; j < n1 + DERIVED_GHOSTS; ++j)
                    for (int i = -DERIVED_GHOSTS; i < n0 + DERIVED_GHOSTS; ++i) {
                        const ptrdiff_t p = UIX(i, j, k), a = AIX(i, j, k);
                        const double rho_inv = 1.0 / uc[p];
                        rho[a] = rho_inv;
                        usc[a] = uc[p + m1] * rho_inv;
                        vsc[a] = uc[p + m2] * rho_inv;
                        wsc[a] = uc[p + m3] * rho_inv;
                        const double s = 0.5 *
                                         (uc[p + m1] * uc[p + m1] + uc[p + m2] * uc[p + m2] +
                                          uc[p + m3] * uc[p + m3]) *
                                         rho_inv;
                        sq[a] = s;
                        qsc[a] = s * rho_inv;
                        const double aux = sqrt(c1c2 * rho_inv * (uc[p + m4] - s));
                        spd[a] = aux;
                        ai[a] = 1.0 / aux;
                    }
#ifdef SP_ZONE_SOLVER
            /* NPB-MZ's compute_rhs: rhs = forcing on the whole zone (a row's points and
             * their components are adjacent), then per interior row (j, k) its fluxes and
             * dissipation along x, the same along y, along z, and the product by dt. Every
             * sweep gives a thread the same rows (one static schedule over the same rows),
             * so only the derived fields (the neighbouring rows') wait for all threads. */
            OMP_FOR_PLANES
            for (int k = 0; k < n2; ++k)
                for (int j = 0; j < n1; ++j) {
                    const ptrdiff_t r = RIX(0, j, k);
                    for (ptrdiff_t q = 0; q < (ptrdiff_t)n0 * PT; ++q) rc[r + q] = fc[r + q];
                }
            for (int d = 0; d < 3; ++d) {
                OMP_FOR_PLANES_NOWAIT
                for (int k = lo[2]; k <= hi[2]; ++k)
                    for (int j = lo[1]; j <= hi[1]; ++j) {
                        add_fluxes(d, cl, uc, rc, aux, k, j);
                        add_dissipation_row(d, cl, uc, rc, k, j);
                    }
            }
            OMP_FOR_PLANES_NOWAIT
            for (int k = lo[2]; k <= hi[2]; ++k)
                for (int j = lo[1]; j <= hi[1]; ++j) {
                    const ptrdiff_t r = RIX(0, j, k);
                    for (ptrdiff_t q = (ptrdiff_t)lo[0] * PT; q < (ptrdiff_t)(hi[0] + 1) * PT; ++q)
                        rc[r + q] *= dt;
                }
#else
            /* The forcing term is known on the whole cell, boundary included. */
            for (int m = 0; m < 5; ++m) {
                OMP_FOR_PLANES
                for (int k = 0; k < n2; ++k)
                    for (int j = 0; j < n1; ++j)
                        for (int i = 0; i < n0; ++i)
                            rc[m * r_sm + RIX(i, j, k)] = fc[m * r_sm + RIX(i, j, k)];
            }

            add_fluxes(0, cl, uc, rc, aux);
            add_dissipation(0, cl, uc, rc);
            add_fluxes(1, cl, uc, rc, aux);
            add_dissipation(1, cl, uc, rc);
            add_fluxes(2, cl, uc, rc, aux);
            add_dissipation(2, cl, uc, rc);

            for (int m = 0; m < 5; ++m) {
                OMP_FOR_PLANES
                for (int k = lo[2]; k <= hi[2]; ++k)
                    for (int j = lo[1]; j <= hi[1]; ++j)
                        for (int i = lo[0]; i <= hi[0]; ++i) rc[m * r_sm + RIX(i, j, k)] *= dt;
            }
#endif
        }
    }
}

static void compute_rhs(void)
{
    for (int c = 0; c < ncells; ++c) compute_rhs_cell(c);
}

/* ------------------------------------------------------------- copy_faces -- */
#ifndef SP_ZONE_SOLVER /* SP-MZ's zones exchange their faces in npb_mz.c */

/* Two layers of u on each face of each cell go to the neighbouring cell's ghosts (all six
 * directions at once: the stencils are orthogonal), then compute_rhs. */
static void copy_faces(void)
{
    if (no_nodes == 1) {
        compute_rhs();
        return;
    }
    size_t offset[6];
    offset[0] = 0;
    for (int f = 1; f < 6; ++f) offset[f] = offset[f - 1] + face_count[f - 1];

    /* Face f = 2d (+d side) or 2d+1 (-d side). */
    size_t fill[6] = {0, 0, 0, 0, 0, 0};
    for (int c = 0; c < ncells; ++c) {
        const struct cell *cl = &cells[c];
        const double *uc = u_cell(c);
        for (int m = 0; m < 5; ++m)
            for (int f = 0; f < 6; ++f) {
                const int d = f / 2, plus = f % 2 == 0;
                if (cl->coord[d] == (plus ? ncells - 1 : 0)) continue;
                int lo[3] = {0, 0, 0}, hi[3];
                for (int e = 0; e < 3; ++e) hi[e] = cl->size[e] - 1;
                if (plus) lo[d] = cl->size[d] - 2;
                else hi[d] = 1;
                double *out = out_buffer + offset[f];
                for (int k = lo[2]; k <= hi[2]; ++k)
                    for (int j = lo[1]; j <= hi[1]; ++j)
                        for (int i = lo[0]; i <= hi[0]; ++i)
                            out[fill[f]++] = uc[m * u_sm + UIX(i, j, k)];
            }
    }
    MPI_Request requests[12];
    for (int f = 0; f < 6; ++f) {
        const int d = f / 2, plus = f % 2 == 0;
        /* Our +d ghosts come from the successor's -d face, and conversely. */
        const int from = plus ? successor[d] : predecessor[d];
        NPB_CHECK_MPI(MPI_Irecv(in_buffer + offset[f], (int)face_count[f], MPI_DOUBLE, from,
                                plus ? 2 * d + 1 : 2 * d, comm_rhs, &requests[f]));
    }
    for (int f = 0; f < 6; ++f) {
        const int d = f / 2, plus = f % 2 == 0;
        const int to = plus ? successor[d] : predecessor[d];
        NPB_CHECK_MPI(MPI_Isend(out_buffer + offset[f], (int)face_count[f], MPI_DOUBLE, to, f,
                                comm_rhs, &requests[6 + f]));
    }
    NPB_CHECK_MPI(MPI_Waitall(12, requests, MPI_STATUSES_IGNORE));

    size_t take[6] = {0, 0, 0, 0, 0, 0};
    for (int c = 0; c < ncells; ++c) {
        const struct cell *cl = &cells[c];
        double *uc = u_cell(c);
        for (int m = 0; m < 5; ++m)
            for (int f = 0; f < 6; ++f) {
                const int d = f / 2, plus = f % 2 == 0;
                if (cl->coord[d] == (plus ? ncells - 1 : 0)) continue;
                int lo[3] = {0, 0, 0}, hi[3];
                for (int e = 0; e < 3; ++e) hi[e] = cl->size[e] - 1;
                if (plus) {
                    lo[d] = cl->size[d];
                    hi[d] = cl->size[d] + 1;
                } else {
                    lo[d] = -2;
                    hi[d] = -1;
                }
                const double *in = in_buffer + offset[f];
                for (int k = lo[2]; k <= hi[2]; ++k)
                    for (int j = lo[1]; j <= hi[1]; ++j)
                        for (int i = lo[0]; i <= hi[0]; ++i)
                            uc[m * u_sm + UIX(i, j, k)] = in[take[f]++];
            }
    }
    compute_rhs();
}
#endif /* !SP_ZONE_SOLVER */

/* ------------------------------------------------------ block-diagonal steps -- */

/* txinvr: rhs <- T_x^-1 rhs at every interior point (before the x solve). */
static void txinvr_cell(int c)
{
    {
        const struct cell *cl = &cells[c];
        const double *restrict rho = aux_cell(rho_i, c), *restrict usc = aux_cell(us, c),
                               *restrict vsc = aux_cell(vs, c), *restrict wsc = aux_cell(ws, c),
                               *restrict spd = aux_cell(speed, c), *restrict ai = aux_cell(ainv, c),
                               *restrict qsc = aux_cell(qs, c);
        double *restrict rc = rhs_cell(rhs, c);
        int lo[3], hi[3];
        interior(cl, lo, hi);
#pragma omp parallel for collapse(2) schedule(static)
        for (int k = lo[2]; k <= hi[2]; ++k)
            for (int j = lo[1]; j <= hi[1]; ++j)
                for (int i = lo[0]; i <= hi[0]; ++i) {
                    const ptrdiff_t a = AIX(i, j, k), r = RIX(i, j, k);
                    const double ru1 = rho[a], uu = usc[a], vv = vsc[a], ww = wsc[a];
                    const double ac = spd[a], ac2inv = ai[a] * ai[a];
                    const double r1 = rc[r], r2 = rc[r + r_sm], r3 = rc[r + 2 * r_sm],
                                 r4 = rc[r + 3 * r_sm], r5 = rc[r + 4 * r_sm];
                    const double t1 = c2 * ac2inv * (qsc[a] * r1 - uu * r2 - vv * r3 - ww * r4 + r5);
                    const double t2 = bt * ru1 * (uu * r1 - r2);
                    const double t3 = (bt * ru1 * ac) * t1;
                    rc[r] = r1 - t1;
                    rc[r + r_sm] = -ru1 * (ww * r1 - r4);
                    rc[r + 2 * r_sm] = ru1 * (vv * r1 - r3);
                    rc[r + 3 * r_sm] = -t2 + t3;
                    rc[r + 4 * r_sm] = t2 + t3;
                }
    }
}

#ifndef SP_ZONE_SOLVER /* SP-MZ runs each zone's step by itself (sp_mz.c) */
static void txinvr(void)
{
    for (int c = 0; c < ncells; ++c) txinvr_cell(c);
}
#endif

/* ninvr (d = 0) and pinvr (d = 1): the block-diagonal steps after the x and the y solve
 * (NPB's N^-1 and P^-1 products); they differ in the first three components only. */
static void ninvr_pinvr(int d, int c)
{
    const struct cell *cl = &cells[c];
    double *restrict rc = rhs_cell(rhs, c);
    int lo[3], hi[3];
    interior(cl, lo, hi);
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = lo[2]; k <= hi[2]; ++k)
        for (int j = lo[1]; j <= hi[1]; ++j)
            for (int i = lo[0]; i <= hi[0]; ++i) {
                const ptrdiff_t r = RIX(i, j, k);
                const double r1 = rc[r], r2 = rc[r + r_sm], r3 = rc[r + 2 * r_sm],
                             r4 = rc[r + 3 * r_sm], r5 = rc[r + 4 * r_sm];
                const double t1 = bt * (d == 0 ? r3 : r1), t2 = 0.5 * (r4 + r5);
                const double t3 = bt * (r4 - r5);
                rc[r] = d == 0 ? -r2 : t3;
                rc[r + r_sm] = d == 0 ? r1 : -r3;
                rc[r + 2 * r_sm] = d == 0 ? t3 : r2;
                rc[r + 3 * r_sm] = -t1 + t2;
                rc[r + 4 * r_sm] = t1 + t2;
            }
}

/* tzetar: multiplication by the z eigenvector matrix after the z solve. */
static void tzetar(int c)
{
    const struct cell *cl = &cells[c];
    const double *restrict usc = aux_cell(us, c), *restrict vsc = aux_cell(vs, c),
                           *restrict wsc = aux_cell(ws, c), *restrict spd = aux_cell(speed, c),
                           *restrict ai = aux_cell(ainv, c), *restrict qsc = aux_cell(qs, c);
    const double *restrict uc = u_cell(c);
    double *restrict rc = rhs_cell(rhs, c);
    int lo[3], hi[3];
    interior(cl, lo, hi);
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = lo[2]; k <= hi[2]; ++k)
        for (int j = lo[1]; j <= hi[1]; ++j)
            for (int i = lo[0]; i <= hi[0]; ++i) {
                const ptrdiff_t a = AIX(i, j, k), r = RIX(i, j, k);
                const double xvel = usc[a], yvel = vsc[a], zvel = wsc[a];
                const double ac = spd[a], acinv = ai[a], ac2u = ac * ac;
                const double r1 = rc[r], r2 = rc[r + r_sm], r3 = rc[r + 2 * r_sm],
                             r4 = rc[r + 3 * r_sm], r5 = rc[r + 4 * r_sm];
                const double uzik1 = uc[UIX(i, j, k)], btuz = bt * uzik1;
                const double t1 = btuz * acinv * (r4 + r5), t2 = r3 + t1, t3 = btuz * (r4 - r5);
                rc[r] = t2;
                rc[r + r_sm] = -uzik1 * r2 + xvel * t2;
                rc[r + 2 * r_sm] = uzik1 * r1 + yvel * t2;
                rc[r + 3 * r_sm] = zvel * t2 + t3;
                rc[r + 4 * r_sm] = uzik1 * (-xvel * r2 + yvel * r1) + qsc[a] * t2 +
                                   c2iv * ac2u * t1 + zvel * t3;
            }
}

static void add_cell(int c)
{
    {
        const struct cell *cl = &cells[c];
        double *restrict uc = u_cell(c);
        const double *restrict rc = rhs_cell(rhs, c);
        int lo[3], hi[3];
        interior(cl, lo, hi);
#ifdef SP_ZONE_SOLVER
        /* NPB-MZ's add: the components of a row's interior points, adjacent. */
#pragma omp parallel for collapse(2) schedule(static)
        for (int k = lo[2]; k <= hi[2]; ++k)
            for (int j = lo[1]; j <= hi[1]; ++j) {
                const ptrdiff_t p = UIX(0, j, k), r = RIX(0, j, k);
                for (ptrdiff_t q = (ptrdiff_t)lo[0] * PT; q < (ptrdiff_t)(hi[0] + 1) * PT; ++q)
                    uc[p + q] += rc[r + q];
            }
#else
#pragma omp parallel
        for (int m = 0; m < 5; ++m) {
            OMP_FOR_PLANES
            for (int k = lo[2]; k <= hi[2]; ++k)
                for (int j = lo[1]; j <= hi[1]; ++j)
                    for (int i = lo[0]; i <= hi[0]; ++i)
                        uc[m * u_sm + UIX(i, j, k)] += rc[m * r_sm + RIX(i, j, k)];
        }
#endif
    }
}

#ifndef SP_ZONE_SOLVER /* SP-MZ runs each zone's step by itself (sp_mz.c) */
static void add(void)
{
    for (int c = 0; c < ncells; ++c) add_cell(c);
}
#endif

/* --------------------------------------------------------------------- lhs -- */

/* The lhs coefficients of the sweep along d (NPB's dx*, dttx* ... per direction). */
struct lhs_terms {
    double d_a, d_b, d_max, d_1, dtt1, dtt2, c2dtt1;
};
static inline struct lhs_terms lhs_terms(int d)
{
    if (d == 0) return (struct lhs_terms){dx2, dx5, dxmax, dx1, dttx1, dttx2, c2dttx1};
    if (d == 1) return (struct lhs_terms){dy3, dy5, dymax, dy1, dtty1, dtty2, c2dtty1};
    return (struct lhs_terms){dz4, dz5, dzmax, dz1, dttz1, dttz2, c2dttz1};
}

#ifndef SP_ZONE_SOLVER /* SP-MZ builds each line's lhs in its solve (sp_mz.c) */
/* The three pentadiagonal systems along axis d for cell c: the u system (diagonals la..le
 * = lhs 0..4) from the convective and viscous terms and the fourth-order dissipation, the
 * u+c and u-c systems (lhs 5..9 and 10..14) the same plus/minus dt * speed of sound terms.
 * Loop orders as the original: lines along d inside the transverse loops, then (k, j, i). */
static inline __attribute__((always_inline)) void lhs_build(int d, int c)
{
    const struct cell *cl = &cells[c];
    const double *restrict vel = aux_cell(d == 0 ? us : d == 1 ? vs : ws, c);
    const double *restrict rho = aux_cell(rho_i, c), *restrict spd = aux_cell(speed, c);
    double *restrict L = lhs_cell(c);
    const struct lhs_terms t = lhs_terms(d);
    const double d_a = t.d_a, d_b = t.d_b, d_max = t.d_max, d_1 = t.d_1;
    const double dtt1 = t.dtt1, dtt2 = t.dtt2, c2dtt1 = t.c2dtt1;
    const ptrdiff_t as = a_stride[d], rs = r_stride[d];
    const int ta = d == 2 ? 1 : 2, tb = d == 0 ? 1 : 0; /* outer, inner transverse axes */
    int lo[3], hi[3];
    interior(cl, lo, hi);
    const int n = cl->size[d];
    double *restrict la = L, *restrict lb = L + r_sm, *restrict lc = L + 2 * r_sm,
                     *restrict ld = L + 3 * r_sm, *restrict le = L + 4 * r_sm;
#pragma omp parallel
    {
        double cv[max_cell_dim + 2], rhon[max_cell_dim + 2]; /* index s + 1 */
#pragma omp for collapse(2) schedule(static)
        for (int a = lo[ta]; a <= hi[ta]; ++a)
            for (int b = lo[tb]; b <= hi[tb]; ++b) {
                int pt[3];
                pt[ta] = a;
                pt[tb] = b;
                pt[d] = 0;
                const ptrdiff_t a0 = AIX(pt[0], pt[1], pt[2]), r0 = RIX(pt[0], pt[1], pt[2]);
                for (int s = lo[d] - 1; s <= hi[d] + 1; ++s) {
                    const double ru1 = c3c4 * rho[a0 + s * as];
                    cv[s + 1] = vel[a0 + s * as];
                    rhon[s + 1] = MAX2(MAX2(d_a + con43 * ru1, d_b + c1c5 * ru1),
                                       MAX2(d_max + ru1, d_1));
                }
                for (int s = lo[d]; s <= hi[d]; ++s) {
                    const ptrdiff_t r = r0 + s * rs;
                    la[r] = 0.0;
                    lb[r] = -dtt2 * cv[s] - dtt1 * rhon[s];
                    lc[r] = 1.0 + c2dtt1 * rhon[s + 1];
                    ld[r] = dtt2 * cv[s + 2] - dtt1 * rhon[s + 2];
                    le[r] = 0.0;
                }
            }

        /* Fourth-order dissipation (one-sided rows next to the boundary). */
        int blo[3] = {lo[0], lo[1], lo[2]}, bhi[3] = {hi[0], hi[1], hi[2]};
        if (cl->start[d]) {
            blo[d] = bhi[d] = 1;
            OMP_FOR_PLANES
            for (int k = blo[2]; k <= bhi[2]; ++k)
                for (int j = blo[1]; j <= bhi[1]; ++j)
                    for (int i = blo[0]; i <= bhi[0]; ++i) {
                        const ptrdiff_t r = RIX(i, j, k), r1 = r + rs;
                        lc[r] += comz5;
                        ld[r] -= comz4;
                        le[r] += comz1;
                        lb[r1] -= comz4;
                        lc[r1] += comz6;
                        ld[r1] -= comz4;
                        le[r1] += comz1;
                    }
        }
        blo[d] = 3 * cl->start[d];
        bhi[d] = n - 3 * cl->end[d] - 1;
        OMP_FOR_PLANES
        for (int k = blo[2]; k <= bhi[2]; ++k)
            for (int j = blo[1]; j <= bhi[1]; ++j)
                for (int i = blo[0]; i <= bhi[0]; ++i) {
                    const ptrdiff_t r = RIX(i, j, k);
                    la[r] += comz1;
                    lb[r] -= comz4;
                    lc[r] += comz6;
                    ld[r] -= comz4;
                    le[r] += comz1;
                }
        if (cl->end[d]) {
            blo[d] = bhi[d] = n - 3;
            OMP_FOR_PLANES
            for (int k = blo[2]; k <= bhi[2]; ++k)
                for (int j = blo[1]; j <= bhi[1]; ++j)
                    for (int i = blo[0]; i <= bhi[0]; ++i) {
                        const ptrdiff_t r = RIX(i, j, k), r1 = r + rs;
                        la[r] += comz1;
                        lb[r] -= comz4;
                        lc[r] += comz6;
                        ld[r] -= comz4;
                        la[r1] += comz1;
                        lb[r1] -= comz4;
                        lc[r1] += comz5;
                    }
        }

        /* The u+c and u-c factors. */
        double *restrict pa = L + 5 * r_sm, *restrict pb = L + 6 * r_sm,
                         *restrict pc = L + 7 * r_sm, *restrict pd = L + 8 * r_sm,
                         *restrict pe = L + 9 * r_sm;
        double *restrict ma = L + 10 * r_sm, *restrict mb = L + 11 * r_sm,
                         *restrict mc = L + 12 * r_sm, *restrict md = L + 13 * r_sm,
                         *restrict me = L + 14 * r_sm;
        OMP_FOR_PLANES
        for (int k = lo[2]; k <= hi[2]; ++k)
            for (int j = lo[1]; j <= hi[1]; ++j)
                for (int i = lo[0]; i <= hi[0]; ++i) {
                    const ptrdiff_t r = RIX(i, j, k), a = AIX(i, j, k);
                    pa[r] = la[r];
                    pb[r] = lb[r] - dtt2 * spd[a - as];
                    pc[r] = lc[r];
                    pd[r] = ld[r] + dtt2 * spd[a + as];
                    pe[r] = le[r];
                    ma[r] = la[r];
                    mb[r] = lb[r] + dtt2 * spd[a - as];
                    mc[r] = lc[r];
                    md[r] = ld[r] - dtt2 * spd[a + as];
                    me[r] = le[r];
                }
    }
}

/* ------------------------------------------------------------ line solves -- */

/* One direction's pipelined solve. The Thomas algorithm for pentadiagonal systems: the
 * forward elimination normalizes row s and eliminates it from rows s+1 and s+2; the last
 * two rows of a cell are normalized and passed on (with their rhs) to the next cell of the
 * line; the back substitution runs the other way with two solved rows passed back. */

/* The points of cell c's interior planes from..to (step +1 or -1) along sweep axis d, the
 * body run with p the point's rhs/lhs offset, in NPB's loop orders: for z, the j rows of
 * every k plane shared among the threads (the same rows to the same thread at every k);
 * for y, the k planes shared, j inside; for x, the (k, j) lines shared. No barrier at the
 * end (nowait). */
#define SWEEP_POINTS(d, lo, hi, from, to, step, p, ...)                                      \
    do {                                                                                     \
        if ((d) == 2) {                                                                      \
            for (int k = (from); (step) > 0 ? k <= (to) : k >= (to); k += (step)) {          \
                _Pragma("omp for schedule(static) nowait")                                   \
                for (int j = (lo)[1]; j <= (hi)[1]; ++j)                                     \
                    for (int i = (lo)[0]; i <= (hi)[0]; ++i) {                               \
                        const ptrdiff_t p = RIX(i, j, k);                                    \
                        __VA_ARGS__;                                                         \
                    }                                                                        \
            }                                                                                \
        } else if ((d) == 1) {                                                               \
            _Pragma("omp for schedule(static) nowait")                                       \
            for (int k = (lo)[2]; k <= (hi)[2]; ++k)                                         \
                for (int j = (from); (step) > 0 ? j <= (to) : j >= (to); j += (step))        \
                    for (int i = (lo)[0]; i <= (hi)[0]; ++i) {                               \
                        const ptrdiff_t p = RIX(i, j, k);                                    \
                        __VA_ARGS__;                                                         \
                    }                                                                        \
        } else {                                                                             \
            _Pragma("omp for collapse(2) schedule(static) nowait")                           \
            for (int k = (lo)[2]; k <= (hi)[2]; ++k)                                         \
                for (int j = (lo)[1]; j <= (hi)[1]; ++j)                                     \
                    for (int i = (from); (step) > 0 ? i <= (to) : i >= (to); i += (step)) {  \
                        const ptrdiff_t p = RIX(i, j, k);                                    \
                        __VA_ARGS__;                                                         \
                    }                                                                        \
        }                                                                                    \
    } while (0)

/* Forward elimination of rows 0..n-3 of every line of the cell along axis d, for the lhs
 * set `set` and the nr rhs components from m0 (nr = 3: the u system serves components
 * 0..2). Inside a parallel region; the transverse planes are shared by the threads (for
 * z, the j rows inside every k plane, the same rows to the same thread at every k). */
static inline __attribute__((always_inline)) void forward_rows(int d, int c, int set, int m0,
                                                               int nr)
{
    const struct cell *cl = &cells[c];
    double *L = lhs_cell(c) + 5 * set * r_sm;
    double *restrict la = L, *restrict lb = L + r_sm, *restrict lc = L + 2 * r_sm,
                     *restrict ld = L + 3 * r_sm, *restrict le = L + 4 * r_sm;
    double *restrict r = rhs_cell(rhs, c) + m0 * r_sm;
    const ptrdiff_t rm = r_sm;
    const ptrdiff_t st = d == 0 ? 1 : r_stride[d];
    int lo[3], hi[3];
    interior(cl, lo, hi);
    lo[d] = 0;
    hi[d] = cl->size[d] - 3;
#define ELIMINATE_ROW(p)                                                                     \
    do {                                                                                     \
        const ptrdiff_t p1 = (p) + st, p2 = (p) + 2 * st;                                    \
        const double fac1 = 1.0 / lc[p];                                                     \
        ld[p] = fac1 * ld[p];                                                                \
        le[p] = fac1 * le[p];                                                                \
        for (int m = 0; m < nr; ++m) r[m * rm + (p)] = fac1 * r[m * rm + (p)];               \
        lc[p1] = lc[p1] - lb[p1] * ld[p];                                                    \
        ld[p1] = ld[p1] - lb[p1] * le[p];                                                    \
        for (int m = 0; m < nr; ++m) r[m * rm + p1] = r[m * rm + p1] - lb[p1] * r[m * rm + (p)]; \
        lb[p2] = lb[p2] - la[p2] * ld[p];                                                    \
        lc[p2] = lc[p2] - la[p2] * le[p];                                                    \
        for (int m = 0; m < nr; ++m) r[m * rm + p2] = r[m * rm + p2] - la[p2] * r[m * rm + (p)]; \
    } while (0)
    SWEEP_POINTS(d, lo, hi, 0, cl->size[d] - 3, 1, p, ELIMINATE_ROW(p));
#undef ELIMINATE_ROW

    /* The last two rows: no rows below to eliminate into; both normalized. */
    int blo[3] = {lo[0], lo[1], lo[2]}, bhi[3] = {hi[0], hi[1], hi[2]};
    blo[d] = bhi[d] = cl->size[d] - 2;
    /* No barrier is needed before this loop: its static schedule gives every thread the
     * same lines (the same logical iteration numbers) as the elimination loop above. */
    OMP_FOR_PLANES
    for (int k = blo[2]; k <= bhi[2]; ++k)
        for (int j = blo[1]; j <= bhi[1]; ++j)
            for (int i = blo[0]; i <= bhi[0]; ++i) {
                const ptrdiff_t p = RIX(i, j, k), p1 = p + st;
                const double fac1 = 1.0 / lc[p];
                ld[p] = fac1 * ld[p];
                le[p] = fac1 * le[p];
                for (int m = 0; m < nr; ++m) r[m * rm + p] = fac1 * r[m * rm + p];
                lc[p1] = lc[p1] - lb[p1] * ld[p];
                ld[p1] = ld[p1] - lb[p1] * le[p];
                for (int m = 0; m < nr; ++m) r[m * rm + p1] = r[m * rm + p1] - lb[p1] * r[m * rm + p];
                const double fac2 = 1.0 / lc[p1];
                ld[p1] = fac2 * ld[p1];
                le[p1] = fac2 * le[p1];
                for (int m = 0; m < nr; ++m) r[m * rm + p1] = fac2 * r[m * rm + p1];
            }
}

/* Back substitution of rows n-3..0 of component m of cell c along axis d, lhs set `set`.
 * Inside a parallel region. */
static inline __attribute__((always_inline)) void backward_rows(int d, int c, int set, int m)
{
    const struct cell *cl = &cells[c];
    const double *L = lhs_cell(c) + 5 * set * r_sm;
    const double *restrict ld = L + 3 * r_sm, *restrict le = L + 4 * r_sm;
    double *restrict r = rhs_cell(rhs, c) + m * r_sm;
    const ptrdiff_t st = d == 0 ? 1 : r_stride[d];
    int lo[3], hi[3];
    interior(cl, lo, hi);
    SWEEP_POINTS(d, lo, hi, cl->size[d] - 3, 0, -1, p,
                 r[p] = r[p] - ld[p] * r[p + st] - le[p] * r[p + 2 * st]);
}

/* The transverse points of the interior of cell c for a sweep along d, in NPB's order
 * (outer: the higher axis), as offsets of the line's point 0 in the rhs/lhs arrays. */
#define FOR_LINES(cl, d, base)                                                               \
    for (int ta_ = (cl)->start[(d) == 2 ? 1 : 2];                                            \
         ta_ <= (cl)->size[(d) == 2 ? 1 : 2] - (cl)->end[(d) == 2 ? 1 : 2] - 1; ++ta_)       \
        for (int tb_ = (cl)->start[(d) == 0 ? 1 : 0];                                        \
             tb_ <= (cl)->size[(d) == 0 ? 1 : 0] - (cl)->end[(d) == 0 ? 1 : 0] - 1; ++tb_)   \
            for (ptrdiff_t base = (ptrdiff_t)ta_ * r_stride[(d) == 2 ? 1 : 2] +              \
                                  (ptrdiff_t)tb_ * r_stride[(d) == 0 ? 1 : 0],               \
                           once_ = 1;                                                        \
                 once_; once_ = 0)

static int line_count(const struct cell *cl, int d)
{
    int count = 1;
    for (int e = 0; e < 3; ++e)
        if (e != d) count *= cl->size[e] - cl->start[e] - cl->end[e];
    return count;
}

/* Forward message: for every line, rows n-2 and n-1 after elimination: (ld, le, rhs 0..2)
 * of the u system, then for components 3 and 4 (ld, le, rhs) of their systems. */
static void pack_forward(int d, int c)
{
    const struct cell *cl = &cells[c];
    const double *L = lhs_cell(c), *R = rhs_cell(rhs, c);
    const ptrdiff_t st = r_stride[d], last = (ptrdiff_t)(cl->size[d] - 2) * st;
    size_t q = 0;
    FOR_LINES(cl, d, base) {
        for (int row = 0; row < 2; ++row) {
            const ptrdiff_t p = base + last + row * st;
            out_buffer[q++] = L[3 * r_sm + p];
            out_buffer[q++] = L[4 * r_sm + p];
            for (int m = 0; m < 3; ++m) out_buffer[q++] = R[m * r_sm + p];
        }
    }
    for (int m = 3; m < 5; ++m) {
        const double *S = L + 5 * (m - 2) * r_sm;
        FOR_LINES(cl, d, base) {
            for (int row = 0; row < 2; ++row) {
                const ptrdiff_t p = base + last + row * st;
                out_buffer[q++] = S[3 * r_sm + p];
                out_buffer[q++] = S[4 * r_sm + p];
                out_buffer[q++] = R[m * r_sm + p];
            }
        }
    }
}

/* Receiving the predecessor's last two rows: eliminate them from rows 0 and 1. */
static void unpack_forward(int d, int c)
{
    const struct cell *cl = &cells[c];
    double *L = lhs_cell(c), *R = rhs_cell(rhs, c);
    const ptrdiff_t st = r_stride[d];
    size_t q = 0;
    for (int group = 0; group < 3; ++group) {
        /* group 0: the u system and rhs 0..2; 1, 2: the u+c, u-c systems and rhs 3, 4. */
        double *S = L + 5 * group * r_sm;
        double *la = S, *lb = S + r_sm, *lc = S + 2 * r_sm, *ld = S + 3 * r_sm;
        const int m0 = group == 0 ? 0 : group + 2, nr = group == 0 ? 3 : 1;
        FOR_LINES(cl, d, base) {
            const ptrdiff_t p = base, p1 = base + st;
            const double *in = in_buffer + q;
            /* in: row n-2 (d1, e1, s1[nr]), row n-1 (d2, e2, s2[nr]) of the predecessor. */
            lb[p] = lb[p] - in[0] * la[p];
            lc[p] = lc[p] - in[1] * la[p];
            for (int m = 0; m < nr; ++m) R[(m0 + m) * r_sm + p] -= in[2 + m] * la[p];
            const double dd = in[2 + nr], ee = in[3 + nr];
            const double r1 = lb[p];
            lc[p] = lc[p] - dd * r1;
            ld[p] = ld[p] - ee * r1;
            for (int m = 0; m < nr; ++m) R[(m0 + m) * r_sm + p] -= in[4 + nr + m] * r1;
            const double r2 = la[p1];
            lb[p1] = lb[p1] - dd * r2;
            lc[p1] = lc[p1] - ee * r2;
            for (int m = 0; m < nr; ++m) R[(m0 + m) * r_sm + p1] -= in[4 + nr + m] * r2;
            q += 2 * (2 + nr);
        }
    }
}

/* Backward message: rows 0 and 1 of every line, solved, component by component. */
static void pack_backward(int d, int c)
{
    const struct cell *cl = &cells[c];
    const double *R = rhs_cell(rhs, c);
    const ptrdiff_t st = r_stride[d];
    size_t q = 0;
    for (int m = 0; m < 5; ++m) {
        FOR_LINES(cl, d, base) {
            out_buffer[q++] = R[m * r_sm + base];
            out_buffer[q++] = R[m * r_sm + base + st];
        }
    }
}

/* Receiving the successor's first two solved rows: finish rows n-1 and n-2; or, in the
 * last cell of the line, row n-1 is already solved. */
static void unpack_backward(int d, int c, int have_message)
{
    const struct cell *cl = &cells[c];
    const double *L = lhs_cell(c);
    double *R = rhs_cell(rhs, c);
    const ptrdiff_t st = r_stride[d];
    const ptrdiff_t i1 = (ptrdiff_t)(cl->size[d] - 1) * st, i0 = i1 - st; /* n-1, n-2 */
    size_t q = 0;
    for (int m = 0; m < 5; ++m) {
        const double *S = L + 5 * (m < 3 ? 0 : m - 2) * r_sm;
        const double *ld = S + 3 * r_sm, *le = S + 4 * r_sm;
        double *r = R + m * r_sm;
        FOR_LINES(cl, d, base) {
            if (have_message) {
                const double sm1 = in_buffer[q], sm2 = in_buffer[q + 1];
                q += 2;
                r[base + i1] = r[base + i1] - ld[base + i1] * sm1 - le[base + i1] * sm2;
                r[base + i0] = r[base + i0] - ld[base + i0] * r[base + i1] - le[base + i0] * sm1;
            } else {
                r[base + i0] = r[base + i0] - ld[base + i0] * r[base + i1];
            }
        }
    }
}
#endif /* !SP_ZONE_SOLVER */

static void invert_block(int d, int c)
{
    if (d < 2) ninvr_pinvr(d, c);
    else tzetar(c);
}

#ifndef SP_ZONE_SOLVER /* the multi-partition's pipelined line solves, continued */
static void forward_cell(int d, int c)
{
#pragma omp parallel
    {
        if (d == 0) {
            forward_rows(0, c, 0, 0, 3);
            forward_rows(0, c, 1, 3, 1);
            forward_rows(0, c, 2, 4, 1);
        } else if (d == 1) {
            forward_rows(1, c, 0, 0, 3);
            forward_rows(1, c, 1, 3, 1);
            forward_rows(1, c, 2, 4, 1);
        } else {
            forward_rows(2, c, 0, 0, 3);
            forward_rows(2, c, 1, 3, 1);
            forward_rows(2, c, 2, 4, 1);
        }
    }
}

static void backward_cell(int d, int c)
{
#pragma omp parallel
    {
        for (int m = 0; m < 5; ++m) {
            const int set = m < 3 ? 0 : m - 2;
            if (d == 0) backward_rows(0, c, set, m);
            else if (d == 1) backward_rows(1, c, set, m);
            else backward_rows(2, c, set, m);
        }
    }
}

static void build_lhs(int d, int c)
{
    if (d == 0) lhs_build(0, c);
    else if (d == 1) lhs_build(1, c);
    else lhs_build(2, c);
}

/* x_solve, y_solve, z_solve: the pipelined sweep through this rank's cells along d. */
static void solve(int d)
{
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    for (int stage = 0; stage < ncells; ++stage) {
        const int c = slice_cell[d][stage];
        const int count = line_count(&cells[c], d);
        if (stage > 0) {
            NPB_CHECK_MPI(MPI_Irecv(in_buffer, 22 * count, MPI_DOUBLE, predecessor[d], 0,
                                    comm_solve, &requests[0]));
            build_lhs(d, c); /* while the message travels */
            NPB_CHECK_MPI(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
            unpack_forward(d, c);
        } else {
            build_lhs(d, c);
        }
        forward_cell(d, c);
        if (stage < ncells - 1) {
            pack_forward(d, c);
            NPB_CHECK_MPI(MPI_Isend(out_buffer, 22 * count, MPI_DOUBLE, successor[d], 0,
                                    comm_solve, &requests[1]));
        }
    }
    for (int stage = ncells - 1; stage >= 0; --stage) {
        const int c = slice_cell[d][stage];
        const int count = line_count(&cells[c], d);
        if (stage < ncells - 1) {
            NPB_CHECK_MPI(MPI_Irecv(in_buffer, 10 * count, MPI_DOUBLE, successor[d], 0,
                                    comm_solve, &requests[0]));
            invert_block(d, slice_cell[d][stage + 1]); /* the cell finished last stage */
            NPB_CHECK_MPI(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
            unpack_backward(d, c, 1);
        } else {
            unpack_backward(d, c, 0);
        }
        backward_cell(d, c);
        if (stage > 0) {
            pack_backward(d, c);
            NPB_CHECK_MPI(MPI_Isend(out_buffer, 10 * count, MPI_DOUBLE, predecessor[d], 0,
                                    comm_solve, &requests[1]));
        } else {
            invert_block(d, c);
        }
    }
}

static void adi(void)
{
    copy_faces();
    txinvr();
    solve(0);
    solve(1);
    solve(2);
    add();
}
#endif /* !SP_ZONE_SOLVER */

/* ------------------------------------------------------------ verification -- */

/* Adds to work[m] the squared error against the exact solution of every point of cell c. */
static void error_sums(int c, double work[5])
{
    {
        const struct cell *cl = &cells[c];
        const double *uc = u_cell(c);
        for (int k = 0; k < cl->size[2]; ++k)
            for (int j = 0; j < cl->size[1]; ++j)
                for (int i = 0; i < cl->size[0]; ++i) {
                    double exact[5];
                    npb_adi_exact_solution((double)(i + cl->low[0]) * dnxm1,
                                   (double)(j + cl->low[1]) * dnym1,
                                   (double)(k + cl->low[2]) * dnzm1, exact);
                    for (int m = 0; m < 5; ++m) {
                        const double diff = uc[m * u_sm + UIX(i, j, k)] - exact[m];
                        work[m] += diff * diff;
                    }
                }
    }
}

/* Adds to work[m] the squared rhs of every interior point of cell c. */
static void rhs_sums(int c, double work[5])
{
    const struct cell *cl = &cells[c];
    const double *rc = rhs_cell(rhs, c);
    int lo[3], hi[3];
    interior(cl, lo, hi);
    for (int k = lo[2]; k <= hi[2]; ++k)
        for (int j = lo[1]; j <= hi[1]; ++j)
            for (int i = lo[0]; i <= hi[0]; ++i)
                for (int m = 0; m < 5; ++m) {
                    const double v = rc[m * r_sm + RIX(i, j, k)];
                    work[m] += v * v;
                }
}

/* Test hook: HPCEVAL_SP_REFERENCE_SCALE=x multiplies the reference values (a wrong
 * reference must fail verification; tests/test_npb_sp.py checks that it does). */
static double reference_scale(void)
{
    const char *text = getenv("HPCEVAL_SP_REFERENCE_SCALE");
    if (text == NULL || *text == '\0') return 1.0;
    char *end = NULL;
    const double x = strtod(text, &end);
    if (end == text || *end != '\0' || !(x > 0.0))
        npb_fail("HPCEVAL_SP_REFERENCE_SCALE: '%s' is not a positive number", text);
    return x;
}

#ifndef SP_ZONE_SOLVER
static void error_norm(double rms[5])
{
    double work[5] = {0, 0, 0, 0, 0};
    for (int c = 0; c < ncells; ++c) error_sums(c, work);
    npb_rms_norms(work, grid_points, comm_setup, rms);
}

static void rhs_norm(double rms[5])
{
    double work[5] = {0, 0, 0, 0, 0};
    for (int c = 0; c < ncells; ++c) rhs_sums(c, work);
    npb_rms_norms(work, grid_points, comm_setup, rms);
}

/* -------------------------------------------------------------------- main -- */

/* Official Mop/s of SP: a fit of the operation count in the grid size (NPB 3.4). */
static double sp_mops(double seconds)
{
    const double n3 = (double)grid_points[0] * grid_points[1] * grid_points[2];
    const double t = (grid_points[0] + grid_points[1] + grid_points[2]) / 3.0;
    return 1.0e-6 * niter * (881.174 * n3 - 4683.91 * t * t + 11484.5 * t - 19272.4) / seconds;
}

int main(int argc, char **argv)
{
    struct npb_options opt;
    npb_start(&argc, &argv, "sp", &opt, &node, &no_nodes);
    const struct sp_class *cls = NPB_CLASS_ENTRY(sp_classes, opt.class_name);
    const double scale = reference_scale();
    ncells = npb_square_cells("sp", no_nodes, MAX_CELLS);
    NPB_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_setup));
    NPB_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_solve));
    NPB_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_rhs));

    grid_points[0] = grid_points[1] = grid_points[2] = cls->size;
    niter = cls->niter;
    dt = cls->dt;
    make_set();

    char problem[160];
    snprintf(problem, sizeof problem,
             "{\"nx\":%d,\"ny\":%d,\"nz\":%d,\"niter\":%d,\"dt\":%.17g}", grid_points[0],
             grid_points[1], grid_points[2], niter, dt);
    npb_print_header("sp", cls->name, problem);

    alloc_space();
    const double spacing[3] = {1.0 / (double)(grid_points[0] - 1),
                               1.0 / (double)(grid_points[1] - 1),
                               1.0 / (double)(grid_points[2] - 1)};
    set_constants(spacing);
    initialize();
    lhsinit();
    exact_rhs();

    /* One untimed step touches all code and memory, then the start again (as NPB). */
    adi();
    initialize();

    NPB_CHECK_MPI(MPI_Barrier(comm_setup));
    const double t0 = MPI_Wtime();
    for (int step = 1; step <= niter; ++step) adi();
    const double t_local = MPI_Wtime() - t0;
    double t;
    NPB_CHECK_MPI(MPI_Allreduce(&t_local, &t, 1, MPI_DOUBLE, MPI_MAX, comm_setup));

    double xce[5], xcr[5];
    error_norm(xce);
    copy_faces();
    rhs_norm(xcr);
    for (int m = 0; m < 5; ++m) xcr[m] /= dt;

    const int status = npb_report_norms("sp", cls->name, t, t > 0.0 ? sp_mops(t) : 0.0, niter, xcr,
                                        cls->xcr, xce, cls->xce, scale, NPB_SP_EPSILON);
    free_space();
    NPB_CHECK_MPI(MPI_Comm_free(&comm_rhs));
    NPB_CHECK_MPI(MPI_Comm_free(&comm_solve));
    NPB_CHECK_MPI(MPI_Comm_free(&comm_setup));
    NPB_CHECK_MPI(MPI_Finalize());
    return status;
}
#endif /* SP_ZONE_SOLVER */
