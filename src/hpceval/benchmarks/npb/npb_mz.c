/* The multi-zone mesh of NPB3.4-MZ: zone sizes, bin packing over the ranks, boundary
 * exchange (npb_mz.h says what each does). */
#define _POSIX_C_SOURCE 200809L
#include "npb_mz.h"

#include "npb_common.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_EXCHANGE 300

static void plan_exchange(struct npb_mz_mesh *M);

static int *int_array(int n, const char *what)
{
    int *a = npb_alloc((size_t)n * sizeof(int), what);
    memset(a, 0, (size_t)n * sizeof(int));
    return a;
}

/* Ends of the zones along one axis of `total` points: even, or geometric with the largest
 * zone `ratio` times the smallest (NPB-MZ's rounding: + 0.45, then truncation). */
static void zone_sizes(int zones, int total, double ratio, int *size)
{
    int previous_end = 0;
    if (fabs(ratio - 1.0) > 1.0e-10) {
        const double r = exp(log(ratio) / (zones - 1));
        const double smallest = (double)total * (r - 1.0) / (pow(r, zones) - 1.0);
        for (int i = 1; i <= zones; ++i) {
            int end = (int)(smallest * (pow(r, i) - 1.0) / (r - 1.0) + 0.45);
            size[i - 1] = end - previous_end;
            previous_end = end;
        }
    } else {
        for (int i = 1; i <= zones; ++i) {
            int end = i * total / zones;
            size[i - 1] = end - previous_end;
            previous_end = end;
        }
    }
}

void npb_mz_setup(struct npb_mz_mesh *M, int x_zones, int y_zones, int gx, int gy, int gz,
                  double ratio)
{
    memset(M, 0, sizeof *M);
    M->x_zones = x_zones;
    M->y_zones = y_zones;
    M->gx = gx;
    M->gy = gy;
    M->gz = gz;
    M->nzones = x_zones * y_zones;
    int *xs = int_array(x_zones, "zone sizes"), *ys = int_array(y_zones, "zone sizes");
    zone_sizes(x_zones, gx, ratio, xs);
    zone_sizes(y_zones, gy, ratio, ys);
    M->nx = int_array(M->nzones, "zone nx");
    M->ny = int_array(M->nzones, "zone ny");
    M->nz = int_array(M->nzones, "zone nz");
    for (int d = 0; d < 4; ++d) M->neighbour[d] = int_array(M->nzones, "zone neighbours");
    for (int j = 0; j < y_zones; ++j)
        for (int i = 0; i < x_zones; ++i) {
            int z = i + j * x_zones;
            M->nx[z] = xs[i];
            M->ny[z] = ys[j];
            M->nz[z] = gz;
            M->neighbour[MZ_WEST][z] = (i - 1 + x_zones) % x_zones + j * x_zones;
            M->neighbour[MZ_EAST][z] = (i + 1) % x_zones + j * x_zones;
            M->neighbour[MZ_SOUTH][z] = i + ((j - 1 + y_zones) % y_zones) * x_zones;
            M->neighbour[MZ_NORTH][z] = i + ((j + 1) % y_zones) * x_zones;
        }
    free(xs);
    free(ys);
}

const char *npb_mz_rank_error(const struct npb_mz_mesh *M, int nranks)
{
    static char why[160];
    if (nranks > M->nzones) {
        snprintf(why, sizeof why, "has %d zones: needs at most %d ranks, got %d", M->nzones,
                 M->nzones, nranks);
        return why;
    }
    return NULL;
}

static double zone_points(const struct npb_mz_mesh *M, int z)
{
    return (double)M->nx[z] * M->ny[z] * M->nz[z];
}

/* NPB-MZ's get_comm_index: how much boundary zone z shares with the zones of `rank`. */
static int shared_boundary(const struct npb_mz_mesh *M, int z, int rank)
{
    int shared = 0;
    if (M->owner[M->neighbour[MZ_WEST][z]] == rank) shared += M->ny[z];
    if (M->owner[M->neighbour[MZ_EAST][z]] == rank) shared += M->ny[z];
    if (M->owner[M->neighbour[MZ_SOUTH][z]] == rank) shared += M->nx[z];
    if (M->owner[M->neighbour[MZ_NORTH][z]] == rank) shared += M->nx[z];
    return shared;
}

/* NPB-MZ's block distribution (SP-MZ, LU-MZ): the ranks as an n1 x n2 grid with n1 | x_zones
 * and n2 | y_zones, each rank a rectangle of zones. Returns 0 (nothing assigned) when no
 * factorisation divides both. */
