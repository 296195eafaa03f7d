#!/usr/bin/env bash
# images.sh builds nodelet's test images from source and imports them into the
# project containerd's k8s.io namespace. No registry is involved.
#
#   registry.k8s.io/pause:3.10                       images/pause (sandbox image)
#   nodelet.local/busybox:1.36                       host busybox-static + applet links + nmeter (images/nmeter)
#   registry.k8s.io/e2e-test-images/busybox:1.36.1-1 the same root as a distinct image (config: workdir /)
#   nodelet.local/testhelper:v1                      images/testhelper on the busybox root
#   nodelet.local/groups:v1                          the busybox root with user 1000 in an extra group 50000
#                                                    of its /etc/group (supplementalGroupsPolicy Merge vs Strict)
#
# `hack/images.sh conformance` also builds what the node conformance suite runs, under the
# upstream names (after `hack/control-plane.sh build-conformance`):
#   registry.k8s.io/e2e-test-images/agnhost:2.53     agnhost built from k8s.io/kubernetes v1.33.4, its localhost
#                                                    TLS pair, curl and nc stand-ins (images/nettools), nmeter
#                                                    on the busybox root
#   registry.k8s.io/e2e-test-images/nonewprivs:1.3   setuid-root nnp (test/images/nonewprivs) on the busybox root
#   registry.k8s.io/e2e-test-images/nginx:1.14-4     stand-ins: busybox httpd serving a page on :80
#     (and nginx:1.15-4, httpd:2.4.38-4, httpd:2.4.39-4)
#   registry.k8s.io/e2e-test-images/sample-device-plugin:1.7  test/images/sample-device-plugin
#                                                    (static) on the busybox root, as upstream's entrypoint
#
# An image is skipped when all its names are present in containerd and the
# hash of its inputs matches the stamp left by the last import. FORCE=1 rebuilds.
#
# `hack/images.sh push [conformance]` also pushes every image, as the runtime holds it (same
# manifests and digests), under each of its names to the project registry, so a pull crosses a
# real registry instead of finding an import: the CNCF
# distribution registry (`make registries`) on 127.0.0.1:5000, plain http and anonymous, storing
# under /var/lib/nodelet/registry-store. It is started when nothing answers there and left
# running, like containerd; hack/containerd.sh makes it the runtime's mirror of registry.k8s.io
# and nodelet.local (registry.k8s.io/e2e-test-images/agnhost:2.53 is served as
# 127.0.0.1:5000/e2e-test-images/agnhost:2.53). `hack/images.sh registry-stop` stops it.
# Without a registry (`make demo`) nothing changes: the images are imported as before.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO_ROOT/_output/images
MKIMAGE=$REPO_ROOT/_output/bin/mkimage
SOCKET=${CONTAINERD_SOCKET:-/run/nodelet/containerd/containerd.sock}
BUSYBOX=${BUSYBOX:-/bin/busybox}
FORCE=${FORCE:-0}

cd "$REPO_ROOT"

REGISTRY_ADDR=127.0.0.1:5000
REGISTRY_DIR=/var/lib/nodelet/registry-store
REGISTRY_BIN=$REPO_ROOT/_output/bin/distribution-registry
PUSH=0
# Every image built this run and its names: what push sends.
declare -A IMAGE_NAMES=()

ctr_k8s() {
	ctr --address "$SOCKET" --namespace k8s.io "$@"
}

# input_hash fingerprints the toolchain, this script, mkimage and the given files.
input_hash() {
	{
		go version
		sha256sum hack/images.sh hack/mkimage/main.go "$@"
	} | sha256sum | cut -d' ' -f1
}

images_present() {
	local have name
	# Only complete images count: a kubelet that removes the sandbox image lets the runtime pull it
	# again over the snapshots it still has, without the layer blobs a push needs.
	have=$(ctr_k8s images check | awk 'NR > 1 && $4 == "complete" { print $1 }')
	for name in "$@"; do
		grep -qxF "$name" <<<"$have" || return 1
	done
}

go_build_static() { # output package
	CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags '-s -w' -o "$1" "$2"
}

# Each build_* function fills $OUT/<key>/rootfs and writes $OUT/<key>.tar.

build_pause() {
	local rootfs=$OUT/pause/rootfs
	go_build_static "$rootfs/pause" ./images/pause
	"$MKIMAGE" -name registry.k8s.io/pause:3.10 -entrypoint /pause -out "$OUT/pause.tar" "$rootfs"
}

