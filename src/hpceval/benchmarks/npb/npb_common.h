/* Shared pieces of hpceval's NAS Parallel Benchmark kernels (NPB 3.x definitions).
 *
 * Every kernel is one C file plus this module: argument parsing, the NPB linear
 * congruential generator, error handling that aborts all ranks, and the JSON-lines output
 * protocol (docs/npb.md) that hpceval parses. */
#ifndef HPCEVAL_NPB_COMMON_H
#define HPCEVAL_NPB_COMMON_H

#include <mpi.h>
#include <stddef.h>

#define NPB_PROTOCOL_VERSION "1.0"
#define NPB_MAX_QUANTITIES 64

/* Builds for SimGrid's SMPI simulator (smpicc -DHPCEVAL_SMPI, docs in SMPI.md). Two
 * options trade the numerical result for simulation speed and memory; either one makes the
 * result unverifiable, and the result record then says "not_checked" with the reason:
 *   -DHPCEVAL_SMPI_SAMPLE  computation sampling: a hot compute block runs for real its
 *                          first NPB_SMPI_SAMPLES times on each rank, later its mean
 *                          duration is injected into the simulated clock without running it;
 *   -DHPCEVAL_SMPI_FOLD    memory folding: the big value arrays come from
 *                          SMPI_SHARED_MALLOC, which maps every rank's array (and every
 *                          block of it) onto the same physical pages.
 * Native builds define neither and are unchanged. A third approximation is chosen at run
 * time, in SMPI builds only: `--iterations K` (CG) times K of the class's identical outer
 * iterations and extrapolates the time to all of them (iteration sampling). */
#if (defined(HPCEVAL_SMPI_SAMPLE) || defined(HPCEVAL_SMPI_FOLD)) && !defined(HPCEVAL_SMPI)
#error "HPCEVAL_SMPI_SAMPLE and HPCEVAL_SMPI_FOLD need an SMPI build (smpicc -DHPCEVAL_SMPI)"
#endif
#if defined(HPCEVAL_SMPI) && !defined(SMPI_SAMPLE_LOCAL_TAG)
#error "HPCEVAL_SMPI is defined but this is not an SMPI compiler (smpicc)"
#endif

#if defined(HPCEVAL_SMPI_SAMPLE)
#ifndef NPB_SMPI_SAMPLES
#define NPB_SMPI_SAMPLES 4 /* real runs of each sampled block per rank before injecting */
#endif
/* NPB_SAMPLED(tag) { block }: `block` is a pure computation (no MPI call inside, SMPI
 * forbids it). The tag (a string, it may be built at run time) tells apart the blocks that
 * share a source line but not a duration, e.g. one stencil on different grid levels. */
#define NPB_SAMPLED(tag)                                                                     \
    npb_note_sampling();                                                                     \
    SMPI_SAMPLE_LOCAL_TAG(int npb_sample_once_ = 0, npb_sample_once_ < 1, ++npb_sample_once_, \
                          NPB_SMPI_SAMPLES, -1.0, (tag))
#define NPB_SMPI_SAMPLES_VALUE NPB_SMPI_SAMPLES
/* The same with the tag "<name>-<n>" (one per scope), for blocks whose work depends on n. */
#define NPB_SAMPLED_SIZED(name, n)                                                           \
    char npb_sample_tag_[64];                                                                \
    snprintf(npb_sample_tag_, sizeof npb_sample_tag_, "%s-%ld", (name), (long)(n));          \
    NPB_SAMPLED(npb_sample_tag_)
#else
#define NPB_SAMPLED(tag)
#define NPB_SAMPLED_SIZED(name, n)
#define NPB_SMPI_SAMPLES_VALUE 0
#endif

/* Records that this rank reached a sampled block (the result is then not checked). */
void npb_note_sampling(void);

/* Allocation of a big value array (never of indices: folded memory holds garbage, which in
 * an index array would send the program out of bounds) and its release. */
