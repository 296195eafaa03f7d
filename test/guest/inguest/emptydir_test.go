//go:build guestvm

package inguest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// memoryEmptyDirPod has a 64Mi memory limit and two memory-backed emptyDirs: one without a
// sizeLimit, one with 16Mi.
const memoryEmptyDirPod = `apiVersion: v1
kind: Pod
metadata:
  name: tmpfs
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    resources:
      limits: {cpu: 100m, memory: 64Mi}
    volumeMounts:
    - {name: bylimit, mountPath: /bylimit}
    - {name: bysize, mountPath: /bysize}
  volumes:
  - name: bylimit
    emptyDir: {medium: Memory}
  - name: bysize
    emptyDir: {medium: Memory, sizeLimit: 16Mi}
`

// TestMemoryEmptyDirSizedByPodLimit reads a memory-backed emptyDir's tmpfs in the container's
// own mount table: sized by the pod's memory limit (not the guest's memory), or by its
// sizeLimit when that is smaller.
func TestMemoryEmptyDirSizedByPodLimit(t *testing.T) {
	useDriver(t, "systemd")
	n := startNodelet(t, "cgroupDriver: systemd\n")
	n.writeManifest("tmpfs", memoryEmptyDirPod)
	pod := n.waitRunning("tmpfs")
	mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mounts", containerPID(t, pod)))
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{"/bylimit": "size=65536k", "/bysize": "size=16384k"} {
		line := mountLine(string(mounts), dir)
		if !strings.HasPrefix(line, "tmpfs ") || !hasOption(line, want) {
			t.Errorf("the container's %s: %q, want a tmpfs with %s", dir, line, want)
		}
	}
}

// mountLine is the /proc/PID/mounts line of the mount point dir, or "".
func mountLine(mounts, dir string) string {
	for _, line := range strings.Split(mounts, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[1] == dir {
			return line
		}
	}
	return ""
}

func hasOption(line, opt string) bool {
	f := strings.Fields(line)
	if len(f) < 4 {
		return false
	}
	for _, o := range strings.Split(f[3], ",") {
		if o == opt {
			return true
		}
	}
	return false
}