# make_busybox_root writes a minimal busybox userland into $1.
make_busybox_root() {
	local rootfs=$1 applet
	mkdir -p "$rootfs"/{bin,etc,root,home,tmp,var,proc,sys,dev}
	chmod 1777 "$rootfs/tmp"
	chmod 0700 "$rootfs/root"
	install -m 0755 "$BUSYBOX" "$rootfs/bin/busybox"
	for applet in $("$BUSYBOX" --list); do
		[[ $applet == busybox ]] || ln -sf busybox "$rootfs/bin/$applet"
	done
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/home:/bin/false' >"$rootfs/etc/passwd"
	printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$rootfs/etc/group"
}

build_busybox() {
	local rootfs=$OUT/busybox/rootfs
	make_busybox_root "$rootfs"
	# Debian's busybox has no nmeter applet; the node e2e suite times events with it.
	go_build_static "$rootfs/bin/nmeter" ./images/nmeter
	"$MKIMAGE" -name nodelet.local/busybox:1.36 -cmd sh -out "$OUT/busybox.tar" "$rootfs"
}

# build_e2ebusybox: the suite's busybox, the busybox root again as an image of its own (its
# config differs by workdir /, which changes nothing in a container). One image with both names
# would not do: containerd reports a container's image as its image's first name,
# nodelet.local/busybox:1.36, and the specs that compare a container's status image with its
# pod's (image updates of sidecars) fail on either kubelet.
build_e2ebusybox() {
	local rootfs=$OUT/e2ebusybox/rootfs
	make_busybox_root "$rootfs"
	go_build_static "$rootfs/bin/nmeter" ./images/nmeter
	"$MKIMAGE" -name registry.k8s.io/e2e-test-images/busybox:1.36.1-1 -cmd sh -workdir / -out "$OUT/e2ebusybox.tar" "$rootfs"
}

build_testhelper() {
	local rootfs=$OUT/testhelper/rootfs
	make_busybox_root "$rootfs"
	go_build_static "$rootfs/testhelper" ./images/testhelper
	"$MKIMAGE" -name nodelet.local/testhelper:v1 -entrypoint /testhelper -out "$OUT/testhelper.tar" "$rootfs"
}

# build_groups: the busybox root with a user (uid 1000) whose /etc/group entry puts it in an
# extra group 50000: supplementalGroupsPolicy Merge gives a container run as 1000 that group,
# Strict does not.
build_groups() {
	local rootfs=$OUT/groups/rootfs
	make_busybox_root "$rootfs"
	echo 'nodelet-user:x:1000:1000::/home:/bin/sh' >>"$rootfs/etc/passwd"
	printf '%s\n' 'nodelet-user:x:1000:' 'nodelet-extra:x:50000:nodelet-user' >>"$rootfs/etc/group"
	"$MKIMAGE" -name nodelet.local/groups:v1 -cmd sh -out "$OUT/groups.tar" "$rootfs"
}

AGNHOST=$REPO_ROOT/_output/cp/bin/agnhost

# agnhost_tls_dir holds the localhost certificate and key the upstream agnhost image carries at
# /localhost.crt and /localhost.key (netexec --tls-cert-file in the lifecycle hook specs).
agnhost_tls_dir() {
	echo "$(cd test/harness && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/images/agnhost/porter"
}

build_agnhost() {
	local rootfs=$OUT/agnhost/rootfs tls
	tls=$(agnhost_tls_dir)
	make_busybox_root "$rootfs"
	install -m 0755 "$AGNHOST" "$rootfs/agnhost"
	install -m 0644 "$tls/localhost.crt" "$tls/localhost.key" "$rootfs/"
	# The upstream image has curl and a UDP-capable nc; busybox's nc has no -u.
	mkdir -p "$rootfs/usr/bin" "$rootfs/uploads"
	go_build_static "$rootfs/usr/bin/curl" ./images/nettools
	ln -f "$rootfs/usr/bin/curl" "$rootfs/usr/bin/nc"
	go_build_static "$rootfs/usr/bin/nmeter" ./images/nmeter # the lifecycle specs time events with it
	# Like upstream: a second name for the entrypoint-override specs, and a user and group
	# defined in the image.
	ln -sf agnhost "$rootfs/agnhost-2"
	echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$rootfs/etc/passwd"
	printf '%s\n' 'user-defined-in-image:x:1000:' 'group-defined-in-image:x:50000:user-defined-in-image' >>"$rootfs/etc/group"
	"$MKIMAGE" -name registry.k8s.io/e2e-test-images/agnhost:2.53 -entrypoint /agnhost -cmd pause \
		-out "$OUT/agnhost.tar" "$rootfs"
}

NNP=$REPO_ROOT/_output/cp/bin/nnp

