#!/bin/bash
# containerd.sh DRIVER runs inside the guest (hack/guest.sh): it writes containerd 2's config
# with runc's SystemdCgroup set for DRIVER (systemd or cgroupfs), the CNI bridge network, and
# (re)starts containerd as the systemd unit containerd.service, then waits for its socket.
# The in-guest tests call it to switch drivers: nodelet takes the driver from the runtime.
set -euo pipefail

driver=${1:?usage: containerd.sh systemd|cgroupfs}
case $driver in
systemd) systemd_cgroup=true ;;
cgroupfs) systemd_cgroup=false ;;
*)
	echo "containerd.sh: driver $driver: want systemd or cgroupfs" >&2
	exit 2
	;;
esac

mkdir -p /etc/containerd /etc/cni/net.d
cat >/etc/containerd/config.toml <<CONF
version = 4
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "registry.k8s.io/pause:3.10"

  [plugins.'io.containerd.cri.v1.runtime']
    disable_apparmor = true
    enable_selinux = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "/usr/local/bin/runc"
          SystemdCgroup = $systemd_cgroup
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["/opt/cni/bin"]
      conf_dir = "/etc/cni/net.d"
      max_conf_num = 1
CONF

cat >/etc/cni/net.d/10-nodelet.conflist <<'CONF'
{
  "cniVersion": "1.0.0",
  "name": "nodelet",
  "plugins": [
    {
      "type": "bridge", "bridge": "nodelet0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.85.0.0/16" }]], "routes": [{ "dst": "0.0.0.0/0" }] }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
CONF

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