static int block_owners(struct npb_mz_mesh *M, int nranks)
{
    int best = M->y_zones % nranks, np1 = 1, np2 = nranks;
    for (int n1 = 1, n2 = nranks; n1 <= n2; ++n1, n2 = nranks / n1) {
        if (n1 * n2 != nranks) continue;
        const int remainder = M->x_zones % n1 + M->y_zones % n2;
        if (remainder <= best) {
            best = remainder;
            np1 = n1;
            np2 = n2;
        }
    }
    if (best != 0) return 0;
    const int wx = M->x_zones / np1, wy = M->y_zones / np2;
    for (int z = 0; z < M->nzones; ++z)
        M->owner[z] = (z % M->x_zones) / wx + (z / M->x_zones) / wy * np1;
    return 1;
}

void npb_mz_map_zones(struct npb_mz_mesh *M, int nranks, int my_rank)
{
    const int n = M->nzones;
    M->nranks = nranks;
    M->my_rank = my_rank;
    if (M->xdim < 1) {
        M->xdim = 1;
        M->row = 0;
        M->world_size = nranks;
        M->world_rank = my_rank;
    }
    M->owner = int_array(n, "zone owners");
    int *order = int_array(n, "zone order");
    double *load = npb_alloc((size_t)nranks * sizeof(double), "rank loads");
    for (int z = 0; z < n; ++z) {
        order[z] = z;
        M->owner[z] = -1;
    }
    for (int r = 0; r < nranks; ++r) load[r] = 0.0;
    const int blocks = M->try_blocks && block_owners(M, nranks);
    M->blocks_used = blocks;
    /* Selection sort by decreasing size, keeping the first of equal zones first. */
    for (int a = 0; a < n - 1; ++a) {
        int best = a;
        for (int b = a + 1; b < n; ++b)
            if (zone_points(M, order[best]) < zone_points(M, order[b])) best = b;
        int t = order[a];
        order[a] = order[best];
        order[best] = t;
    }
    int next = blocks ? n : 0;
    while (next < n) {
        int rank = 0;
        for (int r = 1; r < nranks; ++r)
            if (load[rank] > load[r]) rank = r;
        int chosen = order[next];
        if (next < n - 1) {
            int chosen_shared = shared_boundary(M, chosen, rank);
            const double largest = zone_points(M, order[next]);
            for (int b = next + 1; b < n; ++b) {
                int z = order[b];
                if ((largest - zone_points(M, z)) / largest > 0.05) break;
                if (M->owner[z] < 0) {
                    int shared = shared_boundary(M, z, rank);
                    if (shared > chosen_shared) {
                        chosen = z;
                        chosen_shared = shared;
                    }
                }
            }
        }
        M->owner[chosen] = rank;
        load[rank] += zone_points(M, chosen);
        while (next < n && M->owner[order[next]] >= 0) ++next;
    }
    free(order);
    free(load);

    M->my_nzones = 0;
    M->my_zones = int_array(n, "my zones");
    for (int z = 0; z < n; ++z)
        if (M->owner[z] == my_rank) M->my_zones[M->my_nzones++] = z;

    plan_exchange(M);
}

/* --- the boundary exchange ------------------------------------------------------------- */

void npb_mz_part(int n, int parts, int part, int *first, int *count)
{
    const int rest = n % parts;
    if (part < rest) {
        *count = n / parts + 1;
        *first = part * *count;
    } else {
        *count = n / parts;
        *first = part * *count + rest;
    }
}

/* The face of zone z on side d goes to its neighbour on that side in parts: an x face
 * (west, east) whole, from the part holding it (the first or the last along i) to the
 * neighbour's part on the other end; a y face (south, north) in xdim parts, part p between
 * the two zones' parts of row p. */
static int face_parts(const struct npb_mz_mesh *M, int d)
{
    return d == MZ_SOUTH || d == MZ_NORTH ? M->xdim : 1;
}

static int sender_rank(const struct npb_mz_mesh *M, int z, int d, int p)
{
    const int row = d == MZ_WEST ? 0 : d == MZ_EAST ? M->xdim - 1 : p;
    return M->owner[z] * M->xdim + row;
}

static int receiver_rank(const struct npb_mz_mesh *M, int z, int d, int p)
{
    const int row = d == MZ_WEST ? M->xdim - 1 : d == MZ_EAST ? 0 : p;
    return M->owner[M->neighbour[d][z]] * M->xdim + row;
}

