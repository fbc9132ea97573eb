/*
 * mpibench: hpceval's MPI micro-benchmark program.
 *
 * The command line and the JSON-lines output are a contract with the Python side of
 * hpceval; docs/mpibench.md is that contract and this file implements it. The patterns
 * follow the Intel MPI Benchmarks (PingPong, PingPing, Sendrecv, Exchange, Bcast, Reduce,
 * Allreduce, Alltoall, Allgather, Barrier), the HPCC b_eff naturally and randomly
 * ordered rings, and concurrent pairs (multi_pingpong: every rank of the first half plays
 * PingPong with its partner in the second half, all pairs at once, as IMB's -multi mode
 * runs PingPong in several groups at the same time).
 *
 * One execution runs one pattern over a list of message sizes ("points"). Per point:
 * an untimed warm-up that also calibrates how many iterations one sample times
 * ("loops"), then samples until the 95 % confidence interval of the mean is narrow
 * enough, the time budget is spent, or the sample cap is reached. Every raw sample is
 * printed; statistics are left to hpceval.
 *
 * Build: mpicc -O2 -std=c11 -Wall -Wextra -Wpedantic -o mpibench mpibench.c -lm
 */

#include <mpi.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- constants -- */

#define MPIBENCH_VERSION "1.0"

/* Defaults of the command-line options (docs/mpibench.md, "Command line"). */
#define DEFAULT_TARGET_RCI 0.02
#define DEFAULT_BUDGET_S 1.0
#define DEFAULT_MIN_SAMPLES 10
#define DEFAULT_MAX_SAMPLES 1000
#define DEFAULT_WARMUP_S 0.05
#define DEFAULT_SAMPLE_S 0.001
#define DEFAULT_PAIR_A 0
#define DEFAULT_PAIR_B 1
#define DEFAULT_SEED 1u
#define DEFAULT_LARGEST_SIZE (4 * 1024 * 1024) /* default sizes run 0, 1, 2, 4, ... 4 MiB */

/* Larger messages are not needed to characterise a platform, and capping them keeps
 * every MPI count (an int) and every buffer-size product far from overflow. */
#define MAX_SIZE (1024 * 1024 * 1024)

/* The warm-up runs at least this many iterations whatever --warmup-s says, so that
 * first-touch and connection set-up costs never reach the first sample. */
#define MIN_WARMUP_ITERATIONS 2

/* ... and at least this many timed chunks, so that `loops` never rests on the single
 * first chunk (see warm_up). */
#define MIN_WARMUP_CHUNKS 3

/* Upper bound on iterations per sample: keeps the int count and the iteration
 * counter safe when an iteration is faster than the timer can resolve. */
#define MAX_LOOPS (1 << 30)

/* Used in place of MPI_Wtick() if a library ever reports a non-positive tick. */
#define FALLBACK_TICK_S 1e-9

/* Exit code passed to MPI_Abort for every error (docs/mpibench.md). */
#define ABORT_CODE 2

/* Bound on the length of an error message and of one user-supplied string quoted in it. */
#define ERROR_MESSAGE_MAX 512

/* Message tags. Distinct tags per direction keep exchanges well defined when the left
 * and the right neighbour are the same rank (2 ranks): a message travelling rightwards
 * always lands in the "from left" buffer. */
#define TAG_PING 1
#define TAG_PONG 2
#define TAG_RIGHTWARD 3
#define TAG_LEFTWARD 4

/* ------------------------------------------------------------ error handling -- */

/* Checks an MPI call; on failure reports the call, file:line and the MPI error string,
 * then aborts every rank. MPI_COMM_WORLD is switched to MPI_ERRORS_RETURN so that
 * failures come back here instead of killing the job without a JSON record. */
