# nodelet developer targets. Everything that touches the host runs as root.
GO ?= go
OUTPUT := _output

.PHONY: deps test-deps containerd images push-images build csidriver registries tools demo demo-stop cluster cluster-stop control-plane control-plane-down control-plane-status dra-driver bench-standalone bench-noisyprobe bench bench-smoke conformance conformance-serial conformance-podapi conformance-resources conformance-dra conformance-smoke test unit fuzz real e2e e2e-containerd16 containerd16 conformance-smoke-containerd16 clean-containerd guest guest-conformance package

# Install Debian's containerd 1.6 and runc (the compatibility lane), CNI plugins, busybox-static,
# iproute2, iptables.
deps:
	hack/install-deps.sh

# The packages only the end-to-end tests need: chromium, which drives the node page.
test-deps:
	hack/install-deps.sh --test

# Start the project's containerd: containerd 2.4.2 and runc 1.3.7 built from their pinned
# modules in test/runtime2 (cached by a stamp under _output/runtime2/bin; ~2.5 min cold on 2
# cores), socket /run/nodelet/containerd/containerd.sock; or restart a running one whose
# configuration changed (its containers keep running).
containerd: deps
	hack/containerd.sh restart-if-stale

# The compatibility lane's runtime: Debian's containerd 1.6 and runc as a separate instance
# (socket /run/nodelet-containerd16/containerd/containerd.sock) beside containerd 2, with the
# test images imported. `hack/containerd16.sh stop|status|clean` manage it.
containerd16: images
	hack/containerd16.sh up

# Build the test images from source and import them into containerd.
images: containerd
	hack/images.sh

# The same, then push every test image to the project registry (the distribution registry on
# 127.0.0.1:5000, started if needed and left running), containerd's mirror of registry.k8s.io and
# nodelet.local, so the tests can pull them.
push-images: images registries
	hack/images.sh push

# -buildvcs=true: the binary names its commit (and whether the tree was modified) even where
# GOFLAGS turns stamping off; `make bench` refuses a binary without it.
build:
	$(GO) build -buildvcs=true -o $(OUTPUT)/bin/nodelet ./cmd/nodelet

# The hostpath-style CSI driver the tests and the bench use (test/csidriver).
csidriver:
	$(GO) build -o $(OUTPUT)/bin/csidriver ./test/csidriver

# nodelet's Debian package, built by hack/package with dpkg-deb from the binary `make build`
# makes: _output/package/nodelet_VERSION_ARCH.deb with the unit, nodelet-switch and a default
# config (docs/install.md). PKG_VERSION=... names another version (a Debian one).
package: build
	$(GO) run ./hack/package -binary $(OUTPUT)/bin/nodelet -out $(OUTPUT)/package $(if $(PKG_VERSION),-version $(PKG_VERSION))

# The e2e tests' registries: the CNCF distribution registry and regtool (TLS pair, htpasswd,
# pushes), from the test-only module test/registry.
registries:
	cd test/registry && $(GO) build -o $(CURDIR)/$(OUTPUT)/bin/distribution-registry github.com/distribution/distribution/v3/cmd/registry
	cd test/registry && $(GO) build -o $(CURDIR)/$(OUTPUT)/bin/regtool ./cmd/regtool

# Developer tools used by the demo and benchmarks.
tools:
	$(GO) build -o $(OUTPUT)/bin/podps ./hack/podps
	$(GO) build -o $(OUTPUT)/bin/registry ./hack/registry

# Start containerd, nodelet standalone on examples/static-pods, and show the pods.
demo: images build tools
	hack/demo.sh

demo-stop: tools
	hack/demo.sh stop

# Start the local control plane (etcd + kube-apiserver/controller-manager/scheduler v1.33.4,
# built from k8s.io/kubernetes in test/harness: ~12 min cold, cached after) and nodelet as its node.
cluster: images build tools
	hack/cluster.sh

cluster-stop:
	hack/cluster.sh stop

control-plane:
	hack/control-plane.sh up

# Upstream's DRA test driver (k8s.io/kubernetes v1.33.4 test/e2e/dra/test-driver), the node
# plugin of the DRA e2e tests, built into _output/cp/bin (cached).
dra-driver:
	hack/control-plane.sh build-dra-driver

control-plane-down:
	hack/control-plane.sh down

control-plane-status:
	hack/control-plane.sh status

# Standalone figures: manifest → running latency (median of 20) and RSS with 20 pods.
bench-standalone: images build
	$(GO) run ./hack/bench-standalone

