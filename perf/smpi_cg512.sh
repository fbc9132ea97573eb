#!/bin/sh
# Wall time of simulating NPB CG class C on 512 ranks with SimGrid SMPI (issue 7's speed
# goal: under 10 minutes on a 2-core machine), on the minimal 64 nodes x 8 cores platform of
# tests/data/smpi/ (not calibrated: the simulated time is not a projection of anything).
#
# usage: perf/smpi_cg512.sh [sample|fold|both|plain] [class] [ranks]   (default: both C 512)
# Builds the kernel with smpicc and the flags hpceval's npb build() uses for SMPI (see
# src/hpceval/benchmarks/npb/SMPI.md), then prints the result record and the wall time.
set -eu
mode=${1:-both}
class=${2:-C}
ranks=${3:-512}
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/src/hpceval/benchmarks/npb
data=$root/tests/data/smpi
case $mode in
plain) opts="" ;;
sample) opts="-DHPCEVAL_SMPI_SAMPLE" ;;
fold) opts="-DHPCEVAL_SMPI_FOLD" ;;
both) opts="-DHPCEVAL_SMPI_SAMPLE -DHPCEVAL_SMPI_FOLD" ;;
*) echo "smpi_cg512.sh: unknown mode '$mode' (plain, sample, fold, both)" >&2; exit 2 ;;
esac
command -v smpicc >/dev/null || { echo "smpi_cg512.sh: smpicc not found (Debian: libsimgrid-dev)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086  # $opts is a list of flags
smpicc -O3 -march=native -fopenmp-simd -std=c11 -DHPCEVAL_SMPI $opts -I"$src" \
    -o "$work/npb-cg" "$src/cg.c" "$src/npb_common.c" -lm
start=$(date +%s.%N)
smpirun -platform "$data/cluster-64x8.xml" -hostfile "$data/hosts-64x8.txt" -np "$ranks" \
    --cfg=smpi/host-speed:1Gf --cfg=smpi/display-timing:yes \
    --log=xbt_cfg.thres:warning --log=smpi_config.thres:warning \
    "$work/npb-cg" --class "$class" | grep -v '"record":"header"'
end=$(date +%s.%N)
echo "cg class $class, $ranks ranks, mode $mode: wall $(echo "$end - $start" | bc) s"
