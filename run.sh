#!/usr/bin/env bash
# netrepro's one entry point: `sudo ./run.sh <command> [options]`.
#
# On first use (and whenever this file, pyproject.toml or a native source
# changes) it installs what is missing: Debian/Ubuntu packages with apt, a
# virtual environment made from the system Python with --system-site-packages
# (so that the distribution's mininet imports), the project itself, and the
# native helpers.  After that it only checks a fingerprint: well under two
# seconds.  Then it hands the command to `python -m netrepro`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$here/.venv"
stamp="$venv/.netrepro-setup"

if [[ $EUID -ne 0 ]]; then
    echo "run.sh: netrepro needs root (network namespaces, qdiscs, sysctls, BPF): sudo ./run.sh ${*:-doctor}" >&2
    exit 1
fi

# Distribution packages the lab, the workloads and the native helpers need.
packages=(
    mininet bridge-utils iproute2 iptables ethtool iputils-ping util-linux kmod
    iperf3 apache2 nghttp2-client curl openssl tcpdump
    clang llvm bpftool libbpf-dev libnetfilter-queue-dev libmnl-dev gcc make pkg-config
    python3 python3-venv python3-matplotlib
)

# The stock-kernel lane (`run.sh --vm ...`): QEMU, Debian's own kernel and
# its exact headers, busybox for virtme-ng's initramfs.  Installed on first use.
vm_packages=(qemu-system-x86 linux-image-amd64 linux-headers-amd64 busybox-static)

fingerprint() {
    cat "$here/run.sh" "$here/pyproject.toml" \
        "$here/topologies/delayline/delayline.c" "$here/topologies/delayline/Makefile" \
        2>/dev/null | sha256sum | cut -d' ' -f1
}

install_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    # Kernel headers for the modules in kmod/: the running kernel's where the
    # distribution ships them, and Debian's stock ones (the modules' CI target).
    local h
    for h in "linux-headers-$(uname -r)" linux-headers-amd64; do
        if ! dpkg-query -W -f='${Status}' "$h" 2>/dev/null | grep -q "install ok installed" &&
            apt-cache show "$h" >/dev/null 2>&1; then
            missing+=("$h")
        fi
    done
    if ((${#missing[@]})); then
        echo "run.sh: installing ${missing[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    fi
}

setup() {
    install_packages "${packages[@]}"
    if [[ ! -x $venv/bin/python ]]; then
        /usr/bin/python3 -m venv --system-site-packages "$venv"
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here[dev]" >&2
    make -s -C "$here/topologies/delayline" >&2
    fingerprint >"$stamp"
}

if [[ ! -f $stamp || $(cat "$stamp") != "$(fingerprint)" ]]; then
    setup
fi
if [[ ${1:-} == --vm || (${1:-} == doctor && " $* " == *" --vm "*) ]]; then
    install_packages "${vm_packages[@]}"
    [[ -x $venv/bin/vng ]] || "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here[dev,vm]" >&2
fi
# Files a root run writes under results/ are handed back to the sudo caller.
cd "$here"
exec "$venv/bin/python" -m netrepro "$@"
