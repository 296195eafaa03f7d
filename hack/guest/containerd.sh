#!/bin/bash
# containerd.sh DRIVER runs inside the guest (hack/guest.sh): it installs the containerd 2
# config for DRIVER (systemd or cgroupfs: runc's SystemdCgroup on or off) and the CNI network,
# both rendered on the host from the host's own (hack/lib/runtime2.sh, hack/lib/cni.sh) into
# the payload beside this script, and (re)starts containerd as the systemd unit
# containerd.service, then waits for its socket. The in-guest tests call it to switch drivers:
# nodelet takes the driver from the runtime.
set -euo pipefail

driver=${1:?usage: containerd.sh systemd|cgroupfs}
here=$(dirname "$0")
if [[ ! -f $here/containerd-$driver.toml ]]; then
	echo "containerd.sh: driver $driver: want systemd or cgroupfs" >&2
	exit 2
fi
mkdir -p /etc/containerd /etc/cni/net.d
cp "$here/containerd-$driver.toml" /etc/containerd/config.toml
cp "$here/10-nodelet.conflist" /etc/cni/net.d/10-nodelet.conflist

# Delegate=yes and KillMode=process as containerd's own unit: the shims' cgroups stay theirs
# and survive a restart.
cat >/etc/systemd/system/containerd.service <<'UNIT'
[Unit]
Description=containerd (guest lane)
After=network.target local-fs.target

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd
Type=notify
Delegate=yes
KillMode=process
Restart=always
LimitNOFILE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl restart containerd.service
for _ in $(seq 120); do
	if ctr version >/dev/null 2>&1; then
		exit 0
	fi
	sleep 1
done
echo "containerd.sh: containerd did not answer within 120s" >&2
systemctl status containerd.service --no-pager >&2 || true
exit 1
