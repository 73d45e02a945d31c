#!/usr/bin/env bash
# Install what rxpath needs to build, test and benchmark, and only what is
# missing. Idempotent: returns at once when everything is present.
set -euo pipefail

PKGS=(
	build-essential cmake ninja-build pkg-config clang llvm
	libpcap-dev libxdp-dev libbpf-dev libsodium-dev libbsd-dev libcmocka-dev
	libwiretap-dev libwsutil-dev libglib2.0-dev
	libdpdk-dev libmimalloc-dev libjemalloc-dev
	python3 python3-scapy python3-jsonschema tshark tcpdump zstd gzip tcpreplay iperf3 iproute2 ethtool nftables gnuplot-nox
	valgrind
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