#if defined(HPCEVAL_SMPI_FOLD)
#define NPB_FOLDABLE_ALLOC(bytes, what) npb_shared_alloc((bytes), (what))
#define NPB_FOLDABLE_FREE(ptr) SMPI_SHARED_FREE(ptr)
void *npb_shared_alloc(size_t bytes, const char *what);
#else
#define NPB_FOLDABLE_ALLOC(bytes, what) npb_alloc((bytes), (what))
#define NPB_FOLDABLE_FREE(ptr) free(ptr)
#endif

/* The NPB generator: x_{k+1} = a * x_k mod 2^46, returns x_{k+1} * 2^-46. */
#define NPB_A 1220703125.0 /* 5^13 */
#define NPB_SEED 314159265.0

struct npb_options {
    char class_name; /* S, W, A, B, C or D */
    int iterations;  /* SMPI builds, CG: timed iterations to simulate (0: all of them) */
    int balance_threads; /* multi-zone programs: NPB-MZ's load balancing with threads */
};

/* One verified quantity: what the kernel computed, the official reference and the
 * tolerance on the relative error. */
struct npb_quantity {
    char name[48];
    double computed;
    double reference;
    double tolerance;
};

struct npb_result {
    const char *kernel; /* "ep", "is", "cg", "mg", "ft" */
    char class_name;
    double time_s;      /* the kernel's official timed section, max over ranks */
    double mops_total;  /* official operation count / time / 1e6 */
    int iterations;     /* the class's official count (the Mop/s count uses it) */
    int iterations_run; /* timed iterations actually run (SMPI iteration sampling); 0: all */
    int verified;       /* 1 when every quantity (and any kernel-specific check) passed;
                         * also 1 when verification was not checked (SMPI sampling/folding) */
    int nquantities;
    struct npb_quantity quantities[NPB_MAX_QUANTITIES];
    const char *note;   /* optional: why verification failed beyond the quantities */
    const char *extra;  /* optional: more members of the record ("name":value,...) */
};

/* Parses --class X (in SMPI builds of CG, --iterations K; in the multi-zone programs,
 * --balance-threads); every rank calls it and fails identically. */
void npb_parse_args(int argc, char **argv, const char *kernel, struct npb_options *opt);

/* Aborts every rank with a one-line message: {"record":"error",...} on stdout from the
 * calling rank, "npb-<kernel>: error: ..." on stderr, then MPI_Abort(MPI_COMM_WORLD, 2). */
