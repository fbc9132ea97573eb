/* The multi-zone mesh of NPB3.4-MZ (BT-MZ, SP-MZ, LU-MZ), shared by the three programs.
 *
 * The gx x gy x gz grid is cut in x and y into x_zones x y_zones zones, each a whole
 * nx x ny x gz grid of its own with its boundary points (NPB-MZ's zone_setup): SP-MZ and
 * LU-MZ cut it evenly, BT-MZ in sizes growing geometrically so that the largest zone is
 * `ratio` times the smallest along each axis. The zones are periodic neighbours in x and
 * y. Each time step, before the zones are solved independently, every zone's x and y
 * boundary points take the values of its neighbours' first interior points (exch_qbc:
 * the west boundary i = 0 gets the west neighbour's i = nx - 2, the east boundary
 * i = nx - 1 the east neighbour's i = 1, the same in y; j, k over the interior only).
 *
 * Zones are dealt to the MPI ranks by NPB-MZ's map_zones. SP-MZ and LU-MZ first try its
 * block distribution: the ranks as an n1 x n2 grid whose sides divide x_zones and y_zones
 * (the pair with the least remainder, the last such factorisation found), each rank a
 * rectangle of zones. Otherwise (always for BT-MZ), bin packing: zones sorted by size,
 * largest first; each goes to the rank with the least work so far, preferring among the
 * zones within 5 % of the largest left the one sharing the most boundary with that rank.
 * Each zone is then solved by its rank's OpenMP threads: every rank its own OMP_NUM_THREADS
 * (NPB-MZ's default), or, with NPB-MZ's load balancing with threads (its load data file with
 * one process group), the ranks' total spread in proportion to their points
 * (npb_mz_assign_threads). */
#ifndef HPCEVAL_NPB_MZ_H
#define HPCEVAL_NPB_MZ_H

#include <mpi.h>
#include <stddef.h>

struct npb_result; /* npb_common.h */

enum { MZ_WEST, MZ_EAST, MZ_SOUTH, MZ_NORTH };

struct npb_mz_mesh {
    int x_zones, y_zones, gx, gy, gz;
    int nzones;
    int *nx, *ny, *nz;       /* points per axis, per zone (zone = i + j * x_zones) */
    int *neighbour[4];       /* per direction (MZ_WEST ...), per zone */
    int *owner;              /* rank solving each zone */
    int try_blocks;          /* map_zones tries the block distribution first (SP-MZ, LU-MZ) */
    int y_faces_whole;       /* y faces exchanged over all nx points, not the interior
                              * (LU-MZ's copy_y_face) */
    int blocks_used;         /* the map is the block distribution */
    int nranks, my_rank;     /* zone processes (NPB-MZ's zprocs) and this rank's */
    int xdim;                /* ranks sharing each zone process's zones, each zone split
                              * along i over them (LU-MZ's process grid; 1 elsewhere); set
                              * before npb_mz_start, 0 means 1 */
    int row;                 /* this rank's part of its zones along i, 0 .. xdim - 1 */
    int world_size, world_rank; /* MPI ranks: zone process p's part r is rank p * xdim + r */
    int *rank_threads;       /* OpenMP threads of every zone process (npb_mz_assign_threads;
                              * with xdim > 1, those of its first part) */
    int threads_balanced;    /* 1 when NPB-MZ's thread balancing set rank_threads */
    char *threads_json;      /* "rank_threads":[...] of the result record (npb_mz_result) */
    int my_nzones;
    int *my_zones;           /* this rank's zones in increasing order */
    /* exchange buffers (one segment per peer rank) */
    size_t *send_offset, *recv_offset, *send_count, *recv_count;
    double *send_buf, *recv_buf;
    MPI_Request *requests;
};

/* Where a zone's values are: component m of point (i, j, k) (0 <= i < nx ...) is at
 * base[i * si + j * sj + k * sk + m * sm]. */
struct npb_mz_field {
    double *base;
    ptrdiff_t si, sj, sk, sm;
};

/* Zone sizes and neighbours (ratio 1: even zones). */
void npb_mz_setup(struct npb_mz_mesh *M, int x_zones, int y_zones, int gx, int gy, int gz,
                  double ratio);

/* Why `nranks` cannot run this mesh (NULL if it can), for the program's one-line error. */
const char *npb_mz_rank_error(const struct npb_mz_mesh *M, int nranks);

