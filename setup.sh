#!/usr/bin/env bash
# hpceval's single set-up entry point.
#
#   ./setup.sh deps                  set up only: Debian packages, then .venv
#   ./setup.sh run [ARGS...]         set up, then .venv/bin/hpceval run ARGS...
#   ./setup.sh test [PYTEST ARGS...] set up, then ruff, mypy, lint-imports and pytest
#
# System packages come from scripts/packages.txt. As root on Debian/Ubuntu, missing ones are
# installed with apt-get; otherwise each missing one is named and setup fails. The virtual
# environment .venv gets `pip install -e .[dev,postgres]` only when it is new or pyproject.toml
# changed since the last install (stamp file inside .venv). Messages go to stderr, so that the
# output of `./setup.sh run` stays the program's own.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
readonly ROOT
readonly PACKAGES_FILE="$ROOT/scripts/packages.txt"
readonly VENV="$ROOT/.venv"
readonly STAMP="$VENV/.hpceval-setup-stamp"
readonly EXTRAS="dev,postgres"
readonly MIN_PY="3.11"

say() { printf 'setup: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

usage() {
    cat >&2 <<'EOF'
usage: ./setup.sh deps                  set up only (system packages, .venv)
       ./setup.sh run [ARGS...]         set up, then run `hpceval run ARGS...`
       ./setup.sh test [PYTEST ARGS...] set up, then ruff, mypy, lint-imports and pytest
EOF
}

did_something=0

# ---------------------------------------------------------------- system packages

PKG_NAMES=()
PKG_PROBES=()
PKG_WHYS=()

load_packages() {
    local name probe why
    [[ -r $PACKAGES_FILE ]] || die "cannot read $PACKAGES_FILE"
    while read -r name probe why; do
        [[ -z $name || $name == \#* ]] && continue
        [[ -n $probe ]] || die "$PACKAGES_FILE: no probe for $name"
        PKG_NAMES+=("$name")
        PKG_PROBES+=("$probe")
        PKG_WHYS+=("${why:-needed by hpceval}")
    done <"$PACKAGES_FILE"
}

is_debian_family() {
    command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1
}

# Prints the names of the listed packages that dpkg does not have fully installed.
dpkg_missing() {
    local installed name
    # dpkg-query exits 1 when a package is unknown; its status line is then simply absent.
    installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PKG_NAMES[@]}" \
        2>/dev/null | awk '$2 == "ii" { print $1 }' || true)
    for name in "${PKG_NAMES[@]}"; do
        grep -qxF -- "$name" <<<"$installed" || printf '%s\n' "$name"
    done
}

# Succeeds when the probe says the package's contents are there (systems without dpkg).
probe_ok() {
    local probe=$1
    case $probe in
        cmd:*) command -v "${probe#cmd:}" >/dev/null 2>&1 ;;
        file:*) [[ -e ${probe#file:} ]] ;;
        pymod:*) python3 -c "import ${probe#pymod:}" >/dev/null 2>&1 ;;
        pyhdr)
            python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
                >/dev/null 2>&1
            ;;
        *) die "$PACKAGES_FILE: unknown probe '$probe'" ;;
    esac
}

why_of() {
    local i
    for i in "${!PKG_NAMES[@]}"; do
        if [[ ${PKG_NAMES[$i]} == "$1" ]]; then
            printf '%s\n' "${PKG_WHYS[$i]}"
            return
        fi
    done
}

apt_install() {
    local log rc=0
    log=$(mktemp "${TMPDIR:-/tmp}/hpceval-apt.XXXXXX")
    say "installing Debian packages: $*"
    {
        apt-get update -q &&
            apt-get install -y -q --no-install-recommends "$@"
    } >"$log" 2>&1 || rc=$?
    if ((rc != 0)); then
        tail -n 40 "$log" >&2
        say "apt-get failed (exit $rc); full log: $log"
        exit 1
    fi
    rm -f -- "$log"
}