build_nonewprivs() {
	local rootfs=$OUT/nonewprivs/rootfs
	make_busybox_root "$rootfs"
	mkdir -p "$rootfs/usr/local/bin"
	install -m 4755 "$NNP" "$rootfs/usr/local/bin/nnp"
	"$MKIMAGE" -name registry.k8s.io/e2e-test-images/nonewprivs:1.3 -cmd nnp -out "$OUT/nonewprivs.tar" "$rootfs"
}

SAMPLE_DEVICE_PLUGIN=$REPO_ROOT/_output/cp/bin/sample-device-plugin

# build_sampledeviceplugin: upstream's image is the binary on alpine, run as
# `/sampledeviceplugin -alsologtostderr`; the device plugin specs need nothing else from it.
build_sampledeviceplugin() {
	local rootfs=$OUT/sampledeviceplugin/rootfs
	make_busybox_root "$rootfs"
	install -m 0755 "$SAMPLE_DEVICE_PLUGIN" "$rootfs/sampledeviceplugin"
	"$MKIMAGE" -name registry.k8s.io/e2e-test-images/sample-device-plugin:1.7 \
		-entrypoint /sampledeviceplugin -entrypoint -alsologtostderr -out "$OUT/sampledeviceplugin.tar" "$rootfs"
}

# build_webserver: the nginx and httpd images only need to serve HTTP on :80 from their usual
# document roots; busybox httpd does that.
build_webserver() {
	local rootfs=$OUT/webserver/rootfs dir
	make_busybox_root "$rootfs"
	for dir in usr/share/nginx/html usr/local/apache2/htdocs; do
		mkdir -p "$rootfs/$dir"
		echo '<html><body>It works!</body></html>' >"$rootfs/$dir/index.html"
	done
	"$MKIMAGE" -name registry.k8s.io/e2e-test-images/nginx:1.14-4 -name registry.k8s.io/e2e-test-images/nginx:1.15-4 \
		-name registry.k8s.io/e2e-test-images/httpd:2.4.38-4 -name registry.k8s.io/e2e-test-images/httpd:2.4.39-4 \
		-entrypoint httpd -entrypoint -f -entrypoint -p -entrypoint 80 -entrypoint -h -entrypoint /usr/share/nginx/html \
		-out "$OUT/webserver.tar" "$rootfs"
}

conformance_images() {
	[[ -x $AGNHOST ]] || {
		echo "images.sh: $AGNHOST missing; run hack/control-plane.sh build-conformance" >&2
		exit 1
	}
	ensure_image agnhost "$(input_hash "$BUSYBOX" "$AGNHOST" "$(agnhost_tls_dir)/localhost.crt" images/nettools/*.go images/nmeter/main.go)" registry.k8s.io/e2e-test-images/agnhost:2.53
	ensure_image nonewprivs "$(input_hash "$BUSYBOX" "$NNP")" registry.k8s.io/e2e-test-images/nonewprivs:1.3
	ensure_image webserver "$(input_hash "$BUSYBOX")" \
		registry.k8s.io/e2e-test-images/nginx:1.14-4 registry.k8s.io/e2e-test-images/nginx:1.15-4 \
		registry.k8s.io/e2e-test-images/httpd:2.4.38-4 registry.k8s.io/e2e-test-images/httpd:2.4.39-4
	ensure_image sampledeviceplugin "$(input_hash "$BUSYBOX" "$SAMPLE_DEVICE_PLUGIN")" \
		registry.k8s.io/e2e-test-images/sample-device-plugin:1.7
}

# ensure_image KEY HASH NAME... builds and imports image KEY unless it is current.
ensure_image() {
	local key=$1 hash=$2
	shift 2
	local stamp=$OUT/$key.stamp
	IMAGE_NAMES[$key]="$*"
	if [[ $FORCE != 1 && -f $stamp && $(<"$stamp") == "$hash" ]] && images_present "$@"; then
		echo "==> image $key up to date ($*)"
		return 0
	fi
	echo "==> building image $key"
	rm -rf "${OUT:?}/$key" "$stamp"
	mkdir -p "$OUT/$key/rootfs"
	"build_$key"
	echo "==> importing $key into containerd (k8s.io namespace)"
	ctr_k8s images import "$OUT/$key.tar" | sed 's/^/    /'
	images_present "$@" || {
		echo "images.sh: import of $key did not produce $*" >&2
		return 1
	}
	echo "$hash" >"$stamp"
}

# registry_pid is the running project registry's pid, found by its command line (a pid file
# would not outlive hack/containerd.sh clean, which empties /run/nodelet), whichever checkout's
# binary runs it.
registry_pid() {
	pgrep -f "/distribution-registry serve $REGISTRY_DIR/config.yml\$" | head -n1 | grep .
}