/* NPB-MZ's bin packing of the zones over nranks zone processes, and this rank's zone list
 * (those of zone process my_rank) and exchange buffers. Every rank computes the same map.
 * npb_mz_start sets M's xdim, row and world_* first; called alone, xdim is 1. */
void npb_mz_map_zones(struct npb_mz_mesh *M, int nranks, int my_rank);

/* NPB-MZ's subdomain split of n points over `parts` parts: part `part` (0-based) holds
 * [*first, *first + *count), the first n % parts parts one point more. */
void npb_mz_part(int n, int parts, int part, int *first, int *count);

/* Every rank's OpenMP thread count: each rank's own (omp_get_max_threads, as launched), or
 * with `balance` and more threads than ranks, NPB-MZ's thread balancing (map_zones, one
 * process group, no NPB_MAX_THREADS limit): rank r gets floor(points_r / (total points /
 * total threads)), at least 1; while threads are left over, one more to the rank with the
 * most points per thread (the first such); while too many are given, one less from the
 * rank with more than one whose points per remaining thread would be the smallest. Call
 * after npb_mz_map_zones; npb_mz_use_threads applies this rank's count. */
void npb_mz_assign_threads(struct npb_mz_mesh *M, int balance);
void npb_mz_use_threads(const struct npb_mz_mesh *M);

/* The result record's common part: program, class, timed seconds, NPB-MZ's Mop/s count
 * (npb_mz_mops with the program's fit `ops`), iterations, and every rank's threads
 * ("rank_threads", kept in the mesh); the caller adds its verified quantities. */
void npb_mz_result(struct npb_result *result, struct npb_mz_mesh *M, const char *program,
                   char class_name, int niter, const double ops[4], double seconds);

/* The boundary exchange between zones; fields[z] locates this rank's part of zone z (its
 * local i = 0 is the zone's i = first, npb_mz_part; this rank's zones only). With xdim > 1
 * (LU-MZ) a zone's x faces travel between the first and last parts along i of the two
 * zones, its y faces part by part between the parts of the same row. */
void npb_mz_exchange(struct npb_mz_mesh *M, const struct npb_mz_field *fields, int components);

/* The "problem" JSON object of the header: mesh, zones, time steps, dt, the zones of
 * every rank and the load balance the map achieved (the busiest rank's points over the
 * mean, 1.0 is perfect). */
void npb_mz_problem_json(const struct npb_mz_mesh *M, int niter, double dt, char *out,
                         size_t size);

/* The zones' grid step (NPB-MZ's dnxm1 = x_zones / (gx - 1), dnym1, dnzm1 = 1 / (gz - 1)). */
void npb_mz_spacing(const struct npb_mz_mesh *M, double spacing[3]);

/* Runs `step` niter times between a barrier and the slowest rank's clock (seconds). */
double npb_mz_timed_steps(void (*step)(void), int niter);

/* NPB-MZ's verification norms: add one zone's squared error (e) and residual (r) sums over
 * its interior points, then sum the zones' RMS norms over all ranks: xce, xcr (r / dt). */
void npb_mz_add_zone_norms(double sums[10], const double e[5], const double r[5],
                           double interior_points, double dt);
void npb_mz_total_norms(const double sums[10], double xce[5], double xcr[5]);

/* NPB-MZ's Mop/s count: sum over the zones of 1e-6 * niter * (c[0] n3 + c[1] nsur +
 * c[2] navg + c[3]), n3 = nx ny nz, nsur = (nx ny + nx nz + ny nz) / 3,
 * navg = (nx + ny + nz) / 3; divided by seconds. */
double npb_mz_mops(const struct npb_mz_mesh *M, int niter, const double c[4], double seconds);

/* What every multi-zone program does once its mesh is set up: the rank rule (a one-line
 * error), NPB-MZ's zone map (npb_mz_map_zones, over size / xdim zone processes, rank r being
 * part r % xdim of zone process r / xdim) and thread counts (npb_mz_assign_threads), the
 * header record with the mesh's "problem" object, then this rank's thread count in force. */
void npb_mz_start(struct npb_mz_mesh *M, const char *program, char class_name, int niter,
                  double dt, int balance_threads);

void npb_mz_release(struct npb_mz_mesh *M);

#endif
