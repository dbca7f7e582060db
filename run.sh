#!/usr/bin/env bash
# netrepro's one entry point: `sudo ./run.sh <command> [options]`.
#
# On first use (and whenever this file, pyproject.toml or a native source
# changes) it installs what is missing: Debian/Ubuntu packages with apt, a
# virtual environment made from the system Python with --system-site-packages
# (so that the distribution's mininet imports), the project itself, and the
# native helpers.  After that it only checks a fingerprint: well under two
# seconds.  Then it hands the command to `python -m netrepro`.
#
# Debian's apache2 package enables Debian's own apache2 service (port 80 in
# the root namespace), and openvswitch-switch its own system-wide ovsdb-server
# and ovs-vswitchd; netrepro starts its own Apache, and its own Open vSwitch
# daemons, in namespaces.  When run.sh installs either package it disables
# that service (one installed before run.sh is left alone), and it lists what
# it installed, one package a line, in .venv/.netrepro-installed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$here/.venv"
stamp="$venv/.netrepro-setup"
installed="$venv/.netrepro-installed"

# Distribution packages the lab, the workloads and the native helpers need,
# named alike in Debian and Ubuntu (bpftool is not: distro_packages);
# openssh-server for the test of the cluster's SSH launcher (its own sshd, on loopback).
packages=(
    mininet bridge-utils iproute2 iptables ethtool iputils-ping util-linux kmod
    openvswitch-switch iperf3 apache2 nghttp2-client curl openssl tcpdump
    clang llvm libbpf-dev libnetfilter-queue-dev libmnl-dev gcc make pkg-config
    python3 python3-venv python3-matplotlib python3-scipy openssh-server
)

# The stock-kernel lane (`run.sh --vm ...`): QEMU, busybox for virtme-ng's
# initramfs, and the distribution's own kernel with its exact headers
# (distro_packages).  Installed on first use.
vm_packages=(qemu-system-x86 busybox-static)

# The distribution, from an os-release file: its ID and VERSION_ID, e.g. "debian 12".
distribution() {
    local file=${1:-/etc/os-release} id version
    id=$(sed -n 's/^ID=//p' "$file" | tr -d "\"'")
    version=$(sed -n 's/^VERSION_ID=//p' "$file" | tr -d "\"'")
    echo "$id $version"
}

# The packages whose names differ by distribution, one a line, for the
# distribution "$1" (as `distribution` says it), the running kernel's
# release "$2", and "$3": `main` (bpftool; on Debian, Chromium and Firefox
# ESR for page loads in a browser (page_load client=chromium or firefox;
# Chromium also for the test of `run.sh report`); Ubuntu ships both as
# snaps only, which cannot run in a lab's namespace with a profile of the
# run's: preflight says so) or `vm` (the stock kernel and its headers).  Debian 12 has a bpftool package; Ubuntu
# 22.04 and 24.04 ship bpftool in linux-tools-<release> (with
# linux-tools-common's wrapper, which runs the one of the running kernel).  Other versions of either are
# given the same names, with a warning; other distributions are refused.
TESTED_DISTRIBUTIONS=("debian 12" "ubuntu 22.04" "ubuntu 24.04")
distro_packages() {
    local distro=$1 release=$2 which=$3 tested
    for tested in "${TESTED_DISTRIBUTIONS[@]}" ""; do
        [[ $tested == "$distro" ]] && break
    done
    if [[ -z $tested ]]; then
        echo "run.sh: netrepro is tested on Debian 12 and Ubuntu 22.04 and 24.04; this is '$distro'" >&2
    fi
    case "${distro%% *}/$which" in
        debian/main) printf '%s\n' bpftool chromium firefox-esr ;;
        debian/vm) printf '%s\n' linux-image-amd64 linux-headers-amd64 ;;
        ubuntu/main) printf '%s\n' linux-tools-common "linux-tools-$release" ;;
        ubuntu/vm) printf '%s\n' linux-image-generic linux-headers-generic ;;
        *)
            echo "run.sh: '$distro' is neither Debian nor Ubuntu: install by hand what run.sh lists" \
                "(packages=, vm_packages=, and bpftool) and create .venv as setup() does" >&2
            return 1
            ;;
    esac
}