# registry_up starts the project registry unless it runs already. Another server on its
# address (a conformance run's old hack/registry) is refused: pushes would go to it.
registry_up() {
	local i started
	if registry_pid >/dev/null; then
		return 0
	fi
	if curl -fsS -o /dev/null "http://$REGISTRY_ADDR/v2/" 2>/dev/null; then
		echo "images.sh: something else answers on $REGISTRY_ADDR; stop it (ss -ltnp 'sport = :5000' names it) and run again" >&2
		return 1
	fi
	[[ -x $REGISTRY_BIN ]] || {
		echo "images.sh: $REGISTRY_BIN missing; run make registries" >&2
		return 1
	}
	mkdir -p "$REGISTRY_DIR"
	cat >"$REGISTRY_DIR/config.yml" <<-EOF
		version: 0.1
		log:
		  level: warn
		storage:
		  filesystem:
		    rootdirectory: $REGISTRY_DIR/store
		http:
		  addr: $REGISTRY_ADDR
	EOF
	echo "==> starting the project registry on $REGISTRY_ADDR (log $REGISTRY_DIR/registry.log)"
	setsid "$REGISTRY_BIN" serve "$REGISTRY_DIR/config.yml" >>"$REGISTRY_DIR/registry.log" 2>&1 </dev/null &
	started=$!
	for ((i = 0; i < 50; i++)); do
		curl -fsS -o /dev/null "http://$REGISTRY_ADDR/v2/" 2>/dev/null && return 0
		# $! until it has exec'd the registry: pgrep alone missed it that early and gave up.
		kill -0 "$started" 2>/dev/null || registry_pid >/dev/null || break
		sleep 0.2
	done
	echo "images.sh: the project registry did not start; see $REGISTRY_DIR/registry.log" >&2
	return 1
}

registry_stop() {
	local pid
	if pid=$(registry_pid); then
		kill "$pid"
		echo "==> stopped the project registry (pid $pid)"
	fi
}

# registry_ref is where NAME lives in the project registry: its path without the registry host.
registry_ref() {
	echo "$REGISTRY_ADDR/${1#*/}"
}

# push_images pushes every image of this run, as the runtime holds it, under each of its names:
# the registry then serves the very manifests the runtime has (same digests), so a pull leaves
# the runtime's images as they were. Blobs the registry holds already are not sent again.
push_images() {
	local key name out
	registry_up
	for key in "${!IMAGE_NAMES[@]}"; do
		for name in ${IMAGE_NAMES[$key]}; do
			out=$(ctr_k8s images push --plain-http "$(registry_ref "$name")" "$name" 2>&1) || {
				echo "images.sh: pushing $name to $REGISTRY_ADDR failed:" >&2
				echo "$out" >&2
				return 1
			}
		done
		echo "==> pushed $key to $REGISTRY_ADDR (${IMAGE_NAMES[$key]})"
	done
}

main() {
	local arg conformance=0
	for arg in "$@"; do
		case $arg in
		conformance) conformance=1 ;;
		push) PUSH=1 ;;
		registry-stop)
			registry_stop
			return
			;;
		*)
			echo "usage: $0 [conformance] [push] | registry-stop" >&2
			exit 2
			;;
		esac
	done
	if ! ctr --address "$SOCKET" version >/dev/null 2>&1; then
		echo "images.sh: containerd does not answer on $SOCKET; run hack/containerd.sh start" >&2
		exit 1
	fi
	[[ -x $BUSYBOX ]] || {
		echo "images.sh: $BUSYBOX missing; run hack/install-deps.sh" >&2
		exit 1
	}
	mkdir -p "$OUT" "$(dirname "$MKIMAGE")"
	echo "==> building mkimage"
	go build -trimpath -buildvcs=false -o "$MKIMAGE" ./hack/mkimage

	ensure_image pause "$(input_hash images/pause/*.go)" registry.k8s.io/pause:3.10
	ensure_image busybox "$(input_hash "$BUSYBOX" images/nmeter/main.go)" nodelet.local/busybox:1.36
	ensure_image e2ebusybox "$(input_hash "$BUSYBOX" images/nmeter/main.go)" registry.k8s.io/e2e-test-images/busybox:1.36.1-1
	ensure_image testhelper "$(input_hash "$BUSYBOX" images/testhelper/*.go)" nodelet.local/testhelper:v1
	ensure_image groups "$(input_hash "$BUSYBOX")" nodelet.local/groups:v1
	[[ $conformance != 1 ]] || conformance_images
	[[ $PUSH != 1 ]] || push_images
	echo "==> images ready"
}

main "$@"
