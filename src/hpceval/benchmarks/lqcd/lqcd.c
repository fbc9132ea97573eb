/* hpceval's lattice-QCD mini-application: the staggered-fermion conjugate gradient of MILC's
 * class, written for hpceval (MILC was read for facts only: its one-link ("naive")
 * staggered operator, the even-site normal equations its CG solves, its flop count).
 *
 * Problem. A 4-D periodic lattice of SU(3) link matrices U_mu(n), drawn from a seed by a
 * counter-based generator (the same field whatever the decomposition) and reunitarized; the
 * staggered phases eta_mu(n) and the antiperiodic time boundary are folded into the links,
 * as MILC does. D x(n) = sum_mu [U_mu(n) x(n+mu) - U_mu^+(n-mu) x(n-mu)] (anti-Hermitian),
 * M = 2m + D, and the CG solves the normal equations on the even sites:
 *     A x_e = b_e,   A = M^+ M restricted to even sites = 4 m^2 - D_eo D_oe.
 *
 * Work per CG iteration: two half-lattice dslash applications (odd sites from even, even
 * from odd), each site 8 SU(3) matrix x vector products (66 flops) and 7 vector sums (6
 * flops): 570 flops; the CG's vector algebra (4m^2 p - D D p, <p,Ap>, x += a p, r -= a Ap,
 * <r,r>, p = r + b p) 6 x 12 flops. 1212 flops per even site = 606 per lattice site, MILC's
 * count for this operator. Two global sums of one double (MPI_Allreduce) per iteration.
 *
 * Decomposition: MPI_Dims_create over 4 dimensions (the caller may fix the grid), periodic
 * MPI_Cart_create; every local extent must be even. Each dslash exchanges, in every split
 * direction, the face of the source parity with both neighbours (x(n+mu) sent backwards,
 * U^+ x(n-mu) computed by the owner and sent forwards): 48-byte su3 vectors, V/(2 l_mu) per
 * message. The program counts the bytes it sends in the CG loop; the caller checks them.
 *
 * Verification: the recursive residual reaches the tolerance; the solution is checked by
 * applying M^+ M as (2m - D)(2m + D) on the whole lattice (a separate code path) and
 * recomputing |b - A x| / |b|; checksums of the solution (its norm and a sum weighted by
 * the global site) let the caller compare rank counts.
 *
 * Output: JSON lines from rank 0 (header, result, end); errors as one "error" record.
 * Usage: lqcd --lattice X,Y,Z,T [--grid PX,PY,PZ,PT] [--mass M] [--seed S] [--tol T]
 *             [--max-iters N]
 */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROTOCOL_VERSION "1.0"
#define NDIM 4
#define FLOPS_PER_EVEN_SITE 1212
#define VECTOR_BYTES 48 /* 3 complex doubles */
#define ALLREDUCES_PER_ITERATION 2

typedef struct {
    double re, im;
} complex_t;
typedef struct {
    complex_t e[3][3];
} su3_matrix;
typedef struct {
    complex_t c[3];
} su3_vector;

static int my_rank = 0;

