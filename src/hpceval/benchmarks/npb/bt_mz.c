/* NPB BT-MZ (NPB3.4-MZ definition): BT's block-tridiagonal ADI solver on every zone of a
 * multi-zone mesh of uneven zones, C + MPI + OpenMP.
 *
 * Every zone is a whole BT grid of nx x ny x nz points (boundary included) with the
 * zone mesh's grid step (NPB-MZ's dnxm1 = x_zones / (gx_size - 1), dnym1 likewise,
 * dnzm1 = 1 / (gz_size - 1)) in local coordinates: its own exact solution, initial values
 * and forcing, as BT's on the unit cube. Each time step exchanges the zones' x and y
 * boundary values (npb_mz.h), then runs BT's step on each zone: compute_rhs, the x, y and
 * z block-tridiagonal line solves (one line at a time, as NPB-MZ: no C' block per point)
 * and the update, all from bt.c (compiled in here with
 * BT_ZONE_SOLVER, one "cell" per zone with the grid boundary on all six sides). The zones
 * go to the ranks by NPB-MZ's bin packing; a rank's OpenMP threads share each of its
 * zones (npb_mz.h: their number per rank). Verification (NPB-MZ's verify): the per-zone RMS norms of the residual / dt and
 * of the error, summed over the zones, against the BT-MZ reference values, relative
 * tolerance 1e-8. */
#define BT_ZONE_SOLVER
#include "bt.c"

#include "npb_mz.h"

struct bt_mz_class {
    char name;
    int gx, gy, gz, x_zones, y_zones;
    double ratio; /* largest / smallest zone per axis */
    int niter;
    double dt;
    double xcr[5], xce[5];
};

/* NPB3.4-MZ setparams.c (BT-MZ) and BT-MZ/verify.f. */
static const struct bt_mz_class mz_classes[] = {
    {'S', 24, 24, 6, 2, 2, 3.0, 60, 0.010,
     {0.1047687395830e+04, 0.9419911314792e+02, 0.2124737403068e+03, 0.1422173591794e+03,
      0.1135441572375e+04},
     {0.1775416062982e+03, 0.1875540250835e+02, 0.3863334844506e+02, 0.2634713890362e+02,
      0.1965566269675e+03}},
    {'W', 64, 64, 8, 4, 4, 4.5, 200, 0.0008,
     {0.5562611195402e+05, 0.5151404119932e+04, 0.1080453907954e+05, 0.6576058591929e+04,
      0.4528609293561e+05},
     {0.7185154786403e+04, 0.7040472738068e+03, 0.1437035074443e+04, 0.8570666307849e+03,
      0.5991235147368e+04}},
    {'A', 128, 128, 16, 4, 4, 4.5, 200, 0.0008,
     {0.5536703889522e+05, 0.5077835038405e+04, 0.1067391361067e+05, 0.6441179694972e+04,
      0.4371926324069e+05},
     {0.6716797714343e+04, 0.6512687902160e+03, 0.1332930740128e+04, 0.7848302089180e+03,
      0.5429053878818e+04}},
    {'B', 304, 208, 17, 8, 8, 4.5, 200, 0.0003,
     {0.4461388343844e+06, 0.3799759138035e+05, 0.8383296623970e+05, 0.5301970201273e+05,
      0.3618106851311e+06},
     {0.4496733567600e+05, 0.3892068540524e+04, 0.8763825844217e+04, 0.5599040091792e+04,
      0.4082652045598e+05}},
    {'C', 480, 320, 28, 16, 16, 4.5, 200, 0.0001,
     {0.3457703287806e+07, 0.3213621375929e+06, 0.7002579656870e+06, 0.4517459627471e+06,
      0.2818715870791e+07},
     {0.2059106993570e+06, 0.1680761129461e+05, 0.4080731640795e+05, 0.2836541076778e+05,
      0.2136807610771e+06}},
    {'D', 1632, 1216, 34, 32, 32, 4.5, 250, 0.00002,
     {0.4250417034981e+08, 0.4293882192175e+07, 0.9121841878270e+07, 0.6201357771439e+07,
      0.3474801891304e+08},
     {0.9462418484583e+06, 0.7884728947105e+05, 0.1902874461259e+06, 0.1361858029909e+06,
      0.9816489456253e+06}},
};

static struct npb_mz_mesh mesh;
static struct npb_mz_field *fields; /* per zone of the mesh; this rank's zones set */

