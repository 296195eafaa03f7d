//go:build guestvm

package inguest

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The static pods the package test hands between the kubelets: one container, and two of
// which one crashed once before the first handover (restart count 1), as kubeadm's static
// control-plane pods are what such a node runs.
const (
	pkgOnePod = `apiVersion: v1
kind: Pod
metadata:
  name: pkg-one
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sleep", "3600"]
`
	pkgTwoPod = `apiVersion: v1
kind: Pod
metadata:
  name: pkg-two
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: steady
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sleep", "3600"]
  - name: flaky
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sh", "-c", "[ -f /data/crashed ] || { touch /data/crashed; exit 1; }; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    emptyDir: {}
`
	// How long a kubelet that just took over is watched for restarting a container: its
	// first syncs of the pods come within it, even under emulation.
	settle = 30 * time.Second
)

var handoverPods = map[string]bool{"pkg-one-" + nodeName: true, "pkg-two-" + nodeName: true}

// snapContainer is what must not change across a handover: the running container, its
// attempt and the restart count the kubelets keep in its annotation, and its sandbox.
type snapContainer struct {
	id, sandbox  string
	attempt      uint32
	restartCount string
}

func writeHandoverPods(t *testing.T) {
	t.Helper()
	writeFile(t, filepath.Join(staticPodDir, "pkg-one.yaml"), pkgOnePod)
	writeFile(t, filepath.Join(staticPodDir, "pkg-two.yaml"), pkgTwoPod)
}

// waitHandoverPods waits for the three containers to run, the flaky one restarted once,
// and returns them.
func waitHandoverPods(t *testing.T) map[string]snapContainer {
	t.Helper()
	var snap map[string]snapContainer
	testutil.WaitFor(t, podTimeout, "the static pods running, flaky restarted once", func() (bool, string) {
		snap = snapshot(t)
		flaky, ok := snap["pkg-two/flaky"]
		return len(snap) == 3 && ok && flaky.attempt == 1, describe(snap)
	})
	t.Logf("under the upstream kubelet: %s", describe(snap))
	return snap
}

// handoverContainers lists the running containers of the handover pods.
func handoverContainers(t *testing.T) []*cri.Container {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	filter := &cri.ContainerFilter{State: &cri.ContainerStateValue{State: cri.ContainerState_CONTAINER_RUNNING}}
	resp, err := rt.ListContainers(ctx, &cri.ListContainersRequest{Filter: filter})
	if err != nil {
		t.Logf("ListContainers: %v", err)
		return nil
	}
	var out []*cri.Container
	for _, c := range resp.Containers {
		if handoverPods[c.Labels["io.kubernetes.pod.name"]] {
			out = append(out, c)
		}
	}
	return out
}

// snapshot reads the handover pods' running containers, keyed pod/container.
func snapshot(t *testing.T) map[string]snapContainer {
	t.Helper()
	snap := map[string]snapContainer{}
	for _, c := range handoverContainers(t) {
		pod := strings.TrimSuffix(c.Labels["io.kubernetes.pod.name"], "-"+nodeName)
		snap[pod+"/"+c.Metadata.Name] = snapContainer{
			id: c.Id, sandbox: c.PodSandboxId, attempt: c.Metadata.Attempt,
			restartCount: c.Annotations["io.kubernetes.container.restartCount"],
		}
	}
	return snap
}

func describe(snap map[string]snapContainer) string {
	keys := make([]string, 0, len(snap))
	for k := range snap {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		c := snap[k]
		fmt.Fprintf(&b, "%s=%.12s(attempt %d, restartCount %s) ", k, c.id, c.attempt, c.restartCount)
	}
	return strings.TrimSpace(b.String())
}

// expectSamePods watches the handover pods for settle: the same containers run throughout,
// in the same sandboxes, with the same attempts and restart counts; a kubelet that killed or
// recreated one fails it at once.
func expectSamePods(t *testing.T, before map[string]snapContainer) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		now := snapshot(t)
		if got, want := describe(now), describe(before); got != want || !sameSandboxes(now, before) {
			t.Fatalf("the pods changed: a container was restarted or recreated\nbefore: %s\nnow:    %s", want, got)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Second)
	}
}

func sameSandboxes(a, b map[string]snapContainer) bool {
	for k, c := range a {
		if b[k].sandbox != c.sandbox {
			return false
		}
	}
	return true
}
