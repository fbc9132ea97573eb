/* Shared pieces of hpceval's NPB kernels: see npb_common.h. */
#define _POSIX_C_SOURCE 200809L
#include "npb_common.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const char *current_kernel = "npb";

/* ------------------------------------------------------------------ errors -- */

/* JSON string body: quotes and backslashes escaped, control characters (newlines in MPI
 * version strings) folded to spaces so that every record stays on one line. */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
        } else if (c < 0x20) {
            fputc(' ', out);
        } else {
            fputc(c, out);
        }
    }
    fputc('"', out);
}

/* %.17g round-trips a double; JSON has no NaN/inf, so those become null. */
static void json_double(FILE *out, double v)
{
    if (isfinite(v)) fprintf(out, "%.17g", v);
    else fputs("null", out);
}

void npb_fail(const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    int rank = 0, initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("{\"record\":\"error\",\"rank\":%d,\"message\":", rank);
    json_string(stdout, message);
    printf("}\n");
    fflush(stdout);
    fprintf(stderr, "npb-%s: error: %s\n", current_kernel, message);
    fflush(stderr);
    if (initialized) MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

void *npb_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL) npb_fail("cannot allocate %zu bytes for %s", bytes, what);
    return p;
}

#ifdef HPCEVAL_SMPI
/* What this rank actually skipped or folded: a kernel without a sampled block or a folded
 * array (IS, EP's folding) computes its real result, which is then verified as usual. */
static int smpi_sampled_blocks = 0;
static double smpi_folded_bytes = 0.0;
#endif

#if defined(HPCEVAL_SMPI_SAMPLE)
void npb_note_sampling(void)
{
    smpi_sampled_blocks = 1;
}
#endif

#if defined(HPCEVAL_SMPI_FOLD)
void *npb_shared_alloc(size_t bytes, const char *what)
{
    void *p = SMPI_SHARED_MALLOC(bytes > 0 ? bytes : 1);
    if (p == NULL) npb_fail("cannot allocate %zu bytes (folded) for %s", bytes, what);
    smpi_folded_bytes += (double)bytes;
    return p;
}
#endif

/* --------------------------------------------------------------- arguments -- */

void npb_parse_args(int argc, char **argv, const char *kernel, struct npb_options *opt)
{
    current_kernel = kernel;
    opt->class_name = 0;
    opt->iterations = 0;
    opt->balance_threads = 0;
    (void)npb_threads(); /* the launch's count, before any program changes it */
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--class") == 0 && i + 1 < argc) {
            const char *c = argv[++i];
            if (strlen(c) != 1 || strchr("SWABCD", c[0]) == NULL)
                npb_fail("invalid class '%s' (one of S, W, A, B, C, D)", c);
            opt->class_name = c[0];
        } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            const char *text = argv[++i];
#ifdef HPCEVAL_SMPI
            char *end = NULL;
            long k = strtol(text, &end, 10);
            if (end == text || *end != '\0' || k < 1 || k > 1000000)
                npb_fail("invalid --iterations '%s' (a positive count)", text);
            if (strcmp(kernel, "cg") != 0)
                npb_fail("--iterations: npb-%s has no iteration sampling (only cg)", kernel);
            opt->iterations = (int)k;
#else
            npb_fail("--iterations %s: only SMPI builds (simulations) may time fewer "
                     "iterations; a measurement runs all of them", text);
#endif
        } else if (strcmp(argv[i], "--balance-threads") == 0) {
            if (strstr(kernel, "-mz") == NULL)
                npb_fail("--balance-threads: only the multi-zone programs balance threads");
            opt->balance_threads = 1;
        } else {
            npb_fail("unknown argument '%s' (usage: npb-%s --class S|W|A|B|C|D)", argv[i], kernel);
        }
    }
    if (opt->class_name == 0) npb_fail("missing --class (S, W, A, B, C or D)");
}

/* ---------------------------------------------------------------- generator -- */

/* Multiplication modulo 2^46 with doubles only: both factors are split into 23-bit halves
 * so that every partial product is exact in a 53-bit mantissa. */
static const double two_m23 = 1.0 / 8388608.0;         /* 2^-23 */
static const double two_23 = 8388608.0;                /* 2^23 */
static const double two_m46 = 1.0 / 70368744177664.0;  /* 2^-46 */
static const double two_46 = 70368744177664.0;         /* 2^46 */