/* CPU seconds of this process: under contention the wall time measures the scheduler too. */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fail(const char *message) {
    if (my_rank == 0) {
        printf("{\"record\":\"error\",\"message\":\"%s\"}\n", message);
        fflush(stdout);
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ---- SU(3) algebra ------------------------------------------------------------------ */

/* y = U x: 9 complex multiplications (6 flops) and 6 complex additions (2): 66 flops. */
static inline void mult_su3_mat_vec(const su3_matrix *u, const su3_vector *x, su3_vector *y) {
    for (int i = 0; i < 3; i++) {
        double re = 0.0, im = 0.0;
        for (int j = 0; j < 3; j++) {
            re += u->e[i][j].re * x->c[j].re - u->e[i][j].im * x->c[j].im;
            im += u->e[i][j].re * x->c[j].im + u->e[i][j].im * x->c[j].re;
        }
        y->c[i].re = re;
        y->c[i].im = im;
    }
}

/* y = U^+ x: the adjoint's product, also 66 flops. */
static inline void mult_adj_su3_mat_vec(const su3_matrix *u, const su3_vector *x,
                                        su3_vector *y) {
    for (int i = 0; i < 3; i++) {
        double re = 0.0, im = 0.0;
        for (int j = 0; j < 3; j++) {
            re += u->e[j][i].re * x->c[j].re + u->e[j][i].im * x->c[j].im;
            im += u->e[j][i].re * x->c[j].im - u->e[j][i].im * x->c[j].re;
        }
        y->c[i].re = re;
        y->c[i].im = im;
    }
}

/* ---- counter-based random numbers (independent of the decomposition) ------------------ */

static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A uniform double in [-1, 1) for (seed, stream, global site, slot). */
static double uniform(uint64_t seed, uint64_t stream, uint64_t site, uint64_t slot) {
    uint64_t h = mix64(seed ^ mix64(stream ^ mix64(site ^ mix64(slot))));
    return (double)(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Gram-Schmidt on the first two rows, the third their conjugated cross product: SU(3). */
static void reunitarize(su3_matrix *u) {
    for (int r = 0; r < 2; r++) {
        for (int p = 0; p < r; p++) { /* row r -= <row p, row r> row p */
            double re = 0.0, im = 0.0;
            for (int j = 0; j < 3; j++) {
                re += u->e[p][j].re * u->e[r][j].re + u->e[p][j].im * u->e[r][j].im;
                im += u->e[p][j].re * u->e[r][j].im - u->e[p][j].im * u->e[r][j].re;
            }
            for (int j = 0; j < 3; j++) {
                u->e[r][j].re -= re * u->e[p][j].re - im * u->e[p][j].im;
                u->e[r][j].im -= re * u->e[p][j].im + im * u->e[p][j].re;
            }
        }
        double norm = 0.0;
        for (int j = 0; j < 3; j++) norm += u->e[r][j].re * u->e[r][j].re + u->e[r][j].im * u->e[r][j].im;
        norm = 1.0 / sqrt(norm);
        for (int j = 0; j < 3; j++) {
            u->e[r][j].re *= norm;
            u->e[r][j].im *= norm;
        }
    }
    for (int k = 0; k < 3; k++) { /* row2 = conj(row0 x row1) */
        int i = (k + 1) % 3, j = (k + 2) % 3;
        complex_t a = u->e[0][i], b = u->e[1][j], c = u->e[0][j], d = u->e[1][i];
        double re = a.re * b.re - a.im * b.im - (c.re * d.re - c.im * d.im);
        double im = a.re * b.im + a.im * b.re - (c.re * d.im + c.im * d.re);
        u->e[2][k].re = re;
        u->e[2][k].im = -im;
    }
}

/* ---- the local lattice and its communication ------------------------------------------ */

typedef struct {
    int global[NDIM], grid[NDIM], coord[NDIM], local[NDIM];
    int volume;                 /* local sites */
    int *parity;                /* per local site, of the global coordinates */
    long long *global_index;    /* per local site */
    int *sites[2];              /* the local sites of each parity */
    int nsites[2];
    /* neighbour tables per site and direction: >= 0 a local site, < 0 -(1 + halo slot) */
    int *forward[NDIM], *backward[NDIM];
    /* faces per direction, parity: sites sent backwards (low face) and forwards (high) */
    int *low_face[NDIM][2], *high_face[NDIM][2];
    int face_sites[NDIM]; /* per parity */
    int neighbour_down[NDIM], neighbour_up[NDIM];
    su3_matrix *links[NDIM];
    MPI_Comm comm;
    /* halo buffers: received x(n+mu) and U^+ x(n-mu), per direction */
    su3_vector *halo_up[NDIM], *halo_down[NDIM];
    su3_vector *send_down[NDIM], *send_up[NDIM];
    /* counters of the CG loop */
    long long bytes_sent, allreduces;
    double comm_time;
} lattice_t;

static void local_coords(const lattice_t *l, int site, int x[NDIM]) {
    for (int d = 0; d < NDIM; d++) {
        x[d] = site % l->local[d];
        site /= l->local[d];
    }
}

static int local_site(const lattice_t *l, const int x[NDIM]) {
    int s = 0;
    for (int d = NDIM - 1; d >= 0; d--) s = s * l->local[d] + x[d];
    return s;
}

static int *alloc_ints(size_t n) {
    int *p = malloc(n * sizeof(int) + 1);
    if (!p) fail("out of memory");
    return p;
}

static void *alloc_bytes(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n + 64) != 0) fail("out of memory");
    memset(p, 0, n + 64);
    return p;
}

static void setup_lattice(lattice_t *l, uint64_t seed) {
    int v = 1;
    for (int d = 0; d < NDIM; d++) v *= l->local[d];
    l->volume = v;
    l->parity = alloc_ints((size_t)v);
    l->global_index = malloc(sizeof(long long) * (size_t)v);
    for (int p = 0; p < 2; p++) {
        l->sites[p] = alloc_ints((size_t)v / 2);
        l->nsites[p] = 0;
    }
    for (int s = 0; s < v; s++) {
        int x[NDIM];
        local_coords(l, s, x);
        long long g = 0;
        int sum = 0;
        for (int d = NDIM - 1; d >= 0; d--) {
            int gx = l->coord[d] * l->local[d] + x[d];
            g = g * l->global[d] + gx;
            sum += gx;
        }
        l->global_index[s] = g;
        l->parity[s] = sum & 1;
        l->sites[sum & 1][l->nsites[sum & 1]++] = s;
    }
    for (int d = 0; d < NDIM; d++) {
        l->face_sites[d] = v / l->local[d] / 2;
        l->forward[d] = alloc_ints((size_t)v);
        l->backward[d] = alloc_ints((size_t)v);
        for (int p = 0; p < 2; p++) {
            l->low_face[d][p] = alloc_ints((size_t)l->face_sites[d]);
            l->high_face[d][p] = alloc_ints((size_t)l->face_sites[d]);
        }
        size_t bytes = sizeof(su3_vector) * (size_t)l->face_sites[d];
        l->halo_up[d] = alloc_bytes(bytes);
        l->halo_down[d] = alloc_bytes(bytes);
        l->send_down[d] = alloc_bytes(bytes);
        l->send_up[d] = alloc_bytes(bytes);
        /* Faces in site order: a site's place in its face is the same on both sides. */
        int nlow[2] = {0, 0}, nhigh[2] = {0, 0};
        for (int s = 0; s < v; s++) {
            int x[NDIM];
            local_coords(l, s, x);
            int p = l->parity[s];
            if (x[d] == 0) l->low_face[d][p][nlow[p]++] = s;
            if (x[d] == l->local[d] - 1) l->high_face[d][p][nhigh[p]++] = s;
        }
        int split = l->grid[d] > 1;
        int nlow_dest[2] = {0, 0}, nhigh_dest[2] = {0, 0};
        for (int s = 0; s < v; s++) {
            int x[NDIM], y[NDIM];
            local_coords(l, s, x);
            int p = l->parity[s];
            memcpy(y, x, sizeof(y));
            if (x[d] == l->local[d] - 1 && split) {
                /* x(n+mu) comes from the up neighbour's low face, same place in the face */
                l->forward[d][s] = -(1 + nhigh_dest[p]++);
            } else {
                y[d] = (x[d] + 1) % l->local[d];
                l->forward[d][s] = local_site(l, y);
            }
            memcpy(y, x, sizeof(y));
            if (x[d] == 0 && split) {
                l->backward[d][s] = -(1 + nlow_dest[p]++);
            } else {
                y[d] = (x[d] + l->local[d] - 1) % l->local[d];
                l->backward[d][s] = local_site(l, y);
            }
        }
        MPI_Cart_shift(l->comm, d, 1, &l->neighbour_down[d], &l->neighbour_up[d]);
    }
    /* Links from the global site, the direction and the seed; phases folded in. */
    for (int d = 0; d < NDIM; d++) {
        l->links[d] = alloc_bytes(sizeof(su3_matrix) * (size_t)v);
        for (int s = 0; s < v; s++) {
            su3_matrix *u = &l->links[d][s];
            uint64_t g = (uint64_t)l->global_index[s];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    u->e[i][j].re = uniform(seed, (uint64_t)d, g, (uint64_t)(2 * (3 * i + j)));
                    u->e[i][j].im = uniform(seed, (uint64_t)d, g, (uint64_t)(2 * (3 * i + j) + 1));
                }
            reunitarize(u);
            int x[NDIM];
            local_coords(l, s, x);
            int gx[NDIM], phase_sum = 0;
            for (int k = 0; k < NDIM; k++) gx[k] = l->coord[k] * l->local[k] + x[k];
            for (int k = 0; k < d; k++) phase_sum += gx[k];
            double sign = (phase_sum & 1) ? -1.0 : 1.0; /* eta_mu(n) */
            if (d == NDIM - 1 && gx[d] == l->global[d] - 1) sign = -sign; /* antiperiodic t */
            if (sign < 0)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) {
                        u->e[i][j].re = -u->e[i][j].re;
                        u->e[i][j].im = -u->e[i][j].im;
                    }
        }
    }
}