/* The points across part p of the face of zone z on side d: [*a0, *a1] in the zone's
 * indices (j for x faces, i for y faces); empty when *a1 < *a0. */
static void part_span(const struct npb_mz_mesh *M, int z, int d, int p, int *a0, int *a1)
{
    if (d == MZ_WEST || d == MZ_EAST) {
        *a0 = 1;
        *a1 = M->ny[z] - 2;
        return;
    }
    const int whole = M->y_faces_whole;
    int first, count;
    npb_mz_part(M->nx[z], M->xdim, p, &first, &count);
    *a0 = whole ? 0 : 1;
    *a1 = whole ? M->nx[z] - 1 : M->nx[z] - 2;
    if (*a0 < first) *a0 = first;
    if (*a1 > first + count - 1) *a1 = first + count - 1;
}

static size_t part_values(const struct npb_mz_mesh *M, int z, int d, int p, int components)
{
    int a0, a1;
    part_span(M, z, d, p, &a0, &a1);
    return a1 < a0 ? 0 : (size_t)(a1 - a0 + 1) * (size_t)(M->nz[z] - 2) * (size_t)components;
}

/* The global i of local index 0 of this rank's part of zone z. */
static int my_first_i(const struct npb_mz_mesh *M, int z)
{
    int first, count;
    npb_mz_part(M->nx[z], M->xdim, M->row, &first, &count);
    return first;
}

/* What this rank sends to / receives from each rank: the face parts, in zone order, then
 * direction order, then part order on both sides (5 components: the largest any program
 * exchanges). */
static void plan_exchange(struct npb_mz_mesh *M)
{
    const int nw = M->world_size, me = M->world_rank;
    M->send_offset = npb_alloc((size_t)nw * sizeof(size_t), "exchange offsets");
    M->recv_offset = npb_alloc((size_t)nw * sizeof(size_t), "exchange offsets");
    M->send_count = npb_alloc((size_t)nw * sizeof(size_t), "exchange counts");
    M->recv_count = npb_alloc((size_t)nw * sizeof(size_t), "exchange counts");
    for (int r = 0; r < nw; ++r) M->send_count[r] = M->recv_count[r] = 0;
    for (int z = 0; z < M->nzones; ++z)
        for (int d = 0; d < 4; ++d)
            for (int p = 0; p < face_parts(M, d); ++p) {
                const int from = sender_rank(M, z, d, p), to = receiver_rank(M, z, d, p);
                if (from == to) continue;
                if (from == me) M->send_count[to] += part_values(M, z, d, p, 5);
                if (to == me) M->recv_count[from] += part_values(M, z, d, p, 5);
            }
    size_t send_total = 0, recv_total = 0;
    for (int r = 0; r < nw; ++r) {
        M->send_offset[r] = send_total;
        M->recv_offset[r] = recv_total;
        send_total += M->send_count[r];
        recv_total += M->recv_count[r];
    }
    M->send_buf = npb_alloc((send_total > 0 ? send_total : 1) * sizeof(double),
                            "exchange send buffer");
    M->recv_buf = npb_alloc((recv_total > 0 ? recv_total : 1) * sizeof(double),
                            "exchange receive buffer");
    M->requests = npb_alloc((size_t)2 * nw * sizeof(MPI_Request), "exchange requests");
}

/* Copies the points [a0, a1] across the face of a zone on side d at position q along it
 * (i = q for west/east, j = q for south/north; k over the interior) to or from buf; the
 * zone's indices, this rank's part starting at i = shift. Returns the values moved. */
static size_t copy_face(const struct npb_mz_mesh *M, int z, const struct npb_mz_field *F,
                        int d, int q, int a0, int a1, int shift, int components, double *buf,
                        int into_zone)
{
    const int nz = M->nz[z];
    const int along_x = d == MZ_WEST || d == MZ_EAST;
    const ptrdiff_t s_across = along_x ? F->sj : F->si, s_at = along_x ? F->si : F->sj;
    const int at = along_x ? q - shift : q, across0 = along_x ? a0 : a0 - shift;
    size_t pos = 0;
    for (int k = 1; k < nz - 1; ++k)
        for (int a = 0; a <= a1 - a0; ++a) {
            double *v = F->base + at * s_at + (across0 + a) * s_across + k * F->sk;
            for (int m = 0; m < components; ++m) {
                if (into_zone) v[m * F->sm] = buf[pos];
                else buf[pos] = v[m * F->sm];
                ++pos;
            }
        }
    return pos;
}

