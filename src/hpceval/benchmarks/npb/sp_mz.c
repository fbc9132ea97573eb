/* NPB SP-MZ (NPB3.4-MZ definition): SP's scalar pentadiagonal ADI solver on every zone of
 * a multi-zone mesh of equal zones, C + MPI + OpenMP.
 *
 * Every zone is a whole SP grid of nx x ny x nz points (boundary included) with the zone
 * mesh's grid step (NPB-MZ's dnxm1 = x_zones / (gx_size - 1), dnym1 likewise,
 * dnzm1 = 1 / (gz_size - 1)) in local coordinates. Each time step exchanges the zones' x
 * and y boundary values (npb_mz.h), then runs SP's step on each zone: compute_rhs, txinvr,
 * the x, y and z pentadiagonal solves with ninvr, pinvr, tzetar, and the update, all from
 * sp.c (compiled in with SP_ZONE_SOLVER, one "cell" per zone with the grid boundary on all
 * six sides; the line solves here). A zone's arrays are NPB-MZ's: u, rhs and forcing
 * u(5, 0:nxmax-1, 0:ny-1, 0:nz-1), the five components of a point adjacent, nxmax = nx
 * rounded up to odd, no ghost layers; compute_rhs adds each row's fluxes and dissipation
 * in turn, as NPB-MZ's. Zones go to the ranks by NPB-MZ's map_zones (block distribution where the
 * rank count allows, else bin packing), a rank's OpenMP threads share each zone
 * (npb_mz.h). Verification (NPB-MZ's verify): the per-zone RMS norms of the residual / dt
 * and of the error, summed over the zones, against the SP-MZ reference values, relative
 * tolerance 1e-8. */
#define SP_ZONE_SOLVER
#include "sp.c"

#include "npb_mz.h"

struct sp_mz_class {
    char name;
    int gx, gy, gz, x_zones, y_zones;
    int niter;
    double dt;
    double xcr[5], xce[5];
};

/* NPB3.4-MZ setparams.c (SP-MZ) and SP-MZ/verify.f. */
static const struct sp_mz_class mz_classes[] = {
    {'S', 24, 24, 6, 2, 2, 100, 0.015,
     {0.7698876173566e+01, 0.1517766790280e+01, 0.2686805141546e+01, 0.1893688083690e+01,
      0.1369739859738e+02},
     {0.9566808043467e+01, 0.3894109553741e+01, 0.4516022447464e+01, 0.4099103995615e+01,
      0.7776038881521e+01}},
    {'W', 64, 64, 8, 4, 4, 400, 0.0015,
     {0.1887636218359e+03, 0.1489637963542e+02, 0.4851711701400e+02, 0.3384633608154e+02,
      0.4036632495857e+03},
     {0.2975895149929e+02, 0.1341508175806e+02, 0.1585310846491e+02, 0.1450916426713e+02,
      0.5854137431023e+02}},
    {'A', 128, 128, 16, 4, 4, 400, 0.0015,
     {0.2800097900548e+03, 0.2268349014438e+02, 0.7000852739901e+02, 0.5000771004061e+02,
      0.5552068537578e+03},
     {0.3112046666578e+02, 0.1172197785348e+02, 0.1486616708032e+02, 0.1313680576292e+02,
      0.7365834058154e+02}},
    {'B', 304, 208, 17, 8, 8, 400, 0.001,
     {0.5190422977921e+04, 0.3655458539065e+03, 0.1261126592633e+04, 0.1002038338842e+04,
      0.1075902511165e+05},
     {0.5469182054223e+03, 0.4983658028989e+02, 0.1418301776602e+03, 0.1097717156175e+03,
      0.1260195162174e+04}},
    {'C', 480, 320, 28, 16, 16, 400, 0.00067,
     {0.5886814493676e+05, 0.3967324375474e+04, 0.1444126529019e+05, 0.1210582211196e+05,
      0.1278941567976e+06},
     {0.6414069213021e+04, 0.4069468353404e+03, 0.1585311908719e+04, 0.1270243185759e+04,
      0.1441398372869e+05}},
};

