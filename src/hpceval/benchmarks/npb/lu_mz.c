/* NPB LU-MZ (NPB3.4-MZ definition): LU's SSOR solver on every zone of a multi-zone mesh of
 * 4 x 4 equal zones, C + MPI + OpenMP.
 *
 * Every zone is a whole LU grid of nx x ny x nz points (boundary included), nx = gx / 4,
 * ny = gy / 4, nz = gz, with NPB-MZ's grid step (dxi = 1 / (gx / x_zones - 1), the zone's
 * own) and its own exact solution, initial values and forcing in local coordinates, as
 * LU's on the unit cube. Each time step exchanges the zones' x and y boundary values
 * (npb_mz.h; LU-MZ's y faces carry all nx points of a line), then runs LU's SSOR iteration
 * on each zone: rsd scaled by dt, the pipelined lower and upper sweeps (jacld/blts,
 * jacu/buts, the OpenMP threads on successive k-planes), the update of u and the new
 * residual, all from lu.c (compiled in with LU_ZONE_SOLVER).
 *
 * Ranks (NPB3.4-MZ's LU-MZ process grid, process_grid_xdim): xdim x zdim, rank r the part
 * r % xdim of zone process r / xdim. The zones go to the zdim zone processes by NPB-MZ's
 * map_zones (block distribution where the count allows, else bin packing); every zone of a
 * zone process is split along i over its xdim ranks (NPB's subdomain split), each part a
 * piece of one LU grid in lu.c's decomposition with neighbours north and south only: the
 * sweeps pipeline a line per k-plane between the parts, the residual exchanges two ghost
 * layers, norms and surface integral are reduced over the parts (part_comm). With xdim 1 a
 * zone is one rank's grid, reduced over that rank alone. A rank's OpenMP threads share each
 * of its zones.
 *
 * Verification (NPB-MZ's verify): the RMS norms of the final residual (xcr) and of the
 * error (xce) and the surface integral (xci) of each zone, summed over the zones, against
 * the LU-MZ reference values, relative tolerance 1e-8. */
#define LU_ZONE_SOLVER
#include "lu.c"

#include "npb_mz.h"

#define LU_MZ_ZONES 4 /* x_zones = y_zones = 4 in every class */

struct lu_mz_class {
    char name;
    int gx, gy, gz;
    int niter;
    double dt;
    double xcr[5], xce[5], xci;
};

/* NPB3.4-MZ setparams.c (LU-MZ) and LU-MZ/verify.f. */
static const struct lu_mz_class mz_classes[] = {
    {'S', 24, 24, 6, 50, 0.5,
     {0.3778579699366e+01, 0.3120418698065e+00, 0.8386213407018e+00, 0.4452165980488e+00,
      0.7808656756434e+01},
     {0.2429480066305e+02, 0.9072817470024e+01, 0.1032621825644e+02, 0.9256791727838e+01,
      0.1639045777714e+02},
     0.4964435445706e+02},
    {'W', 64, 64, 8, 300, 1.5e-3,
     {0.8285060230339e+03, 0.5753415004693e+02, 0.2023477570531e+03, 0.1586275182502e+03,
      0.1733925947816e+04},
     {0.7514670702651e+02, 0.9776687033238e+01, 0.2141754291209e+02, 0.1685405918675e+02,
      0.1856944519722e+03},
     0.3781055348911e+03},
    {'A', 128, 128, 16, 250, 2.0,
     {0.1131574877175e+04, 0.7965206944742e+02, 0.2705587159526e+03, 0.2129567530746e+03,
      0.2260584655432e+04},
     {0.1115694885382e+03, 0.1089257673798e+02, 0.2905379922066e+02, 0.2216126755530e+02,
      0.2501762341026e+03},
     0.5904992211511e+03},
    {'B', 304, 208, 17, 250, 2.0,
     {0.1734656959567e+05, 0.1238977748533e+04, 0.4123885357100e+04, 0.3613705834056e+04,
      0.3531187871586e+05},
     {0.1781612313296e+04, 0.1177971120769e+03, 0.4233792871440e+03, 0.3577260438230e+03,
      0.3659958544012e+04},
     0.6107041476456e+04},
    {'C', 480, 320, 28, 250, 2.0,
     {0.4108743427233e+05, 0.3439004802235e+04, 0.9961331392486e+04, 0.8321426758084e+04,
      0.7463792419218e+05},
     {0.3429276307955e+04, 0.2336680861825e+03, 0.8216363109621e+03, 0.7143809828225e+03,
      0.7057470798773e+04},
     0.1125826349653e+05},
    {'D', 1632, 1216, 34, 300, 1.0,
     {0.3282253166388e+06, 0.3490781637713e+05, 0.8610311978292e+05, 0.7004896022603e+05,
      0.4546838584391e+06},
     {0.6620775619126e+04, 0.5229798207352e+03, 0.1620218261697e+04, 0.1404783445006e+04,
      0.1222629805121e+05},
     0.2059421629621e+05},
};

