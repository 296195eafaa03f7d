# shellcheck shell=bash
# cp-build.sh: builds the reference Kubernetes binaries from the test/harness module into
# $CP_BIN, skipping any binary whose stamp (hash of its inputs) still matches.
# Sourced by hack/control-plane.sh, which sets REPO_ROOT and CP_BIN.

HARNESS_DIR=$REPO_ROOT/test/harness
KUBE_VERSION=v1.33.4
# kubectl parses the server's version, so the binaries must carry a real one.
KUBE_LDFLAGS="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=33"
KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

# stamp_of FILE... prints a hash of the module files, the build flags and the given files.
stamp_of() {
	{
		echo "$KUBE_LDFLAGS"
		cat "$HARNESS_DIR/go.mod" "$HARNESS_DIR/go.sum" "$@"
	} | sha256sum | cut -d' ' -f1
}

# build_one NAME PACKAGE STAMP [NOTE] [GO-SUBCOMMAND...]: go build PACKAGE to $CP_BIN/NAME
# unless its stamp matches (`go test -c` instead when given as the subcommand).
build_one() {
	local name=$1 pkg=$2 stamp=$3 note=${4:-}
	local -a gocmd=("${@:5}")
	((${#gocmd[@]})) || gocmd=(build)
	local out=$CP_BIN/$name stamp_file=$CP_BIN/.$name.stamp
	if [[ -x $out && -f $stamp_file && $(<"$stamp_file") == "$stamp" ]]; then
		return 0
	fi
	echo "==> building $name$note"
	local start=$SECONDS
	(cd "$HARNESS_DIR" && go "${gocmd[@]}" -ldflags "$KUBE_LDFLAGS" -o "$out.tmp" "$pkg")
	mv -f "$out.tmp" "$out"
	echo "$stamp" >"$stamp_file"
	echo "    $name built in $((SECONDS - start))s"
}

build_all() {
	mkdir -p "$CP_BIN"
	local cmd
	for cmd in "${KUBE_COMMANDS[@]}"; do
		build_one "$cmd" "k8s.io/kubernetes/cmd/$cmd" "$(stamp_of)" \
			" (a cold build of all four takes ~12 min on 2 cores)"
	done
	build_certs
}

# build_certs builds only the small PKI tool (test/harness/cmd/certs).
build_certs() {
	mkdir -p "$CP_BIN"
	build_one certs ./cmd/certs "$(stamp_of "$HARNESS_DIR"/cmd/certs/*.go)"
}

# build_conformance builds the node conformance suite (test/e2e_node as e2e_node.test), the
# ginkgo CLI that runs it in parallel, agnhost, the test image most of its specs run, nnp
# (the nonewprivs image's setuid program) and sample-device-plugin (the device plugin the
# resources selection's device plugin specs run as a pod)
# (~4 min cold on 2 cores).
build_conformance() {
	mkdir -p "$CP_BIN"
	build_one e2e_node.test k8s.io/kubernetes/test/e2e_node "$(stamp_of)" " (~3 min cold)" test -c
	build_one ginkgo github.com/onsi/ginkgo/v2/ginkgo "$(stamp_of)"
	# Static: it runs alone in a scratch image.
	CGO_ENABLED=0 build_one agnhost k8s.io/kubernetes/test/images/agnhost "$(stamp_of)"
	CGO_ENABLED=0 build_one nnp k8s.io/kubernetes/test/images/nonewprivs "$(stamp_of)"
	CGO_ENABLED=0 build_one sample-device-plugin k8s.io/kubernetes/test/images/sample-device-plugin "$(stamp_of)"
}

# build_dra_driver builds upstream's DRA test driver (test/e2e/dra/test-driver) as
# dra-test-driver: the DRA e2e tests run it as the node's DRA plugin (kubelet-plugin mode),
# publishing ResourceSlices and writing CDI specs that set env vars (~1 min cold; seconds
# once the conformance suite, which links it, is built).
build_dra_driver() {
	mkdir -p "$CP_BIN"
	build_one dra-test-driver k8s.io/kubernetes/test/e2e/dra/test-driver "$(stamp_of)"
}