ensure_system_packages() {
    local -a missing=()
    local name i out
    load_packages
    if is_debian_family; then
        # (No process substitution: /dev/fd may be missing, e.g. in a chroot without /proc.)
        out=$(dpkg_missing)
        [[ -z $out ]] && return 0
        if ((EUID == 0)); then
            read -r -d '' -a missing <<<"$out" || true
            export DEBIAN_FRONTEND=noninteractive
            apt_install "${missing[@]}"
            did_something=1
            out=$(dpkg_missing)
            [[ -z $out ]] && return 0
        fi
        read -r -d '' -a missing <<<"$out" || true
    else
        for i in "${!PKG_NAMES[@]}"; do
            probe_ok "${PKG_PROBES[$i]}" || missing+=("${PKG_NAMES[$i]}")
        done
        ((${#missing[@]} == 0)) && return 0
    fi
    for name in "${missing[@]}"; do
        printf 'missing: %s (%s)\n' "$name" "$(why_of "$name")" >&2
    done
    if is_debian_family; then
        say "as root, run ./setup.sh deps (or apt-get install ${missing[*]})"
    else
        say "not a Debian system: install the equivalents of the packages above by hand"
    fi
    exit 1
}

# ---------------------------------------------------------------- Python environment

# Succeeds when $1 is a Python interpreter of version MIN_PY or newer.
python_ok() {
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

# Debian's own interpreter first: CI builds .venv from it (3.11.2 on Debian 12), and a newer
# python3 earlier on PATH would hide what 3.11.2 lacks (tarfile's extraction filter came in
# 3.11.4). mypy (python_version 3.11) and ruff (target py311) catch newer minor versions' APIs
# and syntax; only the tests under this interpreter catch patch-level ones.
pick_python() {
    local candidate
    for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
        if [[ -n $candidate && -x $candidate ]] && python_ok "$candidate"; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum -- "$1" | awk '{ print $1 }'
    else
        shasum -a 256 -- "$1" | awk '{ print $1 }'
    fi
}

ensure_venv() {
    local py want
    if [[ ! -x $VENV/bin/python ]] || ! python_ok "$VENV/bin/python"; then
        py=$(pick_python) || die "no Python >= $MIN_PY found (tried /usr/bin/python3, python3)"
        if [[ -e $VENV ]]; then
            say "recreating $VENV (its Python is missing or older than $MIN_PY)"
            rm -rf -- "$VENV"
        fi
        say "creating .venv with $py ($("$py" -c 'import platform; print(platform.python_version())'))"
        "$py" -m venv "$VENV"
        did_something=1
    fi
    want="$(sha256_of "$ROOT/pyproject.toml") [$EXTRAS]"
    if [[ -f $STAMP && $(<"$STAMP") == "$want" ]]; then
        return 0
    fi
    say "pip install -e .[$EXTRAS]"
    rm -f -- "$STAMP"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "${ROOT}[${EXTRAS}]" >&2
    printf '%s\n' "$want" >"$STAMP"
    did_something=1
}

setup_all() {
    ensure_system_packages
    ensure_venv
    if ((did_something == 0)); then
        say "all present"
    else
        say "done"
    fi
}

# ---------------------------------------------------------------- checks

run_tests() {
    local -a lint_paths=()
    local d rc=0
    cd -- "$ROOT"
    for d in src tests perf; do
        [[ -d $d ]] && lint_paths+=("$d")
    done
    say "ruff check ${lint_paths[*]}"
    "$VENV/bin/ruff" check -q "${lint_paths[@]}" || rc=1
    say "mypy"
    # pyproject's [tool.mypy] lists what is checked: the package and perf/.
    "$VENV/bin/mypy" || rc=1
    say "lint-imports"
    # pyproject's [tool.importlinter]: no import cycle, no import of a higher layer.
    "$VENV/bin/lint-imports" --no-cache || rc=1
    if ((rc != 0)); then
        die "ruff, mypy or lint-imports failed; pytest not run"
    fi
    say "pytest"
    "$VENV/bin/python" -m pytest -q "$@"
}

main() {
    local cmd=${1:-}
    case $cmd in
        deps)
            shift
            (($# == 0)) || { usage; exit 2; }
            setup_all
            ;;
        run)
            shift
            setup_all
            exec "$VENV/bin/hpceval" run "$@"
            ;;
        test)
            shift
            setup_all
            run_tests "$@"
            ;;
        -h | --help | help)
            usage
            ;;
        *)
            usage
            exit 2
            ;;
    esac
}

main "$@"