# nodelet's and the upstream kubelet's RSS and CPU under a pod whose two exec probes print
# megabytes a second (one minute each, one after the other, on a containerd instance of its own);
# writes BENCHMARKS-noisyprobe.md. The upstream kubelet is built with the control plane.
bench-noisyprobe: images build control-plane
	$(GO) run ./hack/bench-noisyprobe -out BENCHMARKS-noisyprobe.md

# Side by side: raw CRI floor, nodelet and the upstream kubelet v1.33.4 on the local control
# plane, three interleaved rounds (~1 h); prints the table and writes BENCHMARKS.md. Stops the
# demo/cluster nodelets.
bench: push-images build csidriver dra-driver control-plane
	hack/demo.sh stop
	hack/cluster.sh stop
	$(GO) run ./hack/bench

# The bench driver on 10 pods, nodelet and floor only (~2 min): keeps it working; asserts no timings.
bench-smoke: push-images build csidriver dra-driver control-plane
	hack/demo.sh stop
	hack/cluster.sh stop
	$(GO) run ./hack/bench -smoke

# The upstream node conformance suite (k8s.io/kubernetes v1.33.4 test/e2e_node, NodeConformance
# specs, not Serial/Flaky/Feature/Disruptive) against nodelet, then the upstream kubelet, on a
# fresh local control plane, then the serial selection (hack/conformance/serial.txt), the pod
# API selection (hack/conformance/podapi.txt), the resources selection
# (hack/conformance/resources.txt) and the DRA selection (hack/conformance/dra.txt); writes
# CONFORMANCE.md. Stops the demo/cluster nodelets.
conformance:
	hack/demo.sh stop
	hack/cluster.sh stop
	hack/conformance.sh

# The serial selection alone (the upstream specs for eviction, GC, OOM, allocatable; one at a
# time, both kubelets, each restarted by the specs through hack/conformance/shim/systemctl).
# PART=N runs one part of hack/conformance/serial.txt (a whole selection takes hours).
conformance-serial:
	hack/demo.sh stop
	hack/cluster.sh stop
	hack/conformance.sh serial

# The pod API selection alone: the upstream specs for native sidecars, in-place resize and user
# namespaces (hack/conformance/podapi.txt), both kubelets; SUBJECTS=nodelet re-runs nodelet's column.
conformance-podapi:
	hack/demo.sh stop
	hack/cluster.sh stop
	hack/conformance.sh podapi

# The resources selection alone: the upstream specs for the CPU, memory and topology managers,
# pod resources and device plugins (hack/conformance/resources.txt; one at a time, both kubelets,
# restarted by the specs through hack/conformance/shim/systemctl). PART=N runs one part;
# SUBJECTS=kubelet runs the upstream kubelet's column alone. Under a shared lock file take it with
# `flock -o LOCK make ...`: the control plane the run (re)starts must not inherit the lock.
conformance-resources:
	hack/demo.sh stop
	hack/cluster.sh stop
	hack/conformance.sh resources

# The DRA selection alone: the upstream specs of Dynamic Resource Allocation on the node
# (hack/conformance/dra.txt; the suite's in-process test driver as the node plugin; one at a time,
# both kubelets with the DynamicResourceAllocation gate on, restarted by the specs through
# hack/conformance/shim/systemctl). SUBJECTS=nodelet re-runs nodelet's column.
conformance-dra:
	hack/demo.sh stop
	hack/cluster.sh stop
	hack/conformance.sh dra

# A few minutes of conformance specs nodelet passes (hack/conformance/smoke.txt), nodelet only.
conformance-smoke:
	hack/demo.sh stop
	hack/cluster.sh stop
	hack/conformance.sh smoke

# The same smoke specs on the compatibility lane's containerd 1.6.
conformance-smoke-containerd16: containerd16
	hack/demo.sh stop
	hack/cluster.sh stop
	CONTAINERD_INSTANCE=containerd16 hack/conformance.sh smoke

# Everything CI runs (hack/test.sh): unit and real tests, then end-to-end tests against the real
# containerd 2 and control plane, the compatibility subset of them and the conformance smoke on
# containerd 1.6, the benchmark driver's smoke run and the conformance smoke specs, in order; beside
# them, the guest lane (cgroup v2 and systemd in a QEMU guest, nodelet only; `make guest` adds the
# upstream kubelet's pass for GUEST.md), which touches neither the host's containerd nor its control
# plane. The host's steps run in order, so the conformance script need not wait for other runs to go quiet.
test: export NO_WAIT_QUIET=1
test: export GUEST_SUBJECTS=nodelet
test:
	MAKE="$(MAKE)" hack/test.sh