/* This rank's part of one zone: its fields (lu.c's layout) and sizes. */
struct lu_zone {
    vec5 *u, *rsd, *frct;
    double *rho_inv, *q_kin; /* NPB-MZ's rho_i and qs */
    int nx, ny, nz;          /* this part's points (nx: along i) */
    int zone_nx, first_i;    /* the zone's points along i, and where this part starts */
};

/* NPB3.4-MZ LU-MZ's process grid (proc_grid.f): xdim x zdim ranks, rank r the part
 * r % xdim along i of zone process r / xdim. NPB_NUM_XPROCS fixes xdim (at most the ranks;
 * ignored when xdim * zones < ranks; an error when it does not divide the ranks or leaves
 * more zone processes than zones); otherwise the factorisation, zdim from min(zones, ranks)
 * down, that maximises zones * nx1 / (ceil(zones / zdim) * ceil(nx1 / xdim)), the first
 * best (nx1: points per zone along i). */
static int process_grid_xdim(int nprocs, int nzones, int nx1)
{
    int xdim = 0;
    const char *env = getenv("NPB_NUM_XPROCS");
    if (env != NULL && *env != '\0') {
        char *end;
        long v = strtol(env, &end, 10);
        while (*end == ' ') ++end;
        if (*end != '\0' || v < 0 || v > 1000000)
            npb_fail("NPB_NUM_XPROCS=%s: not a whole number of ranks", env);
        xdim = v < nprocs ? (int)v : nprocs;
        if (xdim > 0 && xdim * nzones < nprocs) xdim = 0;
    }
    if (xdim > 0) {
        const int zdim = nprocs / xdim;
        if (xdim * zdim != nprocs)
            npb_fail("NPB_NUM_XPROCS=%d does not divide the %d ranks", xdim, nprocs);
        if (zdim > nzones)
            npb_fail("NPB_NUM_XPROCS=%d leaves %d zone processes for %d zones", xdim, zdim,
                     nzones);
        return xdim;
    }
    const double t_size = (double)nzones * nx1;
    double best = 0.0;
    int best_xdim = 1;
    for (int zdim = nzones < nprocs ? nzones : nprocs; zdim >= 1; --zdim) {
        while (nprocs % zdim != 0) --zdim;
        const int x = nprocs / zdim;
        const int zones_each = (nzones + zdim - 1) / zdim, points_each = (nx1 + x - 1) / x;
        const double speedup = t_size / zones_each / points_each;
        if (speedup > best) {
            best = speedup;
            best_xdim = x;
        }
    }
    return best_xdim;
}

static struct npb_mz_mesh mesh;
static struct lu_zone *zones;       /* this rank's zones, mesh.my_zones order */
static struct npb_mz_field *fields; /* per zone of the mesh; this rank's zones set */
static vec5 *zone_flux;             /* lu.c's flux scratch, sized for the largest zone */
static MPI_Comm part_comm;          /* the ranks sharing this rank's zones (NPB's comm_ipart) */

/* Points lu.c's grid state at zone Z: its fields, sizes, interior bounds and the
 * coefficients of its grid step. */
static void select_zone(const struct lu_zone *Z)
{
    u = Z->u;
    rsd = Z->rsd;
    frct = Z->frct;
    rho_inv = Z->rho_inv;
    q_kin = Z->q_kin;
    flux = zone_flux;
    nx = Z->nx;
    nx0 = Z->zone_nx;
    ny = ny0 = Z->ny;
    nz = nz0 = Z->nz;
    ipt = Z->first_i;
    /* the neighbouring parts along i (NPB-MZ's north and south): ranks r - 1 and r + 1 */
    north = mesh.row > 0 ? mesh.world_rank - 1 : -1;
    south = mesh.row < mesh.xdim - 1 ? mesh.world_rank + 1 : -1;
    ist = north == -1 ? 2 : 1;
    iend = south == -1 ? nx - 1 : nx;
    jst = 2;
    jend = ny - 1;
    ldx = (size_t)nx + 4;
    ldy = (size_t)ny + 4;
    set_coefficients();
}

