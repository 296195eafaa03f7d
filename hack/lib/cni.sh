# shellcheck shell=bash
# cni.sh: the project's CNI network "nodelet" (a bridge nodelet0 on 10.85.0.0/16, with portmap
# for hostPort), sourced by hack/containerd.sh for the host's runtime and by hack/guest.sh for
# the guest's.

render_cni() {
	cat <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "nodelet",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "nodelet0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/nodelet/cni/networks",
        "ranges": [[{ "subnet": "10.85.0.0/16" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    {
      "type": "portmap",
      "capabilities": { "portMappings": true }
    }
  ]
}
EOF
}