/* This rank's zones as BT cells: the grid boundary on every side, local coordinates. */
static void make_zones(void)
{
    ncells = mesh.my_nzones;
    cells = npb_alloc((size_t)(ncells > 0 ? ncells : 1) * sizeof *cells, "zones");
    memset(cells, 0, (size_t)(ncells > 0 ? ncells : 1) * sizeof *cells);
    fields = npb_alloc((size_t)mesh.nzones * sizeof *fields, "zone fields");
    memset(fields, 0, (size_t)mesh.nzones * sizeof *fields);
    for (int c = 0; c < ncells; ++c) {
        struct cell *C = &cells[c];
        const int z = mesh.my_zones[c];
        const int n[3] = {mesh.nx[z], mesh.ny[z], mesh.nz[z]};
        for (int a = 0; a < 3; ++a) {
            if (n[a] < 5)
                npb_fail("bt-mz: zone %d has %d points along axis %d; BT needs at least 5", z,
                         n[a], a);
            C->size[a] = n[a];
            C->low[a] = 0;
            C->start[a] = C->end[a] = 1;
            C->dim[a] = n[a] + 2 * GHOST;
        }
        C->stride[0] = 1;
        C->stride[1] = C->dim[0];
        C->stride[2] = (ptrdiff_t)C->dim[0] * C->dim[1];
        C->points = (size_t)C->dim[0] * C->dim[1] * C->dim[2];
    }
}

static void locate_fields(void)
{
    for (int c = 0; c < ncells; ++c) {
        struct cell *C = &cells[c];
        struct npb_mz_field *F = &fields[mesh.my_zones[c]];
        F->base = C->u + 5 * at(C, 0, 0, 0);
        F->si = 5;
        F->sj = 5 * C->stride[1];
        F->sk = 5 * C->stride[2];
        F->sm = 1;
    }
}

/* Initial values of every zone: BT's interpolation, then the exact solution on all six
 * faces (NPB-MZ's initialize). */
static void initialize_zones(void)
{
    for (int c = 0; c < ncells; ++c) {
        struct cell *C = &cells[c];
        initialize_cell(C);
        for (int a = 0; a < 3; ++a) {
            set_exact_face(C, a, 0, 0.0);
            set_exact_face(C, a, C->size[a] - 1, 1.0);
        }
    }
}

/* One time step of every zone (NPB-MZ's exch_qbc, then adi per zone). */
static void step(void)
{
    npb_mz_exchange(&mesh, fields, 5);
    for (int c = 0; c < ncells; ++c) {
        struct cell *C = &cells[c];
        compute_rhs_cell(C);
        for (int a = 0; a < 3; ++a) solve_zone(C, a);
        add_cell(C);
    }
}

/* Sum over the zones of each zone's RMS norm (NPB-MZ's verify): xce of the error, xcr of
 * the residual / dt after one more compute_rhs (without an exchange). */
static void zone_norms(double xce[5], double xcr[5])
{
    double sums[10] = {0};
    for (int c = 0; c < ncells; ++c) {
        struct cell *C = &cells[c];
        double e[5] = {0}, r[5] = {0};
        error_sums(C, e);
        compute_rhs_cell(C);
        rhs_sums(C, r);
        npb_mz_add_zone_norms(sums, e, r,
                              (double)(C->size[0] - 2) * (C->size[1] - 2) * (C->size[2] - 2), dt);
    }
    npb_mz_total_norms(sums, xce, xcr);
}

int main(int argc, char **argv)
{
    struct npb_options opt;
    npb_start(&argc, &argv, "bt-mz", &opt, &my_rank, &nranks);
    const struct bt_mz_class *cls = NPB_CLASS_ENTRY(mz_classes, opt.class_name);

    npb_mz_setup(&mesh, cls->x_zones, cls->y_zones, cls->gx, cls->gy, cls->gz, cls->ratio);
    npb_mz_start(&mesh, "bt-mz", cls->name, cls->niter, cls->dt, opt.balance_threads);
    dt = cls->dt;
    make_zones();

    double spacing[3];
    npb_mz_spacing(&mesh, spacing);
    set_constants(spacing);
    allocate();
    locate_fields();
    initialize_zones();
    exact_rhs();

    /* One untimed step touches all code and data, then the start again (as NPB-MZ). */
    step();
    initialize_zones();

    const double t = npb_mz_timed_steps(step, cls->niter);

    double xce[5], xcr[5];
    zone_norms(xce, xcr);

    struct npb_result result;
    static const double bt_ops[4] = {3478.8, -17655.7, 28023.7, 0.0}; /* NPB3.4-MZ bt.f */
    npb_mz_result(&result, &mesh, "bt-mz", cls->name, cls->niter, bt_ops, t);
    const int status = npb_finish_norms(&result, xcr, cls->xcr, xce, cls->xce,
                                        1.0 + BT_REFERENCE_ERROR, BT_TOLERANCE);
    release();
    free(fields);
    npb_mz_release(&mesh);
    NPB_CHECK_MPI(MPI_Finalize());
    return status;
}