static double mul_mod_2_46(double a, double x)
{
    double a_hi = (double)(long long)(two_m23 * a);
    double a_lo = a - two_23 * a_hi;
    double x_hi = (double)(long long)(two_m23 * x);
    double x_lo = x - two_23 * x_hi;
    /* (a_hi*x_lo + a_lo*x_hi) mod 2^23, shifted up by 23 bits, plus a_lo*x_lo, mod 2^46. */
    double cross = a_hi * x_lo + a_lo * x_hi;
    double cross_hi = (double)(long long)(two_m23 * cross);
    double cross_mod = cross - two_23 * cross_hi;
    double sum = two_23 * cross_mod + a_lo * x_lo;
    double sum_hi = (double)(long long)(two_m46 * sum);
    return sum - two_46 * sum_hi;
}

/* randlc and vranlc as NPB's recommended build computes them (RAND = randi8, the default of
 * its make.def template): the seed and multiplier, integers below 2^46, are multiplied in
 * 64-bit integers and the low 46 bits kept. The numbers are those of the double-precision
 * form above (mul_mod_2_46, kept for the jumps); the cost per number, one serial integer
 * multiplication and a mask, is that of the reference build, which EP and FT time. */
#define NPB_MASK46 ((UINT64_C(1) << 46) - 1)

double randlc(double *x, double a)
{
    uint64_t lx = ((uint64_t)*x * (uint64_t)a) & NPB_MASK46;
    *x = (double)lx;
    return two_m46 * (double)lx;
}

void vranlc(int n, double *x, double a, double *y)
{
    uint64_t lx = (uint64_t)*x;
    const uint64_t la = (uint64_t)a;
    for (int i = 0; i < n; ++i) {
        lx = (lx * la) & NPB_MASK46;
        y[i] = two_m46 * (double)lx;
    }
    *x = (double)lx;
}

double npb_jump_multiplier(double a, long long exponent)
{
    /* Square-and-multiply in the generator's arithmetic. */
    double result = 1.0, base = a;
    while (exponent > 0) {
        if (exponent & 1) result = mul_mod_2_46(base, result);
        base = mul_mod_2_46(base, base);
        exponent >>= 1;
    }
    return result;
}

int npb_is_power_of_two(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

/* The count as launched, read once: a multi-zone program may give its rank another one
 * (NPB-MZ's thread balancing), the header and result records keep the launch's. */
static int launch_threads;

int npb_threads(void)
{
#ifdef _OPENMP
    if (launch_threads == 0) launch_threads = omp_get_max_threads();
    return launch_threads;
#else
    return 1;
#endif
}

/* ------------------------------------------------------------------ output -- */

void npb_print_header(const char *kernel, char class_name, const char *problem_json)
{
    int rank, nranks, len;
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    NPB_CHECK_MPI(MPI_Get_processor_name(name, &len));
    char *names = NULL;
    if (rank == 0) names = npb_alloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME, "host names");
    NPB_CHECK_MPI(MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME,
                             MPI_CHAR, 0, MPI_COMM_WORLD));
    if (rank != 0) return;
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int version, subversion;
    NPB_CHECK_MPI(MPI_Get_library_version(library, &len));
    NPB_CHECK_MPI(MPI_Get_version(&version, &subversion));
    printf("{\"record\":\"header\",\"program\":\"npb\",\"version\":\"%s\",\"kernel\":\"%s\","
           "\"class\":\"%c\",\"nranks\":%d,\"threads\":%d,\"mpi_library\":",
           NPB_PROTOCOL_VERSION, kernel, class_name, nranks, npb_threads());
    json_string(stdout, library);
    printf(",\"mpi_standard\":\"%d.%d\",\"hosts\":[", version, subversion);
    for (int r = 0; r < nranks; ++r) {
        if (r) putchar(',');
        json_string(stdout, names + (size_t)r * MPI_MAX_PROCESSOR_NAME);
    }
    printf("],\"problem\":%s}\n", problem_json);
    fflush(stdout);
    free(names);
}

void npb_add_quantity(struct npb_result *result, const char *name, double computed,
                      double reference, double tolerance)
{
    if (result->nquantities >= NPB_MAX_QUANTITIES) npb_fail("too many verification quantities");
    struct npb_quantity *q = &result->quantities[result->nquantities++];
    snprintf(q->name, sizeof q->name, "%s", name);
    q->computed = computed;
    q->reference = reference;
    q->tolerance = tolerance;
}

void npb_add_quantities(struct npb_result *result, const char *prefix, int n,
                        const double *computed, const double *reference,
                        double reference_scale, double tolerance)
{
    for (int m = 0; m < n; ++m) {
        char name[sizeof result->quantities[0].name];
        snprintf(name, sizeof name, "%s%d", prefix, m + 1);
        npb_add_quantity(result, name, computed[m], reference[m] * reference_scale, tolerance);
    }
}

static double relative_error(const struct npb_quantity *q)
{
    double scale = fabs(q->reference) > 0.0 ? fabs(q->reference) : 1.0;
    return fabs(q->computed - q->reference) / scale;
}