#define CHECK_MPI(call)                                                              \
    do {                                                                             \
        int check_rc_ = (call);                                                      \
        if (check_rc_ != MPI_SUCCESS) fail_mpi_call(check_rc_, #call, __FILE__, __LINE__); \
    } while (0)

/* Checks an allocation; on failure reports what could not be allocated, and where. */
#define CHECK_ALLOC(ptr, bytes, what)                                                \
    do {                                                                             \
        if ((ptr) == NULL)                                                           \
            fail("cannot allocate %zu bytes for %s (%s:%d)", (size_t)(bytes), (what),   \
                 base_name(__FILE__), __LINE__);                                     \
    } while (0)

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Makes text safe for one JSON line and for one stderr line, in place: runs of
 * whitespace (newlines included; MPI library version strings contain some) become one
 * space, leading and trailing space is dropped, and any byte that is not printable ASCII
 * becomes '?', because it may not be valid UTF-8 and then the line would not be JSON. */
static void sanitize_line(char *text)
{
    char *out = text;
    bool pending_space = false;
    for (const char *in = text; *in != '\0'; ++in) {
        unsigned char c = (unsigned char)*in;
        if (isspace(c)) {
            pending_space = (out != text);
            continue;
        }
        if (pending_space) *out++ = ' ';
        pending_space = false;
        *out++ = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    *out = '\0';
}

/* Writes a sanitized string (see sanitize_line) as a JSON string literal. */
static void json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const char *p = text; *p != '\0'; ++p) {
        if (*p == '"' || *p == '\\') fputc('\\', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

/* Prints the error record on stdout and the same message on stderr, from the calling
 * rank, then aborts the whole job. */
_Noreturn static void vfail(const char *fmt, va_list args)
{
    char message[ERROR_MESSAGE_MAX];
    vsnprintf(message, sizeof message, fmt, args);
    sanitize_line(message);

    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("{\"record\":\"error\",\"rank\":%d,\"message\":", rank);
    json_string(stdout, message);
    fputs("}\n", stdout);
    fflush(stdout);
    fprintf(stderr, "mpibench: error: %s\n", message);
    fflush(stderr);

    MPI_Abort(MPI_COMM_WORLD, ABORT_CODE);
    exit(ABORT_CODE); /* not reached: MPI_Abort ends the process */
}

_Noreturn static void fail(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vfail(fmt, args);
}

_Noreturn static void fail_mpi_call(int rc, const char *call, const char *file, int line)
{
    char reason[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(rc, reason, &length) != MPI_SUCCESS) snprintf(reason, sizeof reason, "MPI error %d", rc);
    fail("%.200s failed (%s:%d): %.200s", call, base_name(file), line, reason);
}

/* An error in the command line. Every rank parses the same argv and finds the same
 * error; only rank 0 reports it (once), the others wait in a barrier that rank 0 never
 * enters until its MPI_Abort ends the job. If they aborted too, one of them could kill
 * rank 0 before its record was printed. */
_Noreturn static void arg_error(int rank, const char *fmt, ...)
{
    if (rank == 0) {
        va_list args;
        va_start(args, fmt);
        vfail(fmt, args);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Abort(MPI_COMM_WORLD, ABORT_CODE);
    exit(ABORT_CODE);
}

/* ------------------------------------------------------------------ patterns -- */

enum pattern {
    PATTERN_PINGPONG,
    PATTERN_PINGPING,
    PATTERN_SENDRECV,
    PATTERN_EXCHANGE,
    PATTERN_BCAST,
    PATTERN_REDUCE,
    PATTERN_ALLREDUCE,
    PATTERN_ALLTOALL,
    PATTERN_ALLGATHER,
    PATTERN_BARRIER,
    PATTERN_NATURAL_RING,
    PATTERN_RANDOM_RING,
    PATTERN_MULTI_PINGPONG,
    PATTERN_COUNT,
    PATTERN_NONE = -1
};

static const char *const PATTERN_NAMES[PATTERN_COUNT] = {
    "pingpong", "pingping", "sendrecv", "exchange", "bcast", "reduce",
    "allreduce", "alltoall", "allgather", "barrier", "natural_ring", "random_ring", "multi_pingpong",
};

#define PATTERN_LIST                                                                 \
    "pingpong pingping sendrecv exchange bcast reduce allreduce alltoall allgather " \
    "barrier natural_ring random_ring multi_pingpong"

static bool is_collective(enum pattern p)
{
    return p >= PATTERN_BCAST && p <= PATTERN_BARRIER;
}

static bool sums_floats(enum pattern p)
{
    return p == PATTERN_REDUCE || p == PATTERN_ALLREDUCE;
}

static bool uses_pair(enum pattern p)
{
    return p == PATTERN_PINGPONG || p == PATTERN_PINGPING;
}

/* Point-to-point patterns and rings need a partner; a collective runs on one rank. */
static int min_ranks(enum pattern p)
{
    return is_collective(p) ? 1 : 2;
}

/* ------------------------------------------------------------------- options -- */

struct options {
    enum pattern pattern;
    int *sizes; /* message sizes in bytes, in run order */
    int nsizes;
    double target_rci;
    double budget_s;
    double warmup_s;
    double sample_s;
    int min_samples;
    int max_samples;
    int pair[2];
    uint64_t seed;
};

/* Parses a whole decimal integer in [lo, hi]; rejects empty text, leading blanks and
 * trailing junk, which strtoll alone would accept. */
static bool parse_integer(const char *text, long long lo, long long hi, long long *out)
{
    if (text[0] == '\0' || isspace((unsigned char)text[0])) return false;
    errno = 0;
    char *end = NULL;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < lo || value > hi) return false;
    *out = value;
    return true;
}

/* Parses a finite number >= 0 (all real-valued options are durations or ratios). */
static bool parse_nonnegative(const char *text, double *out)
{
    if (text[0] == '\0' || isspace((unsigned char)text[0])) return false;
    errno = 0;
    char *end = NULL;
    double value = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !isfinite(value) || value < 0.0) return false;
    *out = value;
    return true;
}

static void parse_pattern(int rank, const char *text, struct options *opt)
{
    for (int p = 0; p < PATTERN_COUNT; ++p) {
        if (strcmp(text, PATTERN_NAMES[p]) == 0) {
            opt->pattern = (enum pattern)p;
            return;
        }
    }
    arg_error(rank, "unknown pattern '%.64s' (expected one of: " PATTERN_LIST ")", text);
}

/* Parses a comma-separated list of sizes in bytes, 0 <= size <= MAX_SIZE. */
static void parse_sizes(int rank, const char *text, struct options *opt)
{
    int count = 1;
    for (const char *p = text; *p != '\0'; ++p) count += (*p == ',');

    int *sizes = malloc((size_t)count * sizeof *sizes);
    CHECK_ALLOC(sizes, (size_t)count * sizeof *sizes, "the size list");

    const char *token = text;
    for (int i = 0; i < count; ++i) {
        const char *comma = strchr(token, ',');
        size_t length = comma ? (size_t)(comma - token) : strlen(token);
        char item[32];
        long long value = 0;
        bool ok = length < sizeof item;
        if (ok) {
            memcpy(item, token, length);
            item[length] = '\0';
            ok = parse_integer(item, LLONG_MIN, LLONG_MAX, &value);
        }
        /* A long run of digits is a number, just too large; anything else is junk. */
        bool all_digits = length > 0 && strspn(token, "0123456789") >= length;
        const int shown = (int)(length > 64 ? 64 : length);
        if (!ok && all_digits)
            arg_error(rank, "size %.*s is larger than the maximum of %d bytes (1 GiB)", shown, token, MAX_SIZE);
        if (!ok) arg_error(rank, "unparseable size '%.*s' in --sizes '%.64s'", shown, token, text);
        if (value < 0) arg_error(rank, "negative size %lld in --sizes", value);
        if (value > MAX_SIZE) arg_error(rank, "size %lld is larger than the maximum of %d bytes (1 GiB)", value, MAX_SIZE);
        sizes[i] = (int)value;
        token += length + 1;
    }
    free(opt->sizes);
    opt->sizes = sizes;
    opt->nsizes = count;
}

static void parse_pair(int rank, const char *text, struct options *opt)
{
    const char *comma = strchr(text, ',');
    char first[32];
    long long a = 0, b = 0;
    bool ok = comma != NULL && (size_t)(comma - text) < sizeof first;
    if (ok) {
        memcpy(first, text, (size_t)(comma - text));
        first[comma - text] = '\0';
        ok = parse_integer(first, 0, INT32_MAX, &a) && parse_integer(comma + 1, 0, INT32_MAX, &b);
    }
    if (!ok) arg_error(rank, "unparseable --pair '%.64s' (expected two ranks A,B)", text);
    if (a == b) arg_error(rank, "--pair %lld,%lld names the same rank twice", a, b);
    opt->pair[0] = (int)a;
    opt->pair[1] = (int)b;
}

static void parse_count_option(int rank, const char *name, const char *text, int *out)
{
    long long value = 0;
    if (!parse_integer(text, 1, INT32_MAX, &value))
        arg_error(rank, "--%s needs an integer >= 1, got '%.64s'", name, text);
    *out = (int)value;
}

static void parse_real_option(int rank, const char *name, const char *text, double *out)
{
    if (!parse_nonnegative(text, out))
        arg_error(rank, "--%s needs a finite number >= 0, got '%.64s'", name, text);
}

static void parse_seed(int rank, const char *text, struct options *opt)
{
    /* strtoull would silently wrap a leading minus sign, so demand a digit first. */
    errno = 0;
    char *end = NULL;
    unsigned long long value = isdigit((unsigned char)text[0]) ? strtoull(text, &end, 10) : 0;
    if (!isdigit((unsigned char)text[0]) || errno != 0 || *end != '\0')
        arg_error(rank, "--seed needs an integer in [0, 2^64), got '%.64s'", text);
    opt->seed = (uint64_t)value;
}

enum option_id {
    OPT_PATTERN,
    OPT_SIZES,
    OPT_TARGET_RCI,
    OPT_BUDGET,
    OPT_MIN_SAMPLES,
    OPT_MAX_SAMPLES,
    OPT_WARMUP_S,
    OPT_SAMPLE_S,
    OPT_PAIR,
    OPT_SEED,
    OPTION_COUNT
};

static const char *const OPTION_NAMES[OPTION_COUNT] = {
    [OPT_PATTERN] = "pattern",         [OPT_SIZES] = "sizes",
    [OPT_TARGET_RCI] = "target-rci",   [OPT_BUDGET] = "budget",
    [OPT_MIN_SAMPLES] = "min-samples", [OPT_MAX_SAMPLES] = "max-samples",
    [OPT_WARMUP_S] = "warmup-s",       [OPT_SAMPLE_S] = "sample-s",
    [OPT_PAIR] = "pair",               [OPT_SEED] = "seed",
};

static void apply_option(int rank, enum option_id id, const char *value, struct options *opt)
{
    const char *name = OPTION_NAMES[id];
    switch (id) {
    case OPT_PATTERN: parse_pattern(rank, value, opt); break;
    case OPT_SIZES: parse_sizes(rank, value, opt); break;
    case OPT_TARGET_RCI: parse_real_option(rank, name, value, &opt->target_rci); break;
    case OPT_BUDGET: parse_real_option(rank, name, value, &opt->budget_s); break;
    case OPT_MIN_SAMPLES: parse_count_option(rank, name, value, &opt->min_samples); break;
    case OPT_MAX_SAMPLES: parse_count_option(rank, name, value, &opt->max_samples); break;
    case OPT_WARMUP_S: parse_real_option(rank, name, value, &opt->warmup_s); break;
    case OPT_SAMPLE_S: parse_real_option(rank, name, value, &opt->sample_s); break;
    case OPT_PAIR: parse_pair(rank, value, opt); break;
    case OPT_SEED: parse_seed(rank, value, opt); break;
    case OPTION_COUNT: break;
    }
}

/* Accepts "--name value" and "--name=value"; a repeated option keeps its last value. */
static void parse_options(int rank, int argc, char **argv, struct options *opt)
{
    *opt = (struct options){
        .pattern = PATTERN_NONE,
        .sizes = NULL,
        .nsizes = 0,
        .target_rci = DEFAULT_TARGET_RCI,
        .budget_s = DEFAULT_BUDGET_S,
        .warmup_s = DEFAULT_WARMUP_S,
        .sample_s = DEFAULT_SAMPLE_S,
        .min_samples = DEFAULT_MIN_SAMPLES,
        .max_samples = DEFAULT_MAX_SAMPLES,
        .pair = {DEFAULT_PAIR_A, DEFAULT_PAIR_B},
        .seed = DEFAULT_SEED,
    };
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            arg_error(rank, "unexpected argument '%.64s' (options start with --)", arg);
        const char *name = arg + 2;
        const char *equals = strchr(name, '=');
        size_t name_length = equals ? (size_t)(equals - name) : strlen(name);

        int index = -1;
        for (int k = 0; k < OPTION_COUNT; ++k)
            if (strlen(OPTION_NAMES[k]) == name_length && strncmp(name, OPTION_NAMES[k], name_length) == 0)
                index = k;
        if (index < 0)
            arg_error(rank, "unknown option '%.64s' (options: --pattern --sizes --target-rci --budget "
                      "--min-samples --max-samples --warmup-s --sample-s --pair --seed)", arg);

        const char *value = equals ? equals + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL) arg_error(rank, "option --%s needs a value", OPTION_NAMES[index]);
        apply_option(rank, (enum option_id)index, value, opt);
    }
}