/* Position of the face zone z sends to its neighbour on side d, and of the boundary of the
 * neighbour that receives it (the neighbour's opposite side). */
static int out_position(const struct npb_mz_mesh *M, int z, int d)
{
    switch (d) {
    case MZ_WEST: return 1;
    case MZ_EAST: return M->nx[z] - 2;
    case MZ_SOUTH: return 1;
    default: return M->ny[z] - 2;
    }
}

static int in_side(int d)
{
    return d == MZ_WEST ? MZ_EAST : d == MZ_EAST ? MZ_WEST : d == MZ_SOUTH ? MZ_NORTH : MZ_SOUTH;
}

static int in_position(const struct npb_mz_mesh *M, int z, int side)
{
    switch (side) {
    case MZ_WEST: return 0;
    case MZ_EAST: return M->nx[z] - 1;
    case MZ_SOUTH: return 0;
    default: return M->ny[z] - 1;
    }
}

/* Part p of the face of zone z on side d: out of this rank's part of z (into_zone 0) or
 * into this rank's part of the neighbour (into_zone 1). */
static size_t move_part(const struct npb_mz_mesh *M, const struct npb_mz_field *fields, int z,
                        int d, int p, int components, double *buf, int into_zone)
{
    int a0, a1;
    part_span(M, z, d, p, &a0, &a1);
    if (a1 < a0) return 0;
    if (!into_zone)
        return copy_face(M, z, &fields[z], d, out_position(M, z, d), a0, a1, my_first_i(M, z),
                         components, buf, 0);
    const int other = M->neighbour[d][z], side = in_side(d);
    return copy_face(M, other, &fields[other], side, in_position(M, other, side), a0, a1,
                     my_first_i(M, other), components, buf, 1);
}

void npb_mz_exchange(struct npb_mz_mesh *M, const struct npb_mz_field *fields, int components)
{
    const int n = M->nzones, me = M->world_rank;
    int nreq = 0;
    /* Counts were sized for 5 components; scale them to this field's. */
    for (int r = 0; r < M->world_size; ++r) {
        if (M->recv_count[r] == 0) continue;
        NPB_CHECK_MPI(MPI_Irecv(M->recv_buf + M->recv_offset[r],
                                (int)(M->recv_count[r] / 5 * (size_t)components), MPI_DOUBLE, r,
                                TAG_EXCHANGE, MPI_COMM_WORLD, &M->requests[nreq++]));
    }
    for (int r = 0; r < M->world_size; ++r) {
        if (M->send_count[r] == 0) continue;
        double *out = M->send_buf + M->send_offset[r];
        for (int z = 0; z < n; ++z)
            for (int d = 0; d < 4; ++d)
                for (int p = 0; p < face_parts(M, d); ++p)
                    if (sender_rank(M, z, d, p) == me && receiver_rank(M, z, d, p) == r)
                        out += move_part(M, fields, z, d, p, components, out, 0);
        NPB_CHECK_MPI(MPI_Isend(M->send_buf + M->send_offset[r],
                                (int)(out - (M->send_buf + M->send_offset[r])), MPI_DOUBLE, r,
                                TAG_EXCHANGE, MPI_COMM_WORLD, &M->requests[nreq++]));
    }
    /* Faces between parts of this rank: every face read first, then written (as NPB-MZ's
     * exch_qbc: with LU-MZ's whole y faces, a face read holds x-boundary points that the
     * same exchange writes). */
    size_t local_size = 0;
    for (int z = 0; z < n; ++z)
        for (int d = 0; d < 4; ++d)
            for (int p = 0; p < face_parts(M, d); ++p)
                if (sender_rank(M, z, d, p) == me && receiver_rank(M, z, d, p) == me)
                    local_size += part_values(M, z, d, p, components);
    /* Kept from step to step (as NPB-MZ's qbc_ou; spmzcost's change): a buffer of megabytes
     * allocated each step is mapped afresh, every page faulted in again. */
    static double *local;
    static size_t local_capacity;
    if (local_size > local_capacity) {
        free(local);
        local = npb_alloc(local_size * sizeof(double), "exchange between local zones");
        local_capacity = local_size;
    }
    for (int pass = 0; pass < 2; ++pass) {
        double *at = local;
        for (int z = 0; z < n; ++z)
            for (int d = 0; d < 4; ++d)
                for (int p = 0; p < face_parts(M, d); ++p)
                    if (sender_rank(M, z, d, p) == me && receiver_rank(M, z, d, p) == me)
                        at += move_part(M, fields, z, d, p, components, at, pass);
    }
    NPB_CHECK_MPI(MPI_Waitall(nreq, M->requests, MPI_STATUSES_IGNORE));
    for (int r = 0; r < M->world_size; ++r) {
        if (M->recv_count[r] == 0) continue;
        double *in = M->recv_buf + M->recv_offset[r];
        for (int z = 0; z < n; ++z)
            for (int d = 0; d < 4; ++d)
                for (int p = 0; p < face_parts(M, d); ++p)
                    if (sender_rank(M, z, d, p) == r && receiver_rank(M, z, d, p) == me)
                        in += move_part(M, fields, z, d, p, components, in, 1);
    }
}