static struct npb_mz_mesh mesh;
static struct npb_mz_field *fields; /* per zone of the mesh; this rank's zones set */

/* This rank's zones as SP cells: the grid boundary on every side, local coordinates. */
static void make_zones(void)
{
    ncells = mesh.my_nzones;
    if (ncells > MAX_CELLS) npb_fail("sp-mz: %d zones on one rank, the limit is %d", ncells, MAX_CELLS);
    fields = npb_alloc((size_t)mesh.nzones * sizeof *fields, "zone fields");
    memset(fields, 0, (size_t)mesh.nzones * sizeof *fields);
    for (int c = 0; c < ncells; ++c) {
        struct cell *cl = &cells[c];
        const int z = mesh.my_zones[c];
        const int n[3] = {mesh.nx[z], mesh.ny[z], mesh.nz[z]};
        for (int d = 0; d < 3; ++d) {
            if (n[d] < 5)
                npb_fail("sp-mz: zone %d has %d points along axis %d; SP needs at least 5", z,
                         n[d], d);
            cl->coord[d] = 0;
            cl->size[d] = n[d];
            cl->low[d] = 0;
            cl->start[d] = cl->end[d] = 1;
        }
    }
}

static void locate_fields(void)
{
    for (int c = 0; c < ncells; ++c) {
        struct npb_mz_field *F = &fields[mesh.my_zones[c]];
        F->base = u_cell(c);
        F->si = PT; /* point-major, as NPB-MZ's u(5, 0:nxmax-1, 0:ny-1, 0:nz-1) */
        F->sj = u_sj;
        F->sk = u_sk;
        F->sm = u_sm;
    }
}

/* Initial values of every zone: SP's interpolation, then the exact solution on all six
 * faces (NPB-MZ's initialize). */
static void initialize_zones(void)
{
    interpolate_cells();
    for (int c = 0; c < ncells; ++c)
        for (int d = 0; d < 3; ++d)
            for (int side = 0; side < 2; ++side) set_boundary_face(c, d, side);
}

/* Forward elimination step of one pentadiagonal system (diagonals l[0..4]): normalize row
 * p, eliminate it from row p1 (the row below p1 is the caller's). eliminate_u_row: the u
 * system with its three rhs components. */
static inline __attribute__((always_inline)) void eliminate_row(double *restrict l0,
                                                                double *restrict l1,
                                                                double *restrict rq, ptrdiff_t p,
                                                                ptrdiff_t p1)
{
    const double fac1 = 1.0 / l0[2];
    l0[3] *= fac1;
    l0[4] *= fac1;
    rq[p] *= fac1;
    l1[2] -= l1[1] * l0[3];
    l1[3] -= l1[1] * l0[4];
    rq[p1] -= l1[1] * rq[p];
}
static inline __attribute__((always_inline)) void eliminate_u_row(
    double *restrict l0, double *restrict l1, double *restrict r0, double *restrict r1,
    double *restrict r2, ptrdiff_t p, ptrdiff_t p1)
{
    const double fac1 = 1.0 / l0[2];
    l0[3] *= fac1;
    l0[4] *= fac1;
    r0[p] *= fac1;
    r1[p] *= fac1;
    r2[p] *= fac1;
    l1[2] -= l1[1] * l0[3];
    l1[3] -= l1[1] * l0[4];
    r0[p1] -= l1[1] * r0[p];
    r1[p1] -= l1[1] * r1[p];
    r2[p1] -= l1[1] * r2[p];
}

/* One line's three pentadiagonal systems along d (NPB-MZ's x/y/z_solve: lhs, lhsp and
 * lhsm of a single line, kept in cache, the rhs solved in place). Line point s of set q
 * is L[15 * s + 5 * q + e], e = the diagonals a..e; rows 0 and n-1 are the identity
 * (the zone's grid boundary, NPB's lhsinit). r: the line's point 0 of rhs component 0,
 * st its stride along d; vel, rho, spd: point 0 of the auxiliaries, as their stride. */