static void make_zones(void)
{
    const int n = mesh.my_nzones > 0 ? mesh.my_nzones : 1;
    zones = npb_alloc((size_t)n * sizeof *zones, "zones");
    fields = npb_alloc((size_t)mesh.nzones * sizeof *fields, "zone fields");
    memset(fields, 0, (size_t)mesh.nzones * sizeof *fields);
    size_t largest = 1;
    int max_nx = 0, max_ny = 0, max_nz = 0;
    for (int c = 0; c < mesh.my_nzones; ++c) {
        struct lu_zone *Z = &zones[c];
        const int z = mesh.my_zones[c];
        Z->zone_nx = mesh.nx[z];
        npb_mz_part(mesh.nx[z], mesh.xdim, mesh.row, &Z->first_i, &Z->nx);
        Z->ny = mesh.ny[z];
        Z->nz = mesh.nz[z];
        if (Z->zone_nx < 5 || Z->ny < 5 || Z->nz < 5)
            npb_fail("lu-mz: zone %d has %d x %d x %d points; LU needs at least 5 per axis", z,
                     Z->zone_nx, Z->ny, Z->nz);
        const size_t points = (size_t)(Z->nx + 4) * (size_t)(Z->ny + 4) * (size_t)Z->nz;
        Z->u = NPB_FOLDABLE_ALLOC(points * sizeof(vec5), "u");
        Z->rsd = NPB_FOLDABLE_ALLOC(points * sizeof(vec5), "rsd");
        Z->frct = NPB_FOLDABLE_ALLOC(points * sizeof(vec5), "frct");
        memset(Z->u, 0, points * sizeof(vec5));
        memset(Z->rsd, 0, points * sizeof(vec5));
        memset(Z->frct, 0, points * sizeof(vec5));
        Z->rho_inv = NPB_FOLDABLE_ALLOC(points * sizeof(double), "rho_i");
        Z->q_kin = NPB_FOLDABLE_ALLOC(points * sizeof(double), "qs");
        memset(Z->rho_inv, 0, points * sizeof(double));
        memset(Z->q_kin, 0, points * sizeof(double));
        if (points > largest) largest = points;
        if (Z->nx > max_nx) max_nx = Z->nx;
        if (Z->ny > max_ny) max_ny = Z->ny;
        if (Z->nz > max_nz) max_nz = Z->nz;
        select_zone(Z);
        struct npb_mz_field *F = &fields[z];
        F->base = AT(u, 1, 1, 1);
        F->si = 5;
        F->sj = 5 * (ptrdiff_t)ldx;
        F->sk = 5 * (ptrdiff_t)(ldx * ldy);
        F->sm = 1;
    }
    zone_flux = NPB_FOLDABLE_ALLOC(largest * sizeof(vec5), "flux");
    memset(zone_flux, 0, largest * sizeof(vec5));
    /* lu.c's per-thread lines and (unused here) ghost buffers, for the largest zone */
    nx = max_nx > 0 ? max_nx : 1;
    ny = max_ny > 0 ? max_ny : 1;
    nz = max_nz > 0 ? max_nz : 1;
    allocate_work();
}

/* Boundary and initial values of every zone, then (with_forcing) erhs, and the residual
 * (NPB-MZ's setbv, setiv, erhs, rhs per zone). */
static void initialize_zones(int with_forcing)
{
    for (int c = 0; c < mesh.my_nzones; ++c) {
        select_zone(&zones[c]);
        set_boundary_values();
        set_initial_values();
        if (with_forcing) compute_forcing();
        compute_rhs();
    }
}

/* One time step of every zone (NPB-MZ's exch_qbc, then ssor per zone). */
static void step(void)
{
    const double update = 1.0 / (omega * (2.0 - omega));
    npb_mz_exchange(&mesh, fields, 5);
    for (int c = 0; c < mesh.my_nzones; ++c) {
        select_zone(&zones[c]);
        ssor_update(update);
        compute_rhs();
    }
}