void npb_mz_assign_threads(struct npb_mz_mesh *M, int balance)
{
    const int np = M->nranks;
    int mine = npb_threads();
    int *every = int_array(M->world_size, "rank threads");
    NPB_CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, every, 1, MPI_INT, MPI_COMM_WORLD));
    M->rank_threads = int_array(np, "rank threads");
    for (int p = 0; p < np; ++p) M->rank_threads[p] = every[p * M->xdim];
    free(every);
    int total = 0;
    for (int r = 0; r < np; ++r) total += M->rank_threads[r];
    M->threads_balanced = balance && total > np;
    if (!M->threads_balanced) return;
    double *size = npb_alloc((size_t)np * sizeof(double), "rank sizes"), all = 0.0;
    for (int r = 0; r < np; ++r) size[r] = 0.0;
    for (int z = 0; z < M->nzones; ++z) size[M->owner[z]] += zone_points(M, z);
    for (int r = 0; r < np; ++r) all += size[r];
    const double per_thread = all / total;
    int given = 0;
    for (int r = 0; r < np; ++r) {
        int t = (int)(size[r] / per_thread);
        M->rank_threads[r] = t < 1 ? 1 : t;
        given += M->rank_threads[r];
    }
    for (int left = total - given; left != 0;) {
        int pick = -1;
        double best = 0.0;
        for (int r = 0; r < np; ++r) {
            if (left > 0) {
                const double load = size[r] / M->rank_threads[r];
                if (load > best) {
                    best = load;
                    pick = r;
                }
            } else if (M->rank_threads[r] > 1) {
                const double load = size[r] / (M->rank_threads[r] - 1);
                if (best == 0.0 || load < best) {
                    best = load;
                    pick = r;
                }
            }
        }
        if (pick < 0) break; /* cannot happen: total >= np threads fit one per rank */
        M->rank_threads[pick] += left > 0 ? 1 : -1;
        left += left > 0 ? -1 : 1;
    }
    free(size);
}

void npb_mz_use_threads(const struct npb_mz_mesh *M)
{
#ifdef _OPENMP
    omp_set_num_threads(M->rank_threads[M->my_rank]);
#else
    (void)M;
#endif
}

static char *threads_json(const struct npb_mz_mesh *M)
{
    const size_t size = 32 + 12 * (size_t)M->nranks;
    char *out = npb_alloc(size, "rank threads record");
    size_t at = (size_t)snprintf(out, size, "\"rank_threads\":[");
    for (int r = 0; r < M->nranks; ++r)
        at += (size_t)snprintf(out + at, size - at, "%s%d", r ? "," : "", M->rank_threads[r]);
    snprintf(out + at, size - at, "]");
    return out;
}

void npb_mz_problem_json(const struct npb_mz_mesh *M, int niter, double dt, char *out,
                         size_t size)
{
    double total = 0.0, busiest = 0.0;
    for (int z = 0; z < M->nzones; ++z) total += zone_points(M, z);
    for (int r = 0; r < M->nranks; ++r) {
        double load = 0.0;
        for (int z = 0; z < M->nzones; ++z)
            if (M->owner[z] == r) load += zone_points(M, z);
        if (load > busiest) busiest = load;
    }
    int smallest = 0, largest = 0;
    for (int z = 1; z < M->nzones; ++z) {
        if (zone_points(M, z) < zone_points(M, smallest)) smallest = z;
        if (zone_points(M, z) > zone_points(M, largest)) largest = z;
    }
    snprintf(out, size,
             "{\"gx\":%d,\"gy\":%d,\"gz\":%d,\"x_zones\":%d,\"y_zones\":%d,\"niter\":%d,"
             "\"dt\":%.17g,\"smallest_zone\":[%d,%d,%d],\"largest_zone\":[%d,%d,%d],"
             "\"load_imbalance\":%.6g,\"block_distribution\":%s,\"thread_balance\":%s,"
             "\"process_grid\":[%d,%d]}",
             M->gx, M->gy, M->gz, M->x_zones, M->y_zones, niter, dt, M->nx[smallest],
             M->ny[smallest], M->nz[smallest], M->nx[largest], M->ny[largest], M->nz[largest],
             busiest / (total / M->nranks), M->blocks_used ? "true" : "false",
             M->threads_balanced ? "true" : "false", M->xdim, M->nranks);
}