fingerprint() {
    cat "$here/run.sh" "$here/pyproject.toml" \
        "$here/topologies/delayline/delayline.c" "$here/topologies/delayline/Makefile" \
        2>/dev/null | sha256sum | cut -d' ' -f1
}

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# The packages of "$@" not installed yet, one a line, and the kernel headers
# for the modules in kmod/: the running kernel's where the distribution ships
# them, and Debian's stock ones (the modules' CI target).
missing_packages() {
    local p
    for p in "$@"; do
        is_installed "$p" || echo "$p"
    done
    for p in "linux-headers-$(uname -r)" linux-headers-amd64; do
        if ! is_installed "$p" && apt-cache show "$p" >/dev/null 2>&1; then
            echo "$p"
        fi
    done
}

# A package's own service (named as the package), off: stopped and disabled
# where systemd runs, else disabled offline (systemd's links and SysV's rc?.d
# links).  deb-systemd-helper acts only for a package's maintainer script: it
# is told which package; its state then keeps the service off across upgrades.
# openvswitch-switch.service pulls in ovsdb-server and ovs-vswitchd, which
# are PartOf it: stopping it stops them.  Each entry is package:service.
SYSTEM_SERVICES=(apache2:apache2 openvswitch-switch:openvswitch-switch openssh-server:ssh)
disable_system_service() {
    local package=$1 service=$2
    if [[ -d /run/systemd/system ]]; then
        systemctl disable --now "$service" >&2
        return
    fi
    if command -v deb-systemd-helper >/dev/null; then
        DPKG_MAINTSCRIPT_PACKAGE=$package deb-systemd-helper disable "$service.service" >&2
    fi
    if command -v update-rc.d >/dev/null; then
        update-rc.d "$service" disable >&2
    fi
}

install_packages() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    if ((${#missing[@]})); then
        echo "run.sh: installing ${missing[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
        mkdir -p "$venv"
        printf '%s\n' "${missing[@]}" >>"$installed"
        local entry
        for entry in "${SYSTEM_SERVICES[@]}"; do
            if [[ " ${missing[*]} " == *" ${entry%%:*} "* ]]; then
                echo "run.sh: disabling Debian's ${entry#*:} service (netrepro runs its own where it needs one)" >&2
                disable_system_service "${entry%%:*}" "${entry#*:}"
            fi
        done
    fi
}

setup() {
    local named
    named=$(distro_packages "$(distribution)" "$(uname -r)" main)
    # shellcheck disable=SC2086  # one package name a word
    install_packages "${packages[@]}" $named
    # (again over one whose making was cut short: it has a python but no pip)
    if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import pip' 2>/dev/null; then
        /usr/bin/python3 -m venv --system-site-packages "$venv"
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here[dev]" >&2
    make -s -C "$here/topologies/delayline" >&2
    fingerprint >"$stamp"
}

main() {
    if [[ $EUID -ne 0 ]]; then
        # Without root: what needs no root (--help, --version, list, --dry-run, --plot-only; netrepro
        # refuses the rest), once `sudo ./run.sh doctor` has installed what netrepro needs.
        if [[ -f $stamp && $(cat "$stamp") == "$(fingerprint)" ]]; then
            cd "$here"
            exec "$venv/bin/python" -m netrepro "$@"
        fi
        echo "run.sh: first install what netrepro needs (apt packages, .venv): sudo ./run.sh doctor" >&2
        exit 1
    fi
    if [[ ! -f $stamp || $(cat "$stamp") != "$(fingerprint)" ]]; then
        setup
    fi
    if [[ ${1:-} == --vm || (${1:-} == doctor && " $* " == *" --vm "*) ]]; then
        local named
        named=$(distro_packages "$(distribution)" "$(uname -r)" vm)
        # shellcheck disable=SC2086  # one package name a word
        install_packages "${vm_packages[@]}" $named
        [[ -x $venv/bin/vng ]] || "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here[dev,vm]" >&2
    fi
    # Files a root run writes under results/ are handed back to the sudo caller.
    cd "$here"
    exec "$venv/bin/python" -m netrepro "$@"
}

# Sourced (by the tests), run.sh only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