void npb_print_result(struct npb_result *result)
{
    int rank, nranks;
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    int passed = result->verified;
    for (int i = 0; i < result->nquantities; ++i) {
        double e = relative_error(&result->quantities[i]);
        if (!(isfinite(e) && e <= result->quantities[i].tolerance)) passed = 0;
    }
#ifdef HPCEVAL_SMPI
    /* Skipped or aliased computations on any rank: the quantities are garbage, neither a
     * pass nor a failure (the run itself went through: exit status 0). */
    double used_local[2] = {(double)smpi_sampled_blocks, smpi_folded_bytes}, used[2];
    NPB_CHECK_MPI(MPI_Allreduce(used_local, used, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    const int sampled = used[0] > 0.0, folded = used[1] > 0.0;
    const int iterations_run =
        result->iterations_run > 0 ? result->iterations_run : result->iterations;
    const int truncated = iterations_run < result->iterations;
    const int checked = !sampled && !folded && !truncated;
    if (!checked) passed = 1;
#else
    const int checked = 1;
#endif
    result->verified = passed;
    if (rank != 0) return;
    printf("{\"record\":\"result\",\"kernel\":\"%s\",\"class\":\"%c\",\"nranks\":%d,\"threads\":%d,"
           "\"time_s\":",
           result->kernel, result->class_name, nranks, npb_threads());
    json_double(stdout, result->time_s);
    printf(",\"mops_total\":");
    json_double(stdout, result->mops_total);
    printf(",\"mops_per_process\":");
    json_double(stdout, result->mops_total / nranks);
    printf(",\"iterations\":%d,\"verified\":%s,\"verification\":[", result->iterations,
           !checked ? "null" : passed ? "true" : "false");
    for (int i = 0; i < result->nquantities; ++i) {
        const struct npb_quantity *q = &result->quantities[i];
        double e = relative_error(q);
        printf("%s{\"quantity\":", i ? "," : "");
        json_string(stdout, q->name);
        printf(",\"computed\":");
        json_double(stdout, q->computed);
        printf(",\"reference\":");
        json_double(stdout, q->reference);
        printf(",\"rel_error\":");
        json_double(stdout, e);
        printf(",\"tolerance\":");
        json_double(stdout, q->tolerance);
        printf(",\"passed\":%s}",
               !checked ? "null" : isfinite(e) && e <= q->tolerance ? "true" : "false");
    }
    printf("]");
#ifdef HPCEVAL_SMPI
    /* What the simulated program skipped, so that a reader can tell a simulated result
     * from a measured one and knows why it was not verified (docs: SMPI.md). */
    int sampling = 0, folding = 0; /* built with the option */
#ifdef HPCEVAL_SMPI_SAMPLE
    sampling = 1;
#endif
#ifdef HPCEVAL_SMPI_FOLD
    folding = 1;
#endif
    printf(",\"smpi\":{\"sampling\":%s,\"samples\":%d,\"memory_folding\":%s,"
           "\"sampled\":%s,\"folded_bytes\":%.0f,\"iterations_run\":%d}",
           sampling ? "true" : "false", sampling ? NPB_SMPI_SAMPLES_VALUE : 0,
           folding ? "true" : "false", sampled ? "true" : "false", used[1], iterations_run);
    if (checked) {
        printf(",\"verification_status\":\"%s\"", passed ? "passed" : "failed");
    } else {
        char reason[160] = "";
        if (sampled) strcat(reason, "computation sampling");
        if (folded) strcat(reason, *reason ? " and memory folding" : "memory folding");
        if (truncated)
            snprintf(reason + strlen(reason), sizeof reason - strlen(reason),
                     "%siteration sampling (%d of %d)", *reason ? " and " : "", iterations_run,
                     result->iterations);
        printf(",\"verification_status\":\"not_checked\",\"not_checked_reason\":\"%s\"",
               reason);
    }
#endif
    if (result->note) {
        printf(",\"note\":");
        json_string(stdout, result->note);
    }
    if (result->extra) printf(",%s", result->extra);
    printf("}\n{\"record\":\"end\",\"status\":\"%s\"}\n",
           !checked ? "not_checked" : passed ? "ok" : "verification_failed");
    fflush(stdout);
}

/* ------------------------------------------- start-up and results of the ADI programs -- */

void npb_start(int *argc, char ***argv, const char *kernel, struct npb_options *opt, int *rank,
               int *nranks)
{
    NPB_CHECK_MPI(MPI_Init(argc, argv));
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, nranks));
    npb_parse_args(*argc, *argv, kernel, opt);
}