/* dest(sites of parity `parity`) = D src (reads the other parity), exchanging halos. */
static void dslash(lattice_t *l, const su3_vector *src, su3_vector *dest, int parity) {
    int source = 1 - parity;
    MPI_Request requests[4 * NDIM];
    int nreq = 0;
    double t0 = MPI_Wtime();
    for (int d = 0; d < NDIM; d++) {
        if (l->grid[d] == 1) continue;
        int n = l->face_sites[d];
        int count = n * 6;
        /* receive x(n+mu) from up (their low face), U^+ x(n-mu) from down (their high face) */
        MPI_Irecv(l->halo_up[d], count, MPI_DOUBLE, l->neighbour_up[d], 2 * d, l->comm,
                  &requests[nreq++]);
        MPI_Irecv(l->halo_down[d], count, MPI_DOUBLE, l->neighbour_down[d], 2 * d + 1, l->comm,
                  &requests[nreq++]);
        const int *low = l->low_face[d][source], *high = l->high_face[d][source];
        for (int k = 0; k < n; k++) l->send_down[d][k] = src[low[k]];
        for (int k = 0; k < n; k++)
            mult_adj_su3_mat_vec(&l->links[d][high[k]], &src[high[k]], &l->send_up[d][k]);
        MPI_Isend(l->send_down[d], count, MPI_DOUBLE, l->neighbour_down[d], 2 * d, l->comm,
                  &requests[nreq++]);
        MPI_Isend(l->send_up[d], count, MPI_DOUBLE, l->neighbour_up[d], 2 * d + 1, l->comm,
                  &requests[nreq++]);
        l->bytes_sent += 2LL * n * VECTOR_BYTES;
    }
    MPI_Waitall(nreq, requests, MPI_STATUSES_IGNORE);
    l->comm_time += MPI_Wtime() - t0;
    const int *sites = l->sites[parity];
    int nsites = l->nsites[parity];
    for (int k = 0; k < nsites; k++) {
        int s = sites[k];
        su3_vector sum, t;
        memset(&sum, 0, sizeof(sum));
        for (int d = 0; d < NDIM; d++) {
            int f = l->forward[d][s], b = l->backward[d][s];
            const su3_vector *xf = f >= 0 ? &src[f] : &l->halo_up[d][-f - 1];
            mult_su3_mat_vec(&l->links[d][s], xf, &t);
            for (int c = 0; c < 3; c++) {
                sum.c[c].re += t.c[c].re;
                sum.c[c].im += t.c[c].im;
            }
            if (b >= 0) {
                mult_adj_su3_mat_vec(&l->links[d][b], &src[b], &t);
            } else {
                t = l->halo_down[d][-b - 1];
            }
            for (int c = 0; c < 3; c++) {
                sum.c[c].re -= t.c[c].re;
                sum.c[c].im -= t.c[c].im;
            }
        }
        dest[s] = sum;
    }
}