/* Sums over all zones of each zone's residual and error RMS norms and surface integral. */
static void zone_norms(double xcr[5], double xce[5], double *xci)
{
    /* Every part of a zone holds the zone's norms (reduced over part_comm); the first adds
     * them (as NPB-MZ, whose row 0 reduces over comm_zpart). */
    double local[11] = {0}, total[11];
    for (int c = 0; c < mesh.my_nzones; ++c) {
        select_zone(&zones[c]);
        double r[5], e[5];
        rms_norm(rsd, r);
        error_norm(e);
        for (int m = 0; m < 5; ++m) {
            local[m] += r[m];
            local[5 + m] += e[m];
        }
        local[10] += surface_integral();
    }
    if (mesh.row != 0)
        for (int m = 0; m < 11; ++m) local[m] = 0.0;
    NPB_CHECK_MPI(MPI_Allreduce(local, total, 11, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    for (int m = 0; m < 5; ++m) {
        xcr[m] = total[m];
        xce[m] = total[5 + m];
    }
    *xci = total[10];
}

static void release_zones(void)
{
    for (int c = 0; c < mesh.my_nzones; ++c) {
        NPB_FOLDABLE_FREE(zones[c].u);
        NPB_FOLDABLE_FREE(zones[c].rsd);
        NPB_FOLDABLE_FREE(zones[c].frct);
        NPB_FOLDABLE_FREE(zones[c].rho_inv);
        NPB_FOLDABLE_FREE(zones[c].q_kin);
    }
    NPB_FOLDABLE_FREE(zone_flux);
    release_work();
    free(zones);
    free(fields);
}

int main(int argc, char **argv)
{
    int provided;
    NPB_CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    struct npb_options opt;
    npb_parse_args(argc, argv, "lu-mz", &opt);
    const struct lu_mz_class *cls = NULL;
    for (size_t i = 0; i < sizeof mz_classes / sizeof mz_classes[0]; ++i)
        if (mz_classes[i].name == opt.class_name) cls = &mz_classes[i];
    if (cls == NULL) npb_fail("unknown class %c", opt.class_name);

    npb_mz_setup(&mesh, LU_MZ_ZONES, LU_MZ_ZONES, cls->gx, cls->gy, cls->gz, 1.0);
    mesh.try_blocks = 1;
    mesh.y_faces_whole = 1;
    int world_size;
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    int world_rank, xdim = 0;
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    if (world_rank == 0) xdim = process_grid_xdim(world_size, mesh.nzones, cls->gx / LU_MZ_ZONES);
    NPB_CHECK_MPI(MPI_Bcast(&xdim, 1, MPI_INT, 0, MPI_COMM_WORLD));
    mesh.xdim = xdim;
    const int nx1 = cls->gx / LU_MZ_ZONES;
    if (world_size > mesh.nzones * nx1)
        npb_fail("lu-mz class %c on %d ranks: more than its %d zones x %d points along i "
                 "(NPB-MZ would leave the extra ranks idle; hpceval refuses them)",
                 cls->name, world_size, mesh.nzones, nx1);
    if (nx1 / xdim < 3)
        npb_fail("lu-mz class %c on %d ranks: its %d x %d process grid splits a zone's %d "
                 "points along i into parts of %d, LU needs at least 3",
                 cls->name, world_size, xdim, world_size / xdim, nx1, nx1 / xdim);
    npb_mz_start(&mesh, "lu-mz", cls->name, cls->niter, cls->dt, opt.balance_threads);
    /* A zone is a grid of the xdim ranks of one zone process: the pipeline neighbours along
     * i, norms and surface integral over those ranks (lu.c's grid_comm); a zone of one rank
     * (xdim 1) is a grid of that rank alone. */
    NPB_CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, mesh.my_rank, mesh.world_rank, &part_comm));
    my_rank = mesh.world_rank;
    nranks = mesh.xdim;
    grid_comm = mesh.xdim > 1 ? part_comm : MPI_COMM_SELF;
    dt = cls->dt;
    omega = OMEGA;
    nthreads = mesh.rank_threads[mesh.my_rank];
    if (nthreads > MAX_THREADS)
        npb_fail("lu-mz: %d OpenMP threads is more than this program's limit of %d", nthreads,
                 MAX_THREADS);
    threaded_mpi = nthreads > 1 && mesh.xdim > 1;
    if (threaded_mpi && provided < MPI_THREAD_SERIALIZED)
        npb_fail("lu-mz: zones split over ranks with %d threads need MPI_THREAD_SERIALIZED",
                 nthreads);
    make_zones();
    initialize_zones(1);

    /* One untimed step touches all code and data, then the start again (as NPB-MZ). */
    step();
    initialize_zones(0);

    const double t = npb_mz_timed_steps(step, cls->niter);

    double xcr[5], xce[5], xci;
    zone_norms(xcr, xce, &xci);

    struct npb_result result;
    static const double lu_ops[4] = {1984.77, -10923.3, 27770.9, -144010.0}; /* NPB3.4-MZ lu.f */
    npb_mz_result(&result, &mesh, "lu-mz", cls->name, cls->niter, lu_ops, t);
    npb_add_quantities(&result, "xcr", 5, xcr, cls->xcr, 1.0 + LU_REFERENCE_ERROR, LU_TOLERANCE);
    npb_add_quantities(&result, "xce", 5, xce, cls->xce, 1.0 + LU_REFERENCE_ERROR, LU_TOLERANCE);
    npb_add_quantity(&result, "xci", xci, cls->xci * (1.0 + LU_REFERENCE_ERROR), LU_TOLERANCE);
    npb_print_result(&result);
    int status = result.verified ? 0 : 3;
    release_zones();
    npb_mz_release(&mesh);
    NPB_CHECK_MPI(MPI_Comm_free(&part_comm));
    NPB_CHECK_MPI(MPI_Finalize());
    return status;
}