# Unit tests: every package except the end-to-end suite, after the dependency, layering
# and doc-link checks; the real tests (`make real`) are only compiled and vetted here.
unit:
	hack/check-deps.sh
	$(GO) run ./hack/checklayers
	hack/check-doc-links.sh
	$(GO) vet -tags real $$(git ls-files '*_real_test.go' | xargs -n1 dirname | sort -u | sed 's|^|./|')
	$(GO) test -race $$($(GO) list ./... | grep -v '/test/e2e')
	cd test/registry && $(GO) test -race ./...

# Go fuzz targets, one <package>:<Fuzz function> each; add new ones here. Their seed corpora
# run with the unit tests; `make fuzz` fuzzes each in turn for FUZZTIME.
FUZZTIME ?= 60s
FUZZ_TARGETS := \
	./internal/pod/source:FuzzDecodeAndValidate \
	./internal/volumes/subpath:FuzzSubPathOpen

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t#*:}; \
		echo "fuzz: $$fn in $$pkg for $(FUZZTIME)"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME); \
	done

# The package tests that talk to the real containerd or API server: files *_real_test.go behind
# the build tag `real`, tests TestReal* (they read NODELET_E2E_* variables, which this sets); a
# skipped test fails the run.
real: images control-plane
	hack/demo.sh stop
	hack/cluster.sh stop
	hack/real-tests.sh

# End-to-end tests: a real nodelet binary on the real containerd and the local control plane.
# Stops the demo and cluster nodelets first, since one nodelet owns the runtime's pods.
e2e: test-deps push-images build tools registries control-plane dra-driver
	hack/demo.sh stop
	hack/cluster.sh stop
	NODELET_BIN=$(CURDIR)/$(OUTPUT)/bin/nodelet $(GO) test -tags e2e -count=1 -timeout 45m -v ./test/e2e/...

# The compatibility lane: the basics of the e2e tests, and the refusals of what containerd 1.6
# cannot do, on Debian's containerd 1.6 (part of `make test`). Like `make e2e`, it must run
# alone: nodelet sweeps pod cgroups it does not know, whichever containerd runs them.
E2E_CONTAINERD16_TESTS := TestRuntimeGatedPodFieldsOnContainerd16|TestImageVolumeRefusedOnContainerd16|TestContainerStopSignals|TestPodWithRefusedFieldFailsBesideARunningPod|TestSecSmallCorruptUserNamespaceFileDoesNotStopTheNode|TestStaticPodRunsWithNetworkAndLogs|TestRestartedNodeletAdoptsRunningPods|TestSeccompDefaultAndNoCPUQuota|TestRuntimeClassPicksTheHandler|TestConfigMapAndSecretReachTheContainer
e2e-containerd16: containerd16 build control-plane
	hack/demo.sh stop
	hack/cluster.sh stop
	NODELET_BIN=$(CURDIR)/$(OUTPUT)/bin/nodelet NODELET_CRI_ENDPOINT=unix:///run/nodelet-containerd16/containerd/containerd.sock \
		$(GO) test -tags e2e -count=1 -timeout 20m -v -run '^($(E2E_CONTAINERD16_TESTS))$$' ./test/e2e/

# The guest lane: a Debian guest under QEMU that boots cgroup v2 with systemd (hack/guest.sh;
# image cached under _output/guest/base), nodelet on containerd 2 in it, the tests of
# test/guest/inguest reported as subtests of TestGuest. Uses the test images and the control
# plane's binaries; touches neither the host's containerd nor its control plane. GUEST_RUN=REGEXP picks tests;
# the suite runs against nodelet, then the upstream kubelet for GUEST.md's side-by-side table
# (GUEST_SUBJECTS=nodelet: nodelet only).
guest: images control-plane
	$(GO) test -tags guest -count=1 -timeout 65m -v ./test/guest/

# The guest selection of CONFORMANCE.md: the upstream node suite's specs that need cgroup v2 or
# systemd (hack/conformance/guest.txt; e2e_node.test of k8s.io/kubernetes v1.33.4) run in the
# guest lane's guest against nodelet, then the upstream kubelet, each as the systemd unit
# kubelet-e2e.service on the guest's control plane; each spec a subtest of
# TestGuest/TestUpstreamNodeSuite. Keeps both columns in hack/conformance/results/guest and
# rewrites CONFORMANCE.md. Not part of `make test`: it takes longer (see docs/testing.md).
guest-conformance: export GUEST_NODE_SUITE=1
guest-conformance: images control-plane
	hack/control-plane.sh build-conformance
	$(GO) test -tags guest -count=1 -timeout 70m -v ./test/guest/

# Kill all project containers, stop containerd and delete
# /var/lib/nodelet/containerd and /run/nodelet (nothing else).
clean-containerd:
	hack/containerd.sh clean