static double global_sum(lattice_t *l, double local) {
    double t0 = MPI_Wtime(), total;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, l->comm);
    l->comm_time += MPI_Wtime() - t0;
    l->allreduces++;
    return total;
}

static double dot_re(const lattice_t *l, const su3_vector *a, const su3_vector *b, int parity) {
    double sum = 0.0;
    for (int k = 0; k < l->nsites[parity]; k++) {
        int s = l->sites[parity][k];
        for (int c = 0; c < 3; c++) sum += a[s].c[c].re * b[s].c[c].re + a[s].c[c].im * b[s].c[c].im;
    }
    return sum;
}

/* Ap = 4m^2 p - D_eo D_oe p on the even sites (tmp holds the odd sites). */
static void apply_normal(lattice_t *l, const su3_vector *p, su3_vector *tmp, su3_vector *ap,
                         double mass) {
    dslash(l, p, tmp, 1);
    dslash(l, tmp, ap, 0);
    double m4 = 4.0 * mass * mass;
    for (int k = 0; k < l->nsites[0]; k++) {
        int s = l->sites[0][k];
        for (int c = 0; c < 3; c++) {
            ap[s].c[c].re = m4 * p[s].c[c].re - ap[s].c[c].re;
            ap[s].c[c].im = m4 * p[s].c[c].im - ap[s].c[c].im;
        }
    }
}

