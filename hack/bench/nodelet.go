package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// nodeletSubject runs _output/bin/nodelet as the bench node; untimed is its second
// configuration, --pod-timeline=false, measured for the timeline's cost.
func (b *bench) nodeletSubject(untimed bool) *subject {
	name, short := "nodelet", "nodelet"
	var extra []string
	if untimed {
		name, short, extra = "nodelet --pod-timeline=false", "nodelet-untimed", []string{"--pod-timeline=false"}
	}
	if b.p.draPods > 0 {
		extra = append(extra, "--feature-gates="+draGate+"=true")
	}
	root := filepath.Join(b.o.workDir, short)
	return &subject{
		name: name, short: short, bin: b.o.nodeletBin, root: root,
		args: func(kubeconfig string) []string {
			return append([]string{
				"--kubeconfig=" + kubeconfig,
				"--hostname-override=" + nodeName,
				"--root-dir=" + root,
				"--container-runtime-endpoint=" + b.o.endpoint,
				"--client-ca-file=" + filepath.Join(b.o.pki, "ca.crt"),
				"--port=" + strconv.Itoa(apiPort),
				"--healthz-port=" + strconv.Itoa(healthzPort),
				"--read-only-port=0", "--fail-swap-on=false", // as the upstream kubelet's config
				"--max-pods=260",
				// The pull figure: parallel pulls, and a registry burst that lets the burst's pulls all
				// start (both kubelets refuse a pull over the limit with "pull QPS exceeded").
				"--serialize-image-pulls=false", "--registry-burst=" + strconv.Itoa(pullBurstLimit),
				"--image-gc-high-threshold=100", "--image-gc-low-threshold=99", // as the upstream kubelet's config
				"-v=1",
			}, extra...)
		},
	}
}

// nodeKubeconfig writes (once) and returns the kubeconfig of system:node:bench-node; both
// kubelets use it.
func nodeKubeconfig() (string, error) {
	out, err := exec.Command("hack/control-plane.sh", "node-kubeconfig", nodeName).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("hack/control-plane.sh node-kubeconfig %s (run from the repository root): %w", nodeName, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