static inline __attribute__((always_inline)) void solve_line(
    int d, int n, double *restrict L, double *restrict cv, double *restrict rhon,
    double *restrict r, ptrdiff_t st, const double *restrict vel, const double *restrict rho,
    const double *restrict spd, ptrdiff_t as)
{
    const struct lhs_terms t = lhs_terms(d);
    const double d_a = t.d_a, d_b = t.d_b, d_max = t.d_max, d_1 = t.d_1;
    const double dtt1 = t.dtt1, dtt2 = t.dtt2, c2dtt1 = t.c2dtt1;
    const ptrdiff_t rm = r_sm;
    for (int s = 0; s < n; ++s) {
        const double ru1 = c3c4 * rho[s * as];
        cv[s] = vel[s * as];
        rhon[s] = MAX2(MAX2(d_a + con43 * ru1, d_b + c1c5 * ru1), MAX2(d_max + ru1, d_1));
    }
    for (int q = 0; q < 3; ++q)
        for (int e = 0; e < 5; ++e) {
            L[5 * q + e] = e == 2 ? 1.0 : 0.0;
            L[15 * (n - 1) + 5 * q + e] = e == 2 ? 1.0 : 0.0;
        }
    for (int s = 1; s <= n - 2; ++s) {
        double *l = L + 15 * s;
        l[0] = 0.0;
        l[1] = -dtt2 * cv[s - 1] - dtt1 * rhon[s - 1];
        l[2] = 1.0 + c2dtt1 * rhon[s];
        l[3] = dtt2 * cv[s + 1] - dtt1 * rhon[s + 1];
        l[4] = 0.0;
    }
    /* Fourth-order dissipation, one-sided next to the boundary. */
    L[15 * 1 + 2] += comz5;
    L[15 * 1 + 3] -= comz4;
    L[15 * 1 + 4] += comz1;
    L[15 * 2 + 1] -= comz4;
    L[15 * 2 + 2] += comz6;
    L[15 * 2 + 3] -= comz4;
    L[15 * 2 + 4] += comz1;
    for (int s = 3; s <= n - 4; ++s) {
        double *l = L + 15 * s;
        l[0] += comz1;
        l[1] -= comz4;
        l[2] += comz6;
        l[3] -= comz4;
        l[4] += comz1;
    }
    L[15 * (n - 3) + 0] += comz1;
    L[15 * (n - 3) + 1] -= comz4;
    L[15 * (n - 3) + 2] += comz6;
    L[15 * (n - 3) + 3] -= comz4;
    L[15 * (n - 2) + 0] += comz1;
    L[15 * (n - 2) + 1] -= comz4;
    L[15 * (n - 2) + 2] += comz5;
    /* The u+c and u-c factors. */
    for (int s = 1; s <= n - 2; ++s) {
        double *l = L + 15 * s;
        const double sm = dtt2 * spd[(s - 1) * as], sp = dtt2 * spd[(s + 1) * as];
        l[5] = l[0];
        l[6] = l[1] - sm;
        l[7] = l[2];
        l[8] = l[3] + sp;
        l[9] = l[4];
        l[10] = l[0];
        l[11] = l[1] + sm;
        l[12] = l[2];
        l[13] = l[3] - sp;
        l[14] = l[4];
    }
    /* Forward elimination of the u system (rhs components 0..2), NPB's first loop. */
    double *restrict r0 = r, *restrict r1 = r + rm, *restrict r2 = r + 2 * rm;
    double *restrict r3 = r + 3 * rm, *restrict r4 = r + 4 * rm;
    for (int s = 0; s <= n - 3; ++s) {
        double *l0 = L + 15 * s, *l1 = l0 + 15, *l2 = l0 + 30;
        const ptrdiff_t p = s * st, p1 = p + st, p2 = p1 + st;
        eliminate_u_row(l0, l1, r0, r1, r2, p, p1);
        l2[1] -= l2[0] * l0[3];
        l2[2] -= l2[0] * l0[4];
        r0[p2] -= l2[0] * r0[p];
        r1[p2] -= l2[0] * r1[p];
        r2[p2] -= l2[0] * r2[p];
    }
    /* The u+c and u-c systems (components 3 and 4) in one loop, as NPB. */
    for (int s = 0; s <= n - 3; ++s) {
        double *l0 = L + 15 * s, *l1 = l0 + 15, *l2 = l0 + 30;
        const ptrdiff_t p = s * st, p1 = p + st, p2 = p1 + st;
        eliminate_row(l0 + 5, l1 + 5, r3, p, p1);
        l2[6] -= l2[5] * l0[8];
        l2[7] -= l2[5] * l0[9];
        r3[p2] -= l2[5] * r3[p];
        eliminate_row(l0 + 10, l1 + 10, r4, p, p1);
        l2[11] -= l2[10] * l0[13];
        l2[12] -= l2[10] * l0[14];
        r4[p2] -= l2[10] * r4[p];
    }
    /* The last two rows: no rows below to eliminate into; both normalized. */
    {
        double *l0 = L + 15 * (n - 2), *l1 = l0 + 15;
        const ptrdiff_t p = (ptrdiff_t)(n - 2) * st, p1 = p + st;
        eliminate_u_row(l0, l1, r0, r1, r2, p, p1);
        const double fac2 = 1.0 / l1[2];
        r0[p1] *= fac2;
        r1[p1] *= fac2;
        r2[p1] *= fac2;
        eliminate_row(l0 + 5, l1 + 5, r3, p, p1);
        r3[p1] *= 1.0 / l1[7];
        eliminate_row(l0 + 10, l1 + 10, r4, p, p1);
        r4[p1] *= 1.0 / l1[12];
    }
    /* Back substitution: components 0..2 on the u system, then 3 and 4. */
    {
        const ptrdiff_t p = (ptrdiff_t)(n - 2) * st;
        const double *l = L + 15 * (n - 2);
        r0[p] -= l[3] * r0[p + st];
        r1[p] -= l[3] * r1[p + st];
        r2[p] -= l[3] * r2[p + st];
        r3[p] -= l[8] * r3[p + st];
        r4[p] -= l[13] * r4[p + st];
    }
    for (int s = n - 3; s >= 0; --s) {
        const ptrdiff_t p = s * st, p1 = p + st, p2 = p1 + st;
        const double *l = L + 15 * s;
        r0[p] -= l[3] * r0[p1] + l[4] * r0[p2];
        r1[p] -= l[3] * r1[p1] + l[4] * r1[p2];
        r2[p] -= l[3] * r2[p1] + l[4] * r2[p2];
    }
    for (int s = n - 3; s >= 0; --s) {
        const ptrdiff_t p = s * st, p1 = p + st, p2 = p1 + st;
        const double *l = L + 15 * s;
        r3[p] -= l[8] * r3[p1] + l[9] * r3[p2];
        r4[p] -= l[13] * r4[p1] + l[14] * r4[p2];
    }
}