void npb_mz_spacing(const struct npb_mz_mesh *M, double spacing[3])
{
    spacing[0] = 1.0 / ((double)(M->gx - 1) / M->x_zones);
    spacing[1] = 1.0 / ((double)(M->gy - 1) / M->y_zones);
    spacing[2] = 1.0 / (double)(M->gz - 1);
}

double npb_mz_timed_steps(void (*step)(void), int niter)
{
    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    for (int s = 1; s <= niter; ++s) step();
    double t_local = MPI_Wtime() - t0, t;
    NPB_CHECK_MPI(MPI_Allreduce(&t_local, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return t;
}

void npb_mz_add_zone_norms(double sums[10], const double e[5], const double r[5],
                           double interior_points, double dt)
{
    for (int m = 0; m < 5; ++m) {
        sums[m] += sqrt(e[m] / interior_points);
        sums[5 + m] += sqrt(r[m] / interior_points) / dt;
    }
}

void npb_mz_total_norms(const double sums[10], double xce[5], double xcr[5])
{
    double total[10];
    NPB_CHECK_MPI(MPI_Allreduce(sums, total, 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    for (int m = 0; m < 5; ++m) {
        xce[m] = total[m];
        xcr[m] = total[5 + m];
    }
}

double npb_mz_mops(const struct npb_mz_mesh *M, int niter, const double c[4], double seconds)
{
    if (!(seconds > 0.0)) return 0.0;
    double mops = 0.0;
    for (int z = 0; z < M->nzones; ++z) {
        const double nx = M->nx[z], ny = M->ny[z], nz = M->nz[z];
        const double n3 = nx * ny * nz, navg = (nx + ny + nz) / 3.0;
        const double nsur = (nx * ny + nx * nz + ny * nz) / 3.0;
        mops += 1.0e-6 * niter * (c[0] * n3 + c[1] * nsur + c[2] * navg + c[3]);
    }
    return mops / seconds;
}

void npb_mz_result(struct npb_result *result, struct npb_mz_mesh *M, const char *program,
                   char class_name, int niter, const double ops[4], double seconds)
{
    memset(result, 0, sizeof *result);
    result->kernel = program;
    result->class_name = class_name;
    result->time_s = seconds;
    result->mops_total = npb_mz_mops(M, niter, ops, seconds);
    result->iterations = niter;
    result->verified = 1;
    if (M->threads_json == NULL) M->threads_json = threads_json(M);
    result->extra = M->threads_json;
}

void npb_mz_start(struct npb_mz_mesh *M, const char *program, char class_name, int niter,
                  double dt, int balance_threads)
{
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &M->world_size));
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &M->world_rank));
    if (M->xdim < 1) M->xdim = 1;
    if (M->world_size % M->xdim != 0)
        npb_fail("%s: %d ranks do not split into parts of %d", program, M->world_size, M->xdim);
    M->row = M->world_rank % M->xdim;
    const int zprocs = M->world_size / M->xdim;
    const char *why = npb_mz_rank_error(M, zprocs);
    if (why != NULL) npb_fail("%s class %c %s", program, class_name, why);
    npb_mz_map_zones(M, zprocs, M->world_rank / M->xdim);
    npb_mz_assign_threads(M, balance_threads);
    char problem[512];
    npb_mz_problem_json(M, niter, dt, problem, sizeof problem);
    npb_print_header(program, class_name, problem);
    npb_mz_use_threads(M);
}

void npb_mz_release(struct npb_mz_mesh *M)
{
    free(M->nx);
    free(M->ny);
    free(M->nz);
    for (int d = 0; d < 4; ++d) free(M->neighbour[d]);
    free(M->owner);
    free(M->rank_threads);
    free(M->threads_json);
    free(M->my_zones);
    free(M->send_offset);
    free(M->recv_offset);
    free(M->send_count);
    free(M->recv_count);
    free(M->send_buf);
    free(M->recv_buf);
    free(M->requests);
}