/* Default sizes: 0 then the powers of two up to 4 MiB; reduce/allreduce start the powers
 * at 4 (one float); barrier has the single point 0. */
static void set_default_sizes(struct options *opt)
{
    int first_power = sums_floats(opt->pattern) ? 4 : 1;
    int count = 1;
    if (opt->pattern != PATTERN_BARRIER)
        for (int s = first_power; s <= DEFAULT_LARGEST_SIZE; s *= 2) ++count;

    opt->sizes = malloc((size_t)count * sizeof *opt->sizes);
    CHECK_ALLOC(opt->sizes, (size_t)count * sizeof *opt->sizes, "the size list");
    opt->nsizes = 0;
    opt->sizes[opt->nsizes++] = 0;
    if (opt->pattern != PATTERN_BARRIER)
        for (int s = first_power; s <= DEFAULT_LARGEST_SIZE; s *= 2) opt->sizes[opt->nsizes++] = s;
}

/* Checks what depends on more than one option or on the number of ranks, in a fixed
 * order so that every rank reports the same first error. */
static void validate_options(int rank, int nranks, struct options *opt)
{
    if (opt->pattern == PATTERN_NONE)
        arg_error(rank, "missing --pattern NAME (one of: " PATTERN_LIST ")");
    const char *name = PATTERN_NAMES[opt->pattern];
    if (nranks < min_ranks(opt->pattern))
        arg_error(rank, "pattern %s needs at least %d ranks, got %d", name, min_ranks(opt->pattern), nranks);
    if (opt->pattern == PATTERN_MULTI_PINGPONG && nranks % 2 != 0)
        arg_error(rank, "pattern %s needs an even number of ranks (rank i pairs with rank i + nranks/2), got %d",
                  name, nranks);
    if (uses_pair(opt->pattern) && (opt->pair[0] >= nranks || opt->pair[1] >= nranks))
        arg_error(rank, "--pair %d,%d is outside the ranks [0, %d)", opt->pair[0], opt->pair[1], nranks);
    if (opt->sizes == NULL) set_default_sizes(opt);
    if (sums_floats(opt->pattern))
        for (int i = 0; i < opt->nsizes; ++i)
            if (opt->sizes[i] % 4 != 0)
                arg_error(rank, "size %d is not a multiple of 4 (%s sums MPI_FLOAT elements)", opt->sizes[i], name);
}

