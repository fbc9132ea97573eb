#!/usr/bin/env bash
# Checks ./setup.sh from scratch in a minimal Debian 12 (bookworm) chroot.
#
#   scripts/fresh-debian-check.sh [--fresh] [--no-smoke] [SUBCOMMAND [ARGS...]]
#
# SUBCOMMAND and ARGS go to ./setup.sh inside the chroot (default: deps), e.g.
#   scripts/fresh-debian-check.sh --fresh deps     from a pristine chroot
#   scripts/fresh-debian-check.sh test -x          the whole ruff/mypy/pytest run
#
# Steps: create the chroot with debootstrap (--variant=minbase) or reuse it; bind-mount it onto
# itself (its root a mount point, as on a booted machine: `ip netns` needs that), /proc, /sys
# with what is mounted below it (the cgroups slurmd needs), /dev, /dev/pts and /dev/shm (Open
# MPI needs the last); copy the current work tree
# (tracked and untracked, not ignored, without .git) to /root/hpceval inside, keeping the
# .venv left there by an earlier run; add this machine's local CA certificates; run `./setup.sh SUBCOMMAND ARGS` there as root with no
# stdin and a clean environment; then, unless --no-smoke, check `import hpceval`,
# `mpicc --version` and `mpirun -np 2 hostname`. Everything mounted is unmounted on exit, even
# on failure.
#
# --fresh       start from a pristine chroot: restored from the tarball saved right after the
#               first debootstrap (ROOTFS-base.tar), or debootstrapped anew if there is none.
# --no-smoke    skip the checks after the setup.sh call.
#
# Environment: FRESH_DEBIAN_ROOT (default /tmp/fresh-debian), FRESH_DEBIAN_MIRROR and
# FRESH_DEBIAN_SECURITY_MIRROR (default: the ones in this machine's apt sources, else
# deb.debian.org). Needs root on a Debian-family host (debootstrap is installed if missing).
set -euo pipefail

SRC=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
readonly SRC
readonly ROOTFS=${FRESH_DEBIAN_ROOT:-/tmp/fresh-debian}
readonly BASE_TAR="$ROOTFS-base.tar"
readonly SUITE=bookworm
readonly DEST=/root/hpceval