const void *npb_class_entry(const void *table, size_t count, size_t size, char class_name)
{
    for (size_t i = 0; i < count; ++i) {
        const char *entry = (const char *)table + i * size;
        if (*entry == class_name) return entry;
    }
    npb_fail("unknown class %c", class_name);
}

int npb_square_cells(const char *kernel, int nranks, int max_cells)
{
    int p = (int)(sqrt((double)nranks) + 0.5);
    if (p * p != nranks)
        npb_fail("%s needs a square number of ranks (1, 4, 9, 16, ...), got %d", kernel, nranks);
    if (p > max_cells)
        npb_fail("%s runs on at most %d ranks, got %d", kernel, max_cells * max_cells, nranks);
    return p;
}

void npb_multipartition(int rank, int p, int (*coord)[3], int predecessor[3], int successor[3])
{
    const int i0 = rank % p, j0 = rank / p;
    for (int c = 0; c < p; ++c) {
        coord[c][0] = (i0 + c) % p;
        coord[c][1] = ((j0 - c) % p + p) % p;
        coord[c][2] = c;
    }
    predecessor[0] = (i0 - 1 + p) % p + p * j0;
    predecessor[1] = i0 + p * ((j0 - 1 + p) % p);
    predecessor[2] = (i0 + 1) % p + p * ((j0 - 1 + p) % p);
    successor[0] = (i0 + 1) % p + p * j0;
    successor[1] = i0 + p * ((j0 + 1) % p);
    successor[2] = (i0 - 1 + p) % p + p * ((j0 + 1) % p);
}

void npb_cell_extent(const char *kernel, int nranks, int n, int p, int q, int *size, int *low)
{
    const int base = n / p, excess = n % p;
    *size = q < excess ? base + 1 : base;
    *low = q < excess ? q * (base + 1) : excess * (base + 1) + (q - excess) * base;
    if (*size < 3)
        npb_fail("%s: %d ranks cut the %d-point axis into cells of %d points; the minimum is 3 "
                 "(use fewer ranks)",
                 kernel, nranks, n, *size);
}

void npb_adi_exact_solution(double xi, double eta, double zeta, double out[5])
{
    static const double ce[5][13] = {
        {2.0, 0.0, 0.0, 4.0, 5.0, 3.0, 0.5, 0.02, 0.01, 0.03, 0.5, 0.4, 0.3},
        {1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.01, 0.03, 0.02, 0.4, 0.3, 0.5},
        {2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.04, 0.03, 0.05, 0.3, 0.5, 0.4},
        {2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.03, 0.05, 0.04, 0.2, 0.1, 0.3},
        {5.0, 4.0, 3.0, 2.0, 0.1, 0.4, 0.3, 0.05, 0.04, 0.03, 0.1, 0.3, 0.2},
    };
    for (int m = 0; m < 5; ++m) {
        const double *e = ce[m];
        out[m] = e[0] + xi * (e[1] + xi * (e[4] + xi * (e[7] + xi * e[10]))) +
                 eta * (e[2] + eta * (e[5] + eta * (e[8] + eta * e[11]))) +
                 zeta * (e[3] + zeta * (e[6] + zeta * (e[9] + zeta * e[12])));
    }
}

void npb_rms_norms(const double local[5], const int grid[3], MPI_Comm comm, double rms[5])
{
    NPB_CHECK_MPI(MPI_Allreduce(local, rms, 5, MPI_DOUBLE, MPI_SUM, comm));
    for (int m = 0; m < 5; ++m) {
        for (int a = 0; a < 3; ++a) rms[m] /= (double)(grid[a] - 2);
        rms[m] = sqrt(rms[m]);
    }
}

int npb_report_norms(const char *kernel, char class_name, double time_s, double mops_total,
                     int niter, const double xcr[5], const double xcr_reference[5],
                     const double xce[5], const double xce_reference[5],
                     double reference_scale, double tolerance)
{
    struct npb_result result;
    memset(&result, 0, sizeof result);
    result.kernel = kernel;
    result.class_name = class_name;
    result.time_s = time_s;
    result.mops_total = mops_total;
    result.iterations = niter;
    result.verified = 1;
    return npb_finish_norms(&result, xcr, xcr_reference, xce, xce_reference, reference_scale,
                            tolerance);
}

int npb_finish_norms(struct npb_result *result, const double xcr[5],
                     const double xcr_reference[5], const double xce[5],
                     const double xce_reference[5], double reference_scale, double tolerance)
{
    npb_add_quantities(result, "xcr", 5, xcr, xcr_reference, reference_scale, tolerance);
    npb_add_quantities(result, "xce", 5, xce, xce_reference, reference_scale, tolerance);
    npb_print_result(result);
    return result->verified ? 0 : 3;
}