/* ------------------------------------------------------------ communication -- */

/* What one iteration of a pattern needs on this rank. */
struct bench {
    enum pattern pattern;
    int rank;
    int nranks;
    int pair[2];     /* pingpong/pingping: the two active ranks (A, B) */
    int left, right; /* sendrecv/exchange/rings: neighbours */
    char *sendbuf;   /* separate send and receive buffers, as IMB uses */
    char *recvbuf;
    double tick; /* timer resolution, > 0 */
};

/* splitmix64 (Steele, Lea, Flood 2014): tiny, portable and well mixed, so every rank
 * computes the same permutation from the same seed without any communication. */
static uint64_t splitmix64_next(uint64_t *state)
{
    *state += UINT64_C(0x9E3779B97F4A7C15);
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform integer in [0, bound) without modulo bias: draws below 2^64 mod bound are
 * rejected so that the remaining range is a whole number of copies of [0, bound). */
static uint64_t uniform_below(uint64_t *state, uint64_t bound)
{
    uint64_t threshold = (UINT64_MAX - bound + 1) % bound;
    uint64_t draw;
    do {
        draw = splitmix64_next(state);
    } while (draw < threshold);
    return draw % bound;
}

/* Neighbours of this rank. The chain of sendrecv/exchange and the natural ring follow
 * rank order; the random ring orders the ranks by a Fisher-Yates shuffle seeded with
 * --seed (HPCC's randomly ordered ring), identical on all ranks. */
static void set_neighbours(struct bench *b, uint64_t seed)
{
    const int p = b->nranks;
    b->left = (b->rank + p - 1) % p;
    b->right = (b->rank + 1) % p;
    if (b->pattern != PATTERN_RANDOM_RING) return;

    int *ring = malloc((size_t)p * sizeof *ring);
    CHECK_ALLOC(ring, (size_t)p * sizeof *ring, "the random ring");
    for (int i = 0; i < p; ++i) ring[i] = i;
    uint64_t state = seed;
    for (int i = p - 1; i > 0; --i) {
        int j = (int)uniform_below(&state, (uint64_t)i + 1);
        int t = ring[i];
        ring[i] = ring[j];
        ring[j] = t;
    }
    for (int pos = 0; pos < p; ++pos) {
        if (ring[pos] == b->rank) {
            b->left = ring[(pos + p - 1) % p];
            b->right = ring[(pos + 1) % p];
        }
    }
    free(ring);
}

/* Bytes one buffer needs for message size n, or 0 if the pattern does not use it. */
static size_t send_bytes(enum pattern p, size_t n, size_t nranks)
{
    switch (p) {
    case PATTERN_BARRIER: return 0;
    case PATTERN_ALLTOALL: return n * nranks; /* one block per destination */
    default: return n; /* bcast uses this buffer alone, as both source and target */
    }
}

static size_t recv_bytes(enum pattern p, size_t n, size_t nranks)
{
    switch (p) {
    case PATTERN_BARRIER:
    case PATTERN_BCAST: return 0;
    case PATTERN_EXCHANGE:
    case PATTERN_NATURAL_RING:
    case PATTERN_RANDOM_RING: return 2 * n; /* one region per neighbour: concurrent receives must not overlap */
    case PATTERN_ALLTOALL:
    case PATTERN_ALLGATHER: return n * nranks;
    default: return n;
    }
}

/* Allocates both buffers once, at the largest size any point needs, and touches every
 * page so that no page fault is ever timed. The send buffer is filled with 0x3f bytes:
 * read as floats (reduce/allreduce) that is 0.747f, a normal number, so the reductions
 * never run into slow denormal arithmetic. */
static void allocate_buffers(struct bench *b, const struct options *opt)
{
    size_t most_send = 0, most_recv = 0;
    for (int i = 0; i < opt->nsizes; ++i) {
        /* n * nranks (alltoall, allgather) and 2n (exchange, rings) must fit a size_t;
         * always true with a 64-bit size_t, not with a 32-bit one. */
        if ((size_t)opt->sizes[i] > SIZE_MAX / 2 / (size_t)b->nranks)
            fail("size %d with %d ranks needs buffers larger than this machine can address", opt->sizes[i],
                 b->nranks);
        size_t s = send_bytes(b->pattern, (size_t)opt->sizes[i], (size_t)b->nranks);
        size_t r = recv_bytes(b->pattern, (size_t)opt->sizes[i], (size_t)b->nranks);
        most_send = s > most_send ? s : most_send;
        most_recv = r > most_recv ? r : most_recv;
    }
    /* Never malloc(0): it may return NULL, which would read as a failure. */
    most_send = most_send > 0 ? most_send : 1;
    most_recv = most_recv > 0 ? most_recv : 1;
    b->sendbuf = malloc(most_send);
    CHECK_ALLOC(b->sendbuf, most_send, "the send buffer");
    b->recvbuf = malloc(most_recv);
    CHECK_ALLOC(b->recvbuf, most_recv, "the receive buffer");
    memset(b->sendbuf, 0x3f, most_send);
    memset(b->recvbuf, 0, most_recv);
}

/* IMB PingPong: A sends n bytes to B, B sends them back. */
static void run_pingpong(const struct bench *b, int n, int iterations)
{
    const int a = b->pair[0], c = b->pair[1];
    if (b->rank == a) {
        for (int i = 0; i < iterations; ++i) {
            CHECK_MPI(MPI_Send(b->sendbuf, n, MPI_BYTE, c, TAG_PING, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(b->recvbuf, n, MPI_BYTE, c, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    } else if (b->rank == c) {
        for (int i = 0; i < iterations; ++i) {
            CHECK_MPI(MPI_Recv(b->recvbuf, n, MPI_BYTE, a, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(b->sendbuf, n, MPI_BYTE, a, TAG_PONG, MPI_COMM_WORLD));
        }
    }
    /* Other ranks stay idle; they next meet the pair in the per-sample gather. */
}

/* Concurrent pairs: rank i < nranks/2 plays PingPong with rank i + nranks/2, all pairs at
 * the same time (each sample starts from the common barrier). Ranks are placed node by node,
 * so with two nodes every pair crosses the network and nranks/2 flows share each NIC. */
static void run_multi_pingpong(const struct bench *b, int n, int iterations)
{
    const int half = b->nranks / 2;
    if (b->rank < half) {
        const int partner = b->rank + half;
        for (int i = 0; i < iterations; ++i) {
            CHECK_MPI(MPI_Send(b->sendbuf, n, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(b->recvbuf, n, MPI_BYTE, partner, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    } else {
        const int partner = b->rank - half;
        for (int i = 0; i < iterations; ++i) {
            CHECK_MPI(MPI_Recv(b->recvbuf, n, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(b->sendbuf, n, MPI_BYTE, partner, TAG_PONG, MPI_COMM_WORLD));
        }
    }
}

/* IMB PingPing: both ranks of the pair send at the same time, so each message meets
 * one going the other way. */
static void run_pingping(const struct bench *b, int n, int iterations)
{
    int other;
    if (b->rank == b->pair[0]) other = b->pair[1];
    else if (b->rank == b->pair[1]) other = b->pair[0];
    else return;
    for (int i = 0; i < iterations; ++i) {
        MPI_Request request;
        CHECK_MPI(MPI_Isend(b->sendbuf, n, MPI_BYTE, other, TAG_PING, MPI_COMM_WORLD, &request));
        CHECK_MPI(MPI_Recv(b->recvbuf, n, MPI_BYTE, other, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    }
}

/* Neighbour exchanges: IMB Sendrecv (periodic chain, one direction), IMB Exchange and
 * the HPCC b_eff rings (both directions at once). recvbuf holds the message from the
 * left neighbour first, then the one from the right. */
static void run_neighbours(const struct bench *b, int n, int iterations)
{
    char *from_left = b->recvbuf;
    char *from_right = b->recvbuf + n;
    if (b->pattern == PATTERN_SENDRECV) {
        for (int i = 0; i < iterations; ++i)
            CHECK_MPI(MPI_Sendrecv(b->sendbuf, n, MPI_BYTE, b->right, TAG_RIGHTWARD, from_left, n, MPI_BYTE,
                                   b->left, TAG_RIGHTWARD, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else if (b->pattern == PATTERN_EXCHANGE) {
        for (int i = 0; i < iterations; ++i) {
            MPI_Request requests[2];
            CHECK_MPI(MPI_Isend(b->sendbuf, n, MPI_BYTE, b->left, TAG_LEFTWARD, MPI_COMM_WORLD, &requests[0]));
            CHECK_MPI(MPI_Isend(b->sendbuf, n, MPI_BYTE, b->right, TAG_RIGHTWARD, MPI_COMM_WORLD, &requests[1]));
            CHECK_MPI(MPI_Recv(from_left, n, MPI_BYTE, b->left, TAG_RIGHTWARD, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(from_right, n, MPI_BYTE, b->right, TAG_LEFTWARD, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
        }
    } else { /* natural_ring, random_ring: receives posted first, as HPCC does */
        for (int i = 0; i < iterations; ++i) {
            MPI_Request requests[4];
            CHECK_MPI(MPI_Irecv(from_left, n, MPI_BYTE, b->left, TAG_RIGHTWARD, MPI_COMM_WORLD, &requests[0]));
            CHECK_MPI(MPI_Irecv(from_right, n, MPI_BYTE, b->right, TAG_LEFTWARD, MPI_COMM_WORLD, &requests[1]));
            CHECK_MPI(MPI_Isend(b->sendbuf, n, MPI_BYTE, b->left, TAG_LEFTWARD, MPI_COMM_WORLD, &requests[2]));
            CHECK_MPI(MPI_Isend(b->sendbuf, n, MPI_BYTE, b->right, TAG_RIGHTWARD, MPI_COMM_WORLD, &requests[3]));
            CHECK_MPI(MPI_Waitall(4, requests, MPI_STATUSES_IGNORE));
        }
    }
}

/* IMB collectives. bcast and reduce rotate the root over iterations (root = iteration
 * mod nranks), counting iterations over the whole point, so that the root also changes
 * between samples when a sample is a single iteration. */
static void run_collective(const struct bench *b, int n, int iterations, long long first_iteration)
{
    const int p = b->nranks;
    const int floats = n / 4;
    /* The root is advanced by increment, not by a 64-bit modulo in every iteration,
     * which would be a visible part of a one-rank barrier. The switch stays outside the
     * loops for the same reason. */
    int root = (int)(first_iteration % p);
    switch (b->pattern) {
    case PATTERN_BCAST:
        for (int i = 0; i < iterations; ++i) {
            CHECK_MPI(MPI_Bcast(b->sendbuf, n, MPI_BYTE, root, MPI_COMM_WORLD));
            root = (root + 1 == p) ? 0 : root + 1;
        }
        break;
    case PATTERN_REDUCE:
        for (int i = 0; i < iterations; ++i) {
            CHECK_MPI(MPI_Reduce(b->sendbuf, b->recvbuf, floats, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD));
            root = (root + 1 == p) ? 0 : root + 1;
        }
        break;
    case PATTERN_ALLREDUCE:
        for (int i = 0; i < iterations; ++i)
            CHECK_MPI(MPI_Allreduce(b->sendbuf, b->recvbuf, floats, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        break;
    case PATTERN_ALLTOALL:
        for (int i = 0; i < iterations; ++i)
            CHECK_MPI(MPI_Alltoall(b->sendbuf, n, MPI_BYTE, b->recvbuf, n, MPI_BYTE, MPI_COMM_WORLD));
        break;
    case PATTERN_ALLGATHER:
        for (int i = 0; i < iterations; ++i)
            CHECK_MPI(MPI_Allgather(b->sendbuf, n, MPI_BYTE, b->recvbuf, n, MPI_BYTE, MPI_COMM_WORLD));
        break;
    default: /* barrier: the size is ignored */
        for (int i = 0; i < iterations; ++i) CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        break;
    }
}

static void run_iterations(const struct bench *b, int n, int iterations, long long first_iteration)
{
    switch (b->pattern) {
    case PATTERN_PINGPONG: run_pingpong(b, n, iterations); break;
    case PATTERN_PINGPING: run_pingping(b, n, iterations); break;
    case PATTERN_MULTI_PINGPONG: run_multi_pingpong(b, n, iterations); break;
    case PATTERN_SENDRECV:
    case PATTERN_EXCHANGE:
    case PATTERN_NATURAL_RING:
    case PATTERN_RANDOM_RING: run_neighbours(b, n, iterations); break;
    default: run_collective(b, n, iterations, first_iteration); break;
    }
}

/* Wall time of `iterations` back-to-back iterations on this rank (seconds, > 0).
 * *iteration counts the iterations of the point so far (root rotation). */
static double time_iterations(const struct bench *b, int n, int iterations, long long *iteration)
{
    double start = MPI_Wtime();
    run_iterations(b, n, iterations, *iteration);
    double elapsed = MPI_Wtime() - start;
    *iteration += iterations;
    /* Below the timer's resolution the true time is at most one tick; reporting that
     * keeps every time positive (and the JSON free of zeros that would break ratios). */
    return elapsed > 0.0 ? elapsed : b->tick;
}

/* Whether rank r's time enters a sample: pingpong is timed on A only (IMB), pingping on
 * A and B, multi_pingpong on the first rank of every pair, everything else on all ranks. */
static bool is_timed_rank(const struct bench *b, int r)
{
    if (b->pattern == PATTERN_PINGPONG) return r == b->pair[0];
    if (b->pattern == PATTERN_PINGPING) return r == b->pair[0] || r == b->pair[1];
    if (b->pattern == PATTERN_MULTI_PINGPONG) return r < b->nranks / 2;
    return true;
}

/* --------------------------------------------------------------- statistics -- */

/* Two-sided 95 % quantile of Student's t, t(0.975; df). Exact table values for df 1..30
 * (computed with scipy.stats.t.ppf, 9 significant digits); beyond, the Cornish-Fisher
 * expansion about the normal quantile z = 1.959964, whose error is below 1e-4 at df 31
 * and shrinks as 1/df^3. */
static double student_t975(int df)
{
    static const double TABLE[30] = {
        12.7062047, 4.30265273, 3.18244631, 2.77644511, 2.57058184, 2.44691185,
        2.36462425, 2.30600414, 2.26215716, 2.22813885, 2.20098516, 2.17881283,
        2.16036866, 2.14478669, 2.13144955, 2.11990530, 2.10981558, 2.10092204,
        2.09302405, 2.08596345, 2.07961384, 2.07387307, 2.06865761, 2.06389856,
        2.05953855, 2.05552944, 2.05183052, 2.04840714, 2.04522964, 2.04227246,
    };
    if (df < 1) return INFINITY;
    if (df <= 30) return TABLE[df - 1];
    const double z = 1.959963985;
    const double z3 = z * z * z, z5 = z3 * z * z, v = (double)df;
    return z + (z3 + z) / (4.0 * v) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v);
}

/* Samples of one point, kept on rank 0 only. The stop test runs on t_max (the value the
 * doc calls "the sample"; for pingpong t_min = t_avg = t_max), using Welford's running
 * mean and sum of squared deviations. */
struct series {
    double *t_max_us;
    double *t_min_us;
    double *t_avg_us;
    int count;
    double mean;
    double m2;
};

static void series_add(struct series *s, double t_max, double t_min, double t_avg)
{
    s->t_max_us[s->count] = t_max;
    s->t_min_us[s->count] = t_min;
    s->t_avg_us[s->count] = t_avg;
    s->count += 1;
    double delta = t_max - s->mean;
    s->mean += delta / s->count;
    s->m2 += delta * (t_max - s->mean);
}

/* Half-width of the 95 % CI of the mean, relative to the mean (needs >= 2 samples). */
static double relative_ci(const struct series *s)
{
    double variance = s->m2 / (s->count - 1);
    double half_width = student_t975(s->count - 1) * sqrt(variance / s->count);
    return s->mean > 0.0 ? half_width / s->mean : INFINITY;
}

enum stop_reason { STOP_NONE, STOP_CI, STOP_BUDGET, STOP_MAX_SAMPLES };

static const char *const STOP_NAMES[] = {"none", "ci", "budget", "max_samples"};

/* Checked in the doc's order, so that a sample satisfying several reports "ci" first. */
static enum stop_reason decide_stop(const struct options *opt, const struct series *s, double spent_s)
{
    if (s->count >= opt->min_samples && s->count >= 2 && relative_ci(s) < opt->target_rci) return STOP_CI;
    if (spent_s >= opt->budget_s) return STOP_BUDGET;
    if (s->count >= opt->max_samples) return STOP_MAX_SAMPLES;
    return STOP_NONE;
}

/* ----------------------------------------------------------------- one point -- */

struct point {
    int size;
    long long warmup_iterations;
    int loops;
    enum stop_reason stop;
    double elapsed_s;
    struct series samples;
};

/* Iterations per sample so that a sample lasts about sample_s. */
static int loops_for(double seconds_per_iteration, double sample_s)
{
    double loops = floor(sample_s / seconds_per_iteration + 0.5);
    if (!(loops >= 1.0)) return 1;
    return loops > (double)MAX_LOOPS ? MAX_LOOPS : (int)loops;
}

/* Next warm-up chunk: the iterations that fit in `seconds` at `per_iteration`, at least
 * 1 and at most twice the last chunk. */
static int next_chunk(double seconds, double per_iteration, int last_chunk)
{
    double wanted = ceil(seconds / per_iteration);
    double most = 2.0 * last_chunk < MAX_LOOPS ? 2.0 * last_chunk : MAX_LOOPS;
    return !(wanted >= 1.0) ? 1 : wanted > most ? (int)most : (int)wanted;
}

/* Untimed warm-up in growing chunks. After each chunk rank 0 gets the slowest rank's
 * chunk time and decides, for all ranks (by broadcast, so that all run the same
 * iterations), either the next chunk or the end of the warm-up together with `loops`.
 * Chunks at most double, so the warm-up needs only a few decisions and overshoots
 * --warmup-s by about one chunk.
 * `loops` is calibrated on the fastest chunk (per iteration), not the last: on a loaded
 * or virtual machine a stall of tens of ms can land in any chunk, and the first chunks
 * pay first-touch costs. For the same reason the warm-up always runs at least
 * MIN_WARMUP_CHUNKS chunks: when one stalled first chunk used up --warmup-s, the
 * extra chunks (each about one sample long) still give a sound calibration. */
static void warm_up(const struct bench *b, const struct options *opt, int n, long long *iteration,
                    struct point *point)
{
    const double start = MPI_Wtime();
    long long done = 0;
    int chunks = 0;
    int chunk = MIN_WARMUP_ITERATIONS;
    double fastest = INFINITY; /* seconds per iteration, rank 0 only */
    for (;;) {
        double mine = time_iterations(b, n, chunk, iteration);
        double slowest = 0.0;
        CHECK_MPI(MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        done += chunk;
        chunks += 1;

        int decision[2] = {0, 0}; /* next chunk (0: warm-up over), loops */
        if (b->rank == 0) {
            double per_iteration = slowest / chunk;
            fastest = per_iteration < fastest ? per_iteration : fastest;
            double remaining_s = opt->warmup_s - (MPI_Wtime() - start);
            if (remaining_s > 0.0)
                decision[0] = next_chunk(remaining_s, per_iteration, chunk);
            else if (chunks < MIN_WARMUP_CHUNKS)
                decision[0] = next_chunk(opt->sample_s, fastest, chunk);
            else
                decision[1] = loops_for(fastest, opt->sample_s);
        }
        CHECK_MPI(MPI_Bcast(decision, 2, MPI_INT, 0, MPI_COMM_WORLD));
        if (decision[0] == 0) {
            point->loops = decision[1];
            point->warmup_iterations = done;
            return;
        }
        chunk = decision[0];
    }
}

/* Timed samples until rank 0 decides to stop. Each sample starts from a barrier; every
 * rank times `loops` iterations; rank 0 gathers the per-iteration times (µs) and reduces
 * them over the timed ranks to t_min, t_avg and t_max. `budget` counts rank 0's wall
 * time from the first sample, barriers and gathers included. */
static void sample(const struct bench *b, const struct options *opt, int n, long long *iteration,
                   double *gathered, struct point *point)
{
    const double start = MPI_Wtime();
    /* pingpong and multi_pingpong time round trips; IMB reports half of one. */
    const bool round_trips = b->pattern == PATTERN_PINGPONG || b->pattern == PATTERN_MULTI_PINGPONG;
    const double per_iteration_divisor = (double)point->loops * (round_trips ? 2.0 : 1.0);
    for (;;) {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        double mine_us = time_iterations(b, n, point->loops, iteration) / per_iteration_divisor * 1e6;
        CHECK_MPI(MPI_Gather(&mine_us, 1, MPI_DOUBLE, gathered, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));

        int stop = STOP_NONE;
        if (b->rank == 0) {
            double t_min = INFINITY, t_max = 0.0, sum = 0.0;
            int timed = 0;
            for (int r = 0; r < b->nranks; ++r) {
                if (!is_timed_rank(b, r)) continue;
                t_min = gathered[r] < t_min ? gathered[r] : t_min;
                t_max = gathered[r] > t_max ? gathered[r] : t_max;
                sum += gathered[r];
                ++timed;
            }
            series_add(&point->samples, t_max, t_min, sum / timed);
            stop = (int)decide_stop(opt, &point->samples, MPI_Wtime() - start);
        }
        CHECK_MPI(MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD));
        if (stop != STOP_NONE) {
            point->stop = (enum stop_reason)stop;
            return;
        }
    }
}

/* --------------------------------------------------------------------- output -- */

/* Writes a double with full precision (%.17g round-trips every double). A ".0" is added
 * to integral values so that they stay JSON floats, as in the doc ("budget_s":1.0).
 * Non-finite values cannot be written as JSON numbers; they become null (they cannot
 * occur: every time is > 0 and every option is checked finite). */
static void json_double(FILE *out, double value)
{
    if (!isfinite(value)) {
        fputs("null", out);
        return;
    }
    char text[40];
    snprintf(text, sizeof text, "%.17g", value);
    fputs(text, out);
    if (strpbrk(text, ".eE") == NULL) fputs(".0", out);
}

static void json_double_array(FILE *out, const double *values, int count)
{
    fputc('[', out);
    for (int i = 0; i < count; ++i) {
        if (i > 0) fputc(',', out);
        json_double(out, values[i]);
    }
    fputc(']', out);
}

/* Prints the header record. Collective: every rank contributes its processor name. */
static void print_header(const struct bench *b, const struct options *opt)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    int length = 0;
    memset(name, 0, sizeof name);
    CHECK_MPI(MPI_Get_processor_name(name, &length));
    char *names = NULL;
    if (b->rank == 0) {
        names = malloc((size_t)b->nranks * MPI_MAX_PROCESSOR_NAME);
        CHECK_ALLOC(names, (size_t)b->nranks * MPI_MAX_PROCESSOR_NAME, "the host names");
    }
    CHECK_MPI(MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
                         MPI_COMM_WORLD));
    if (b->rank != 0) return;

    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    int major = 0, minor = 0;
    CHECK_MPI(MPI_Get_library_version(library, &length));
    CHECK_MPI(MPI_Get_version(&major, &minor));
    sanitize_line(library);

    printf("{\"record\":\"header\",\"program\":\"mpibench\",\"version\":\"" MPIBENCH_VERSION "\",\"mpi_library\":");
    json_string(stdout, library);
    printf(",\"mpi_standard\":\"%d.%d\",\"nranks\":%d,\"hosts\":[", major, minor, b->nranks);
    for (int r = 0; r < b->nranks; ++r) {
        char *host = names + (size_t)r * MPI_MAX_PROCESSOR_NAME;
        host[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
        sanitize_line(host);
        if (r > 0) putchar(',');
        json_string(stdout, host);
    }
    printf("],\"pattern\":\"%s\",\"pair\":[%d,%d],\"sizes\":[", PATTERN_NAMES[opt->pattern], opt->pair[0],
           opt->pair[1]);
    for (int i = 0; i < opt->nsizes; ++i) printf(i > 0 ? ",%d" : "%d", opt->sizes[i]);
    fputs("],\"target_rci\":", stdout);
    json_double(stdout, opt->target_rci);
    fputs(",\"budget_s\":", stdout);
    json_double(stdout, opt->budget_s);
    printf(",\"min_samples\":%d,\"max_samples\":%d,\"warmup_s\":", opt->min_samples, opt->max_samples);
    json_double(stdout, opt->warmup_s);
    fputs(",\"sample_s\":", stdout);
    json_double(stdout, opt->sample_s);
    printf(",\"seed\":%" PRIu64 ",\"wtick\":", opt->seed);
    json_double(stdout, MPI_Wtick());
    fputs("}\n", stdout);
    fflush(stdout);
    free(names);
}

static void print_point(const struct bench *b, const struct point *point)
{
    const struct series *s = &point->samples;
    printf("{\"record\":\"point\",\"pattern\":\"%s\",\"size\":%d,\"nranks\":%d,\"warmup_iterations\":%lld,"
           "\"loops\":%d,\"samples\":%d,\"stop\":\"%s\",\"elapsed_s\":",
           PATTERN_NAMES[b->pattern], point->size, b->nranks, point->warmup_iterations, point->loops, s->count,
           STOP_NAMES[point->stop]);
    json_double(stdout, point->elapsed_s);
    fputs(",\"t_max_us\":", stdout);
    json_double_array(stdout, s->t_max_us, s->count);
    fputs(",\"t_min_us\":", stdout);
    json_double_array(stdout, s->t_min_us, s->count);
    fputs(",\"t_avg_us\":", stdout);
    json_double_array(stdout, s->t_avg_us, s->count);
    fputs("}\n", stdout);
    fflush(stdout);
}

/* ----------------------------------------------------------------------- main -- */

/* Measures every point and prints it as soon as it is done; returns the point count.
 * The sample arrays live on rank 0 and are reused from point to point. */
static int run_points(const struct bench *b, const struct options *opt)
{
    struct series storage = {0};
    double *gathered = NULL;
    if (b->rank == 0) {
        size_t bytes = (size_t)opt->max_samples * sizeof(double);
        storage.t_max_us = malloc(bytes);
        CHECK_ALLOC(storage.t_max_us, bytes, "the t_max samples");
        storage.t_min_us = malloc(bytes);
        CHECK_ALLOC(storage.t_min_us, bytes, "the t_min samples");
        storage.t_avg_us = malloc(bytes);
        CHECK_ALLOC(storage.t_avg_us, bytes, "the t_avg samples");
        gathered = malloc((size_t)b->nranks * sizeof *gathered);
        CHECK_ALLOC(gathered, (size_t)b->nranks * sizeof *gathered, "the per-rank times");
    }
    for (int i = 0; i < opt->nsizes; ++i) {
        const double start = MPI_Wtime();
        struct point point = {.size = opt->sizes[i], .stop = STOP_NONE, .samples = storage};
        point.samples.count = 0;
        point.samples.mean = 0.0;
        point.samples.m2 = 0.0;
        long long iteration = 0;
        warm_up(b, opt, point.size, &iteration, &point);
        sample(b, opt, point.size, &iteration, gathered, &point);
        point.elapsed_s = MPI_Wtime() - start;
        if (b->rank == 0) print_point(b, &point);
    }
    free(storage.t_max_us);
    free(storage.t_min_us);
    free(storage.t_avg_us);
    free(gathered);
    return opt->nsizes;
}

int main(int argc, char **argv)
{
    /* Before MPI_Init no error record can be printed; the MPI default handler aborts. */
    MPI_Init(&argc, &argv);
    const double start = MPI_Wtime();
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    struct bench b = {0};
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &b.rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &b.nranks));

    struct options opt;
    parse_options(b.rank, argc, argv, &opt);
    validate_options(b.rank, b.nranks, &opt);

    b.pattern = opt.pattern;
    b.pair[0] = opt.pair[0];
    b.pair[1] = opt.pair[1];
    b.tick = MPI_Wtick() > 0.0 ? MPI_Wtick() : FALLBACK_TICK_S;
    set_neighbours(&b, opt.seed);
    allocate_buffers(&b, &opt);

    print_header(&b, &opt);
    int points = run_points(&b, &opt);

    if (b.rank == 0) {
        printf("{\"record\":\"end\",\"status\":\"ok\",\"points\":%d,\"elapsed_s\":", points);
        json_double(stdout, MPI_Wtime() - start);
        fputs("}\n", stdout);
        fflush(stdout);
    }
    free(b.sendbuf);
    free(b.recvbuf);
    free(opt.sizes);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