static void parse_ints(const char *text, int out[NDIM], const char *what) {
    char *end;
    const char *p = text;
    for (int d = 0; d < NDIM; d++) {
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 100000) {
            char message[128];
            snprintf(message, sizeof(message), "%s needs 4 comma-separated integers", what);
            fail(message);
        }
        out[d] = (int)v;
        p = end;
        if (d < NDIM - 1) {
            if (*p != ',') fail("lattice and grid are 4 comma-separated integers");
            p++;
        }
    }
    if (*p != '\0') fail("lattice and grid are 4 comma-separated integers");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    lattice_t lat;
    memset(&lat, 0, sizeof(lat));
    int grid[NDIM] = {0, 0, 0, 0}, have_lattice = 0;
    double mass = 0.1, tol = 1e-8;
    long long seed = 1;
    int max_iters = 5000;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) fail("usage: lqcd --lattice X,Y,Z,T [--grid PX,PY,PZ,PT] [--mass M] [--seed S] [--tol T] [--max-iters N]");
        if (strcmp(argv[i], "--lattice") == 0) {
            parse_ints(argv[i + 1], lat.global, "--lattice");
            have_lattice = 1;
        } else if (strcmp(argv[i], "--grid") == 0) parse_ints(argv[i + 1], grid, "--grid");
        else if (strcmp(argv[i], "--mass") == 0) mass = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0) seed = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--tol") == 0) tol = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--max-iters") == 0) max_iters = atoi(argv[i + 1]);
        else fail("usage: lqcd --lattice X,Y,Z,T [--grid PX,PY,PZ,PT] [--mass M] [--seed S] [--tol T] [--max-iters N]");
    }
    if (!have_lattice) fail("--lattice is required");
    if (!(mass > 0.0) || !(tol > 0.0 && tol < 1.0) || max_iters < 1)
        fail("--mass must be > 0, --tol in (0, 1), --max-iters >= 1");
    if (MPI_Dims_create(nranks, NDIM, grid) != MPI_SUCCESS) fail("the grid does not multiply to the rank count");
    int product = 1;
    for (int d = 0; d < NDIM; d++) product *= grid[d];
    if (product != nranks) fail("the grid does not multiply to the rank count");
    for (int d = 0; d < NDIM; d++) {
        if (lat.global[d] < 2 || lat.global[d] % grid[d] != 0 || (lat.global[d] / grid[d]) % 2 != 0) {
            fail("every lattice extent must split over the grid into even local extents");
        }
        lat.grid[d] = grid[d];
        lat.local[d] = lat.global[d] / grid[d];
    }
    int periods[NDIM] = {1, 1, 1, 1};
    MPI_Cart_create(MPI_COMM_WORLD, NDIM, lat.grid, periods, 0, &lat.comm);
    int cart_rank;
    MPI_Comm_rank(lat.comm, &cart_rank);
    MPI_Cart_coords(lat.comm, cart_rank, NDIM, lat.coord);

    char name[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(name, &len);
    char *names = my_rank == 0 ? malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (my_rank == 0) {
        printf("{\"record\":\"header\",\"program\":\"lqcd\",\"version\":\"%s\",\"nranks\":%d,"
               "\"lattice\":[%d,%d,%d,%d],\"grid\":[%d,%d,%d,%d],\"local\":[%d,%d,%d,%d],"
               "\"mass\":%.17g,\"tol\":%.17g,\"seed\":%lld,\"flops_per_even_site\":%d,"
               "\"hosts\":[",
               PROTOCOL_VERSION, nranks, lat.global[0], lat.global[1], lat.global[2],
               lat.global[3], lat.grid[0], lat.grid[1], lat.grid[2], lat.grid[3], lat.local[0],
               lat.local[1], lat.local[2], lat.local[3], mass, tol, seed, FLOPS_PER_EVEN_SITE);
        for (int r = 0; r < nranks; r++)
            printf("%s\"%s\"", r ? "," : "", names + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        printf("]}\n");
        fflush(stdout);
        free(names);
    }

    setup_lattice(&lat, (uint64_t)seed);
    int v = lat.volume;
    size_t vbytes = sizeof(su3_vector) * (size_t)v;
    su3_vector *b = alloc_bytes(vbytes), *x = alloc_bytes(vbytes), *r = alloc_bytes(vbytes),
               *p = alloc_bytes(vbytes), *ap = alloc_bytes(vbytes), *tmp = alloc_bytes(vbytes);
    for (int k = 0; k < lat.nsites[0]; k++) { /* the source on the even sites, from the seed */
        int s = lat.sites[0][k];
        for (int c = 0; c < 3; c++) {
            b[s].c[c].re = uniform((uint64_t)seed, 100, (uint64_t)lat.global_index[s], (uint64_t)(2 * c));
            b[s].c[c].im = uniform((uint64_t)seed, 100, (uint64_t)lat.global_index[s], (uint64_t)(2 * c + 1));
        }
    }
    double bb = 0.0;
    {
        double t = dot_re(&lat, b, b, 0), total;
        MPI_Allreduce(&t, &total, 1, MPI_DOUBLE, MPI_SUM, lat.comm);
        bb = total;
    }
    /* x = 0, r = p = b */
    memcpy(r, b, vbytes);
    memcpy(p, b, vbytes);
    lat.bytes_sent = 0;
    lat.allreduces = 0;
    lat.comm_time = 0.0;
    double rr = bb, stop = tol * tol * bb;
    int iters = 0, converged = 0;
    MPI_Barrier(lat.comm);
    double t_start = MPI_Wtime(), cpu_start = cpu_seconds();
    while (iters < max_iters) {
        apply_normal(&lat, p, tmp, ap, mass);
        double pap = global_sum(&lat, dot_re(&lat, p, ap, 0));
        if (!(pap > 0.0)) break; /* not positive: the operator or the data is broken */
        double a = rr / pap;
        double local_rr = 0.0;
        for (int k = 0; k < lat.nsites[0]; k++) {
            int s = lat.sites[0][k];
            for (int c = 0; c < 3; c++) {
                x[s].c[c].re += a * p[s].c[c].re;
                x[s].c[c].im += a * p[s].c[c].im;
                r[s].c[c].re -= a * ap[s].c[c].re;
                r[s].c[c].im -= a * ap[s].c[c].im;
                local_rr += r[s].c[c].re * r[s].c[c].re + r[s].c[c].im * r[s].c[c].im;
            }
        }
        double rr_new = global_sum(&lat, local_rr);
        iters++;
        if (rr_new <= stop) {
            rr = rr_new;
            converged = 1;
            break;
        }
        double beta = rr_new / rr;
        rr = rr_new;
        for (int k = 0; k < lat.nsites[0]; k++) {
            int s = lat.sites[0][k];
            for (int c = 0; c < 3; c++) {
                p[s].c[c].re = r[s].c[c].re + beta * p[s].c[c].re;
                p[s].c[c].im = r[s].c[c].im + beta * p[s].c[c].im;
            }
        }
    }
    double cg_time = MPI_Wtime() - t_start, cg_cpu = cpu_seconds() - cpu_start;
    long long bytes_sent = lat.bytes_sent, allreduces = lat.allreduces;
    double comm_time = lat.comm_time;

    /* The check: y = (2m + D) x on the whole lattice (x zero on the odd sites), then
     * z = (2m - D) y restricted to the even sites, and |b - z| / |b|. */
    su3_vector *y = tmp, *z = ap;
    memset(y, 0, vbytes);
    memset(z, 0, vbytes);
    dslash(&lat, x, y, 1); /* y_o = D_oe x_e */
    for (int k = 0; k < lat.nsites[0]; k++) {
        int s = lat.sites[0][k];
        for (int c = 0; c < 3; c++) {
            y[s].c[c].re = 2.0 * mass * x[s].c[c].re;
            y[s].c[c].im = 2.0 * mass * x[s].c[c].im;
        }
    }
    dslash(&lat, y, z, 0); /* z_e = D_eo y_o */
    double local_diff = 0.0, local_norm = 0.0, local_weighted = 0.0;
    for (int k = 0; k < lat.nsites[0]; k++) {
        int s = lat.sites[0][k];
        double w = 1.0 + (double)(lat.global_index[s] % 97) / 97.0;
        for (int c = 0; c < 3; c++) {
            double re = 2.0 * mass * y[s].c[c].re - z[s].c[c].re;
            double im = 2.0 * mass * y[s].c[c].im - z[s].c[c].im;
            local_diff += (b[s].c[c].re - re) * (b[s].c[c].re - re) +
                          (b[s].c[c].im - im) * (b[s].c[c].im - im);
            local_norm += x[s].c[c].re * x[s].c[c].re + x[s].c[c].im * x[s].c[c].im;
            local_weighted += w * ((c + 1) * x[s].c[c].re - (c + 2) * x[s].c[c].im);
        }
    }
    double local_sums[3] = {local_diff, local_norm, local_weighted}, sums[3];
    MPI_Allreduce(local_sums, sums, 3, MPI_DOUBLE, MPI_SUM, lat.comm);
    long long counts[2] = {bytes_sent, allreduces}, total_counts[2], max_counts[2];
    MPI_Reduce(counts, total_counts, 2, MPI_LONG_LONG, MPI_SUM, 0, lat.comm);
    MPI_Reduce(counts, max_counts, 2, MPI_LONG_LONG, MPI_MAX, 0, lat.comm);
    double times[3] = {cg_time, comm_time, cg_cpu}, max_times[3], sum_times[3];
    MPI_Reduce(times, max_times, 3, MPI_DOUBLE, MPI_MAX, 0, lat.comm);
    MPI_Reduce(times, sum_times, 3, MPI_DOUBLE, MPI_SUM, 0, lat.comm);
    if (my_rank == 0) {
        long long global_volume = 1;
        for (int d = 0; d < NDIM; d++) global_volume *= lat.global[d];
        printf("{\"record\":\"result\",\"iterations\":%d,\"converged\":%s,"
               "\"cg_time_s\":%.9e,\"cg_cpu_s\":%.9e,\"comm_time_s\":%.9e,\"comm_share\":%.6f,"
               "\"recursive_residual\":%.6e,\"true_residual\":%.6e,"
               "\"halo_bytes\":%lld,\"halo_bytes_max_rank\":%lld,"
               "\"allreduces\":%lld,\"allreduces_max_rank\":%lld,"
               "\"global_sites\":%lld,\"solution_norm2\":%.17g,\"solution_checksum\":%.17g}\n",
               iters, converged ? "true" : "false", max_times[0], sum_times[2], max_times[1],
               sum_times[0] > 0 ? sum_times[1] / sum_times[0] : 0.0, sqrt(rr / bb),
               sqrt(sums[0] / bb), total_counts[0], max_counts[0], total_counts[1] / nranks,
               max_counts[1], global_volume, sums[1], sums[2]);
        printf("{\"record\":\"end\",\"status\":\"%s\"}\n", converged ? "ok" : "failed");
        fflush(stdout);
    }
    MPI_Comm_free(&lat.comm);
    MPI_Finalize();
    return 0;
}
