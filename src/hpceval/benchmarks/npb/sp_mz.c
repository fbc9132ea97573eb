/* NPB SP-MZ (NPB3.4-MZ definition): SP's scalar pentadiagonal ADI solver on every zone of
 * a multi-zone mesh of equal zones, C + MPI + OpenMP.
 *
 * Every zone is a whole SP grid of nx x ny x nz points (boundary included) with the zone
 * mesh's grid step (NPB-MZ's dnxm1 = x_zones / (gx_size - 1), dnym1 likewise,
 * dnzm1 = 1 / (gz_size - 1)) in local coordinates. Each time step exchanges the zones' x
 * and y boundary values (npb_mz.h), then runs SP's step on each zone: compute_rhs, txinvr,
 * the x, y and z pentadiagonal solves with ninvr, pinvr, tzetar, and the update, all from
 * sp.c (compiled in with SP_ZONE_SOLVER, one "cell" per zone with the grid boundary on all
 * six sides). Zones go to the ranks by NPB-MZ's bin packing, a rank's OpenMP threads share
 * each zone. Verification (NPB-MZ's verify): the per-zone RMS norms of the residual / dt
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
        F->si = 1;
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

/* One zone's line solve along d (SP's solve with the zone as the only stage). */
static void solve_zone(int d, int c)
{
    build_lhs(d, c);
    forward_cell(d, c);
    unpack_backward(d, c, 0);
    backward_cell(d, c);
    invert_block(d, c);
}

/* One time step of every zone (NPB-MZ's exch_qbc, then adi per zone; compute_rhs, txinvr
 * and add run over all of this rank's zones in turn). */
static void step(void)
{
    npb_mz_exchange(&mesh, fields, 5);
    compute_rhs();
    txinvr();
    for (int d = 0; d < 3; ++d)
        for (int c = 0; c < ncells; ++c) solve_zone(d, c);
    add();
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
    NPB_CHECK_MPI(MPI_Init(&argc, &argv));
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &node));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &no_nodes));
    struct npb_options opt;
    npb_parse_args(argc, argv, "sp-mz", &opt);
    const struct sp_mz_class *cls = NULL;
    for (size_t i = 0; i < sizeof mz_classes / sizeof mz_classes[0]; ++i)
        if (mz_classes[i].name == opt.class_name) cls = &mz_classes[i];
    if (cls == NULL) npb_fail("unknown class %c", opt.class_name);
    const double scale = reference_scale();

    npb_mz_setup(&mesh, cls->x_zones, cls->y_zones, cls->gx, cls->gy, cls->gz, 1.0);
    const char *why = npb_mz_rank_error(&mesh, no_nodes);
    if (why != NULL) npb_fail("sp-mz class %c %s", cls->name, why);
    npb_mz_map_zones(&mesh, no_nodes, node);
    niter = cls->niter;
    dt = cls->dt;
    make_zones();

    char problem[512];
    npb_mz_problem_json(&mesh, cls->niter, cls->dt, problem, sizeof problem);
    npb_print_header("sp-mz", cls->name, problem);

    alloc_space();
    double spacing[3];
    npb_mz_spacing(&mesh, spacing);
    set_constants(spacing);
    locate_fields();
    initialize_zones();
    lhsinit();
    exact_rhs();

    /* One untimed step touches all code and memory, then the start again (as NPB-MZ). */
    step();
    initialize_zones();

    const double t = npb_mz_timed_steps(step, niter);

    double xce[5], xcr[5];
    zone_norms(xce, xcr);

    struct npb_result result;
    memset(&result, 0, sizeof result);
    result.kernel = "sp-mz";
    result.class_name = cls->name;
    result.time_s = t;
    static const double sp_ops[4] = {881.174, -4683.91, 11484.5, -19272.4}; /* NPB3.4-MZ sp.f */
    result.mops_total = npb_mz_mops(&mesh, niter, sp_ops, t);
    result.iterations = niter;
    result.verified = 1;
    npb_add_quantities(&result, "xcr", 5, xcr, cls->xcr, scale, NPB_SP_EPSILON);
    npb_add_quantities(&result, "xce", 5, xce, cls->xce, scale, NPB_SP_EPSILON);
    npb_print_result(&result);
    const int status = result.verified ? 0 : 3;
    free_space();
    free(fields);
    npb_mz_release(&mesh);
    NPB_CHECK_MPI(MPI_Finalize());
    return status;
}