say() { printf 'fresh-debian: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

MOUNTED=()

cleanup() {
    local i
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
        umount -R -- "${MOUNTED[$i]}" 2>/dev/null || umount -R -l -- "${MOUNTED[$i]}" ||
            say "could not unmount ${MOUNTED[$i]}"
    done
    MOUNTED=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Prints the mount points at or below ROOTFS (there should be none outside a run).
mounts_below_rootfs() {
    awk -v root="$ROOTFS" '$5 == root || index($5, root "/") == 1 { print $5 }' \
        /proc/self/mountinfo
}

# The first URI in this machine's apt sources that serves suite $1, else $2.
host_mirror() {
    local suite=$1 fallback=$2 uri=""
    if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
        uri=$(awk -v suite="$suite" '
            /^[[:space:]]*$/ { if (u != "" && s) { print u; exit } u = ""; s = 0; next }
            /^URIs:/ { u = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) s = 1 }
            END { if (u != "" && s) print u }' /etc/apt/sources.list.d/*.sources | head -n 1)
    fi
    if [[ -z $uri && -r /etc/apt/sources.list ]]; then
        uri=$(awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }' \
            /etc/apt/sources.list)
    fi
    printf '%s\n' "${uri:-$fallback}"
}

remove_rootfs() {
    [[ -z $(mounts_below_rootfs) ]] || die "something is still mounted under $ROOTFS"
    rm -rf --one-file-system -- "$ROOTFS"
}

create_rootfs() {
    local mirror security
    mirror=${FRESH_DEBIAN_MIRROR:-$(host_mirror "$SUITE" http://deb.debian.org/debian)}
    security=${FRESH_DEBIAN_SECURITY_MIRROR:-$(host_mirror "$SUITE-security" \
        http://deb.debian.org/debian-security)}
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null ||
            { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -q debootstrap >/dev/null; }
    fi
    remove_rootfs
    say "debootstrap --variant=minbase $SUITE $ROOTFS $mirror"
    debootstrap --variant=minbase "$SUITE" "$ROOTFS" "$mirror" >"$ROOTFS.debootstrap.log" 2>&1 ||
        { tail -n 30 "$ROOTFS.debootstrap.log" >&2; die "debootstrap failed"; }
    # The suites an installed Debian 12 machine has, like this one.
    cat >"$ROOTFS/etc/apt/sources.list" <<EOF
deb $mirror $SUITE main
deb $mirror $SUITE-updates main
deb $security $SUITE-security main
EOF
    # No daemons started inside the chroot (they would outlive the run and hold the mounts).
    printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d"
    chmod 755 "$ROOTFS/usr/sbin/policy-rc.d"
    tar -C "$ROOTFS" -cf "$BASE_TAR" .
    say "pristine copy saved as $BASE_TAR"
}

restore_rootfs() {
    remove_rootfs
    mkdir -p -- "$ROOTFS"
    tar -C "$ROOTFS" -xf "$BASE_TAR"
    say "restored pristine $ROOTFS from $BASE_TAR"
}

mount_into() {
    local what=$1 where="$ROOTFS$2"
    shift 2
    mkdir -p -- "$where"
    mount "$@" -- "$what" "$where"
    MOUNTED+=("$where")
}

mount_all() {
    [[ -z $(mounts_below_rootfs) ]] || die "already mounted under $ROOTFS (another run?)"
    # The root a mount point of its own, as on a booted machine: `ip netns` makes "/" a
    # slave mount, which fails on a plain directory ("mount --make-rslave /": EINVAL).
    mount_into "$ROOTFS" "" --bind
    mount_into proc /proc -t proc
    # /sys with what is mounted below it (slurmd needs the cgroup file system there), as a
    # slave so that unmounting it here never unmounts the host's.
    mount_into /sys /sys --rbind
    mount --make-rslave -- "$ROOTFS/sys"
    mount_into /dev /dev --bind
    mount_into /dev/pts /dev/pts --bind
    mount_into /dev/shm /dev/shm --bind
}

# Copies the work tree (tracked and untracked files that git does not ignore) to DEST,
# replacing what an earlier run copied but keeping its .venv.
copy_tree() {
    local dest="$ROOTFS$DEST"
    mkdir -p -- "$dest"
    find "$dest" -mindepth 1 -maxdepth 1 ! -name .venv -exec rm -rf --one-file-system -- {} +
    if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (
            cd -- "$SRC"
            git ls-files -z --cached --others --exclude-standard |
                while IFS= read -r -d '' f; do
                    if [[ -e $f || -L $f ]]; then printf '%s\0' "$f"; fi
                done |
                tar --null -T - -cf -
        ) | tar -C "$dest" -xf -
    else
        tar -C "$SRC" --exclude=./.git --exclude=./.venv --exclude='*/__pycache__' \
            -cf - . | tar -C "$dest" -xf -
    fi
}

# Local CA certificates of this machine (e.g. an HTTPS proxy's CA that pip must trust) go into
# the chroot as well; the ca-certificates package's postinst (or the update below) adds them
# to /etc/ssl/certs/ca-certificates.crt, which Debian's pip uses.
copy_host_cas() {
    local dir=/usr/local/share/ca-certificates
    [[ -d $dir ]] && [[ -n $(find "$dir" -name '*.crt' -print -quit) ]] || return 0
    mkdir -p -- "$ROOTFS$dir"
    cp -a -- "$dir/." "$ROOTFS$dir/"
    if [[ -x $ROOTFS/usr/sbin/update-ca-certificates ]]; then
        in_chroot 'update-ca-certificates >/dev/null 2>&1'
    fi
}

in_chroot() {
    chroot "$ROOTFS" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI="${CI:-}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -c "$1" "${@:2}" </dev/null
}

main() {
    local fresh=0 smoke=1 start rc=0
    while (($# > 0)); do
        case $1 in
            --fresh) fresh=1 ;;
            --no-smoke) smoke=0 ;;
            -h | --help)
                sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
                return 0
                ;;
            -*) die "unknown option $1" ;;
            *) break ;;
        esac
        shift
    done
    (($# > 0)) || set -- deps
    ((EUID == 0)) || die "must run as root (debootstrap, mount, chroot)"

    if [[ ! -f $ROOTFS/etc/debian_version ]]; then
        if [[ -f $BASE_TAR ]]; then restore_rootfs; else create_rootfs; fi
    elif ((fresh)); then
        if [[ -f $BASE_TAR ]]; then restore_rootfs; else create_rootfs; fi
    else
        say "reusing $ROOTFS"
    fi
    cp -L /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
    copy_tree
    mount_all
    copy_host_cas

    say "running ./setup.sh $* in $ROOTFS:$DEST"
    start=$(date +%s.%N)
    # shellcheck disable=SC2016  # expanded inside the chroot
    in_chroot 'cd "$0" && ./setup.sh "$@"' "$DEST" "$@" || rc=$?
    say "./setup.sh $* exited $rc after $(awk -v a="$start" -v b="$(date +%s.%N)" \
        'BEGIN { printf "%.1f", b - a }') s"
    ((rc == 0)) || return "$rc"

    if ((smoke)); then
        say "smoke checks"
        # shellcheck disable=SC2016  # expanded inside the chroot
        in_chroot 'set -e; cd "$0"
            .venv/bin/python -c "import hpceval; print(\"import hpceval: ok\")"
            mpicc --version | head -n 1
            mpirun --allow-run-as-root -np 2 hostname' "$DEST"
    fi
    say "ok"
}

main "$@"