/* One zone's solve along d: every interior line by itself (NPB-MZ's loop order, the
 * higher transverse axis outside), the lines shared by the threads; then ninvr, pinvr or
 * tzetar over the zone. */
static void solve_zone(int d, int c)
{
    const struct cell *cl = &cells[c];
    const int n = cl->size[d];
    const int ta = d == 2 ? 1 : 2, tb = d == 0 ? 1 : 0; /* outer, inner transverse axes */
    const double *vel = aux_cell(d == 0 ? us : d == 1 ? vs : ws, c);
    const double *rho = aux_cell(rho_i, c), *spd = aux_cell(speed, c);
    double *rc = rhs_cell(rhs, c);
    const ptrdiff_t as = a_stride[d], st = R_STRIDE(d);
    const int na = cl->size[ta] - 2, nb = cl->size[tb] - 2;
#pragma omp parallel
    {
        double L[15 * n], cv[n], rhon[n];
#pragma omp for collapse(2) schedule(static)
        for (int a = 1; a <= na; ++a)
            for (int b = 1; b <= nb; ++b) {
                int pt[3];
                pt[ta] = a;
                pt[tb] = b;
                pt[d] = 0;
                const ptrdiff_t a0 = AIX(pt[0], pt[1], pt[2]), r0 = RIX(pt[0], pt[1], pt[2]);
                if (d == 0)
                    solve_line(0, n, L, cv, rhon, rc + r0, st, vel + a0, rho + a0, spd + a0, as);
                else if (d == 1)
                    solve_line(1, n, L, cv, rhon, rc + r0, st, vel + a0, rho + a0, spd + a0, as);
                else
                    solve_line(2, n, L, cv, rhon, rc + r0, st, vel + a0, rho + a0, spd + a0, as);
            }
    }
    invert_block(d, c);
}