void npb_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define NPB_CHECK_MPI(call)                                                                  \
    do {                                                                                     \
        int npb_rc_ = (call);                                                                \
        if (npb_rc_ != MPI_SUCCESS) npb_fail("%s:%d: %s failed (MPI error %d)", __FILE__,      \
                                             __LINE__, #call, npb_rc_);                      \
    } while (0)

/* A routine NPB compiles in a file of its own (BT's solve_subs.f): its callers cannot
 * inline it, clone it or learn anything from its body. GCC's noipa says all that of a
 * function in the same file; elsewhere noinline is the nearest. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#define NPB_SEPARATE_ROUTINE __attribute__((noipa))
#else
#define NPB_SEPARATE_ROUTINE __attribute__((noinline))
#endif

/* malloc that aborts all ranks, naming what it was for and how much it asked. */
void *npb_alloc(size_t bytes, const char *what);

/* The NPB generator (randlc) and its vector form (vranlc), x <- a x mod 2^46 for integers
 * below 2^46 held in doubles: the reference sequence, computed in 64-bit integers as NPB's
 * recommended randi8 build does (so that EP and FT cost what the reference costs). */
double randlc(double *x, double a);
void vranlc(int n, double *x, double a, double *y);

/* a^exponent in the generator's arithmetic: the multiplier that jumps `exponent` steps. */
double npb_jump_multiplier(double a, long long exponent);

int npb_is_power_of_two(int n);
int npb_threads(void); /* OpenMP threads per rank as launched (1 without OpenMP) */

/* Rank 0 prints the header record (kernel, class, ranks, threads, MPI library, hosts and
 * the problem size as a JSON object given by `problem_json`, e.g. "{\"na\":1400}"). */
void npb_print_header(const char *kernel, char class_name, const char *problem_json);

/* Rank 0 prints the result record, then the end record. The verification status is
 * computed here from the quantities (|computed - reference| <= tolerance * |reference|)
 * combined with result->verified for kernel-specific checks. */
void npb_print_result(struct npb_result *result);

/* Adds a quantity to a result (aborts past NPB_MAX_QUANTITIES). */
void npb_add_quantity(struct npb_result *result, const char *name, double computed,
                      double reference, double tolerance);

/* Adds n quantities named <prefix>1..<prefix>n (the pseudo-applications' norm vectors), each
 * reference multiplied by reference_scale (1 in real builds; the tests alter it). */
void npb_add_quantities(struct npb_result *result, const char *prefix, int n,
                        const double *computed, const double *reference,
                        double reference_scale, double tolerance);

/* ------------------------------------------- start-up and results of the ADI programs -- */

/* MPI_Init, this rank and the rank count, then npb_parse_args (every rank fails alike). */
void npb_start(int *argc, char ***argv, const char *kernel, struct npb_options *opt, int *rank,
               int *nranks);

/* The entry of a class table for `class_name`, or npb_fail("unknown class X"). Every entry
 * of the table must begin with its class letter (a `char name` first member). */
const void *npb_class_entry(const void *table, size_t count, size_t size, char class_name);
#define NPB_CLASS_ENTRY(table, class_name)                                                   \
    npb_class_entry((table), sizeof(table) / sizeof((table)[0]), sizeof((table)[0]),          \
                    (class_name))

/* p with nranks = p^2, the cells per axis of BT's and SP's multi-partition; npb_fail when
 * nranks is not a square or p is above max_cells. */
int npb_square_cells(const char *kernel, int nranks, int max_cells);

/* NPB's multi-partition of BT and SP (p^2 ranks, p^3 cells): rank (i0, j0) = (rank % p,
 * rank / p) owns the p cells coord[c] = ((i0 + c) % p, (j0 - c) % p, c), one in every slab
 * of cells along each axis; predecessor[a] / successor[a]: the ranks whose cells continue
 * this rank's cells towards -a / +a (along z, the neighbour's next cell). */
void npb_multipartition(int rank, int p, int (*coord)[3], int predecessor[3], int successor[3]);

/* The q-th of p cells along an axis of n points: *size points from global index *low (the
 * first n % p cells get one point more); npb_fail below 3 points (too many ranks). */
void npb_cell_extent(const char *kernel, int nranks, int n, int p, int q, int *size, int *low);

/* The manufactured exact solution of BT and SP (NPB's exact_solution with its ce(5,13)):
 * component m is a constant plus a quartic in each of xi, eta and zeta. */
void npb_adi_exact_solution(double xi, double eta, double zeta, double out[5]);

/* BT's and SP's RMS norms: the per-component sums of squares of this rank summed over
 * comm, divided by the interior points (grid - 2 per axis), square-rooted. */
void npb_rms_norms(const double local[5], const int grid[3], MPI_Comm comm, double rms[5]);

/* The result of BT, SP and their multi-zone versions: the residual norms xcr (over dt) and
 * error norms xce against the class's references (times reference_scale, 1 in real runs),
 * relative tolerance `tolerance`, printed by rank 0; returns the exit status (0, or 3 when
 * the verification failed). */
int npb_report_norms(const char *kernel, char class_name, double time_s, double mops_total,
                     int niter, const double xcr[5], const double xcr_reference[5],
                     const double xce[5], const double xce_reference[5],
                     double reference_scale, double tolerance);

/* The same for a result already filled in (the multi-zone programs' npb_mz_result): adds the
 * xcr and xce norms, prints it and returns the exit status. */
int npb_finish_norms(struct npb_result *result, const double xcr[5],
                     const double xcr_reference[5], const double xce[5],
                     const double xce_reference[5], double reference_scale, double tolerance);

#endif
