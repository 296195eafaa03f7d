#!/usr/bin/env bash
# install-deps.sh installs the Debian packages nodelet needs on the host; with --test, also
# those only the end-to-end tests need (chromium drives the node page; dbus-daemon is the
# private system bus of test/fakelogind).
# Idempotent: packages that are already installed are skipped.
set -euo pipefail

packages=(containerd runc containernetworking-plugins busybox-static iproute2 iptables)
if [[ ${1:-} == --test ]]; then
	packages+=(chromium dbus-daemon)
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "install-deps.sh: must run as root" >&2
	exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
	if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		echo "==> $pkg already installed"
	else
		missing+=("$pkg")
	fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
	echo "==> all dependencies present"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "==> apt-get update"
apt-get update -qq
for pkg in "${missing[@]}"; do
	echo "==> installing $pkg"
done
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "==> dependencies installed"