/* One time step of every zone (NPB-MZ's exch_qbc, then adi zone by zone: every stage of a
 * zone's step while its arrays are still in the cache). */
static void step(void)
{
    npb_mz_exchange(&mesh, fields, 5);
    for (int c = 0; c < ncells; ++c) {
        compute_rhs_cell(c);
        txinvr_cell(c);
        for (int d = 0; d < 3; ++d) solve_zone(d, c);
        add_cell(c);
    }
}

/* Sum over the zones of each zone's RMS norm (NPB-MZ's verify): xce of the error, xcr of
 * the residual / dt after one more compute_rhs (without an exchange). */
static void zone_norms(double xce[5], double xcr[5])
{
    double sums[10] = {0};
    compute_rhs();
    for (int c = 0; c < ncells; ++c) {
        const struct cell *cl = &cells[c];
        double e[5] = {0}, r[5] = {0};
        error_sums(c, e);
        rhs_sums(c, r);
        npb_mz_add_zone_norms(
            sums, e, r, (double)(cl->size[0] - 2) * (cl->size[1] - 2) * (cl->size[2] - 2), dt);
    }
    npb_mz_total_norms(sums, xce, xcr);
}

int main(int argc, char **argv)
{
    struct npb_options opt;
    npb_start(&argc, &argv, "sp-mz", &opt, &node, &no_nodes);
    const struct sp_mz_class *cls = NPB_CLASS_ENTRY(mz_classes, opt.class_name);
    const double scale = reference_scale();

    npb_mz_setup(&mesh, cls->x_zones, cls->y_zones, cls->gx, cls->gy, cls->gz, 1.0);
    mesh.try_blocks = 1; /* NPB-MZ tries the block distribution first for SP-MZ */
    npb_mz_start(&mesh, "sp-mz", cls->name, cls->niter, cls->dt, opt.balance_threads);
    niter = cls->niter;
    dt = cls->dt;
    make_zones();

    alloc_space();
    double spacing[3];
    npb_mz_spacing(&mesh, spacing);
    set_constants(spacing);
    locate_fields();
    initialize_zones();
    exact_rhs();

    /* One untimed step touches all code and memory, then the start again (as NPB-MZ). */
    step();
    initialize_zones();

    const double t = npb_mz_timed_steps(step, niter);

    double xce[5], xcr[5];
    zone_norms(xce, xcr);

    struct npb_result result;
    static const double sp_ops[4] = {881.174, -4683.91, 11484.5, -19272.4}; /* NPB3.4-MZ sp.f */
    npb_mz_result(&result, &mesh, "sp-mz", cls->name, niter, sp_ops, t);
    const int status =
        npb_finish_norms(&result, xcr, cls->xcr, xce, cls->xce, scale, NPB_SP_EPSILON);
    free_space();
    free(fields);
    npb_mz_release(&mesh);
    NPB_CHECK_MPI(MPI_Finalize());
    return status;
}
