//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// startStatusNodelet runs nodelet with its read-only port on loopback, where the tests read
// the pods' statuses.
func startStatusNodelet(t *testing.T, extraArgs ...string) (*nodelet, int) {
	port := freePort(t)
	return startNodelet(t, append([]string{"--address=127.0.0.1", fmt.Sprintf("--read-only-port=%d", port),
		fmt.Sprintf("--port=%d", freePort(t)), "--authentication-token-webhook=false",
		"--authorization-mode=AlwaysAllow", "--cert-dir=" + t.TempDir()}, extraArgs...)...), port
}

// podStatus reads a static pod's status from the read-only port's /pods.
func podStatus(t *testing.T, port int, name string) *v1.Pod {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", port))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var list v1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("/pods: %v: %s", err, body)
	}
	for i := range list.Items {
		if list.Items[i].Name == name+"-"+nodeName {
			return &list.Items[i]
		}
	}
	return nil
}

// waitingOf returns the waiting state of a container in a pod's status.
func waitingOf(p *v1.Pod, container string) *v1.ContainerStateWaiting {
	if p == nil {
		return nil
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.State.Waiting
		}
	}
	return nil
}

// subPathPodYAML is a static pod whose init container plants links in an emptyDir with
// plant; its container app mounts subPath of it at /mnt and runs script, and other, which
// mounts the whole volume, just runs.
func subPathPodYAML(name, plant, subPath, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: vol
    emptyDir: {}
  initContainers:
  - name: plant
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[3]q]
    volumeMounts: [{name: vol, mountPath: /vol}]
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[5]q]
    volumeMounts: [{name: vol, mountPath: /mnt, subPath: %[4]q}]
  - name: other
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    volumeMounts: [{name: vol, mountPath: /vol}]
`, name, busybox, plant, subPath, script)
}

// A container plants a symlink out of the volume (to the host's /, through an intermediate
// directory, or to a host directory a missing subPath would be made in); the container whose
// subPath goes through it waits with CreateContainerConfigError naming the subPath and a
// Failed event, is never created, and the host is as it was; the pod's other container runs.
func TestSubPathSymlinkOutOfTheVolumeIsRefused(t *testing.T) {
	n, port := startStatusNodelet(t)
	hostDir := t.TempDir() // stands for any host directory
	etcMarker := fmt.Sprintf("/etc/nodelet-e2e-subpath-%d", time.Now().UnixNano())
	cases := []struct{ pod, plant, subPath, script string }{
		{"sp-root", "ln -s / /vol/escape", "escape", "touch /mnt" + hostDir + "/escaped; exec sleep 3600"},
		{"sp-intermediate", "ln -s / /vol/d", "d/etc", "touch /mnt/" + filepath.Base(etcMarker) + "; exec sleep 3600"},
		{"sp-newdir", "ln -s " + hostDir + " /vol/x", "x/newdir", "touch /mnt/escaped; exec sleep 3600"},
	}
	for _, tc := range cases {
		n.writeManifest(tc.pod+".yaml", subPathPodYAML(tc.pod, tc.plant, tc.subPath, tc.script))
	}
	for _, tc := range cases {
		t.Run(tc.pod, func(t *testing.T) {
			waitRunning(t, tc.pod, "other", 60*time.Second)
			var w *v1.ContainerStateWaiting
			testutil.WaitFor(t, 30*time.Second, "app waiting with CreateContainerConfigError", func() (bool, string) {
				w = waitingOf(podStatus(t, port, tc.pod), "app")
				return w != nil && w.Reason == "CreateContainerConfigError", fmt.Sprintf("%+v", w)
			})
			want := fmt.Sprintf(`failed to prepare subPath for volumeMount "vol" of container "app": subPath %q: it leads out of the volume`, tc.subPath)
			if !strings.HasPrefix(w.Message, want) {
				t.Errorf("message %q, want it to start %q", w.Message, want)
			}
			if cs := containers(t, tc.pod, "app"); len(cs) != 0 {
				t.Errorf("app was created %d times", len(cs))
			}
			event := fmt.Sprintf(`reason="Failed" message="Error: %s`, strings.ReplaceAll(want, `"`, `\"`))
			if !strings.Contains(n.log(), event) {
				t.Errorf("no Failed event %s in the log", event)
			}
		})
	}
	if entries, err := os.ReadDir(hostDir); err != nil || len(entries) != 0 {
		t.Errorf("host directory %s: %v %v, want it untouched and empty", hostDir, entries, err)
	}
	if _, err := os.Lstat(etcMarker); !os.IsNotExist(err) {
		_ = os.Remove(etcMarker)
		t.Errorf("a container wrote the host's %s: %v", etcMarker, err)
	}
}

// A container swaps what subPath "a" is (a directory, nothing, a symlink to the host's /) in
// a loop while containers mounting "a" start again and again: none of them ever sees the
// host, where a marker file waits that only the host has.
func TestSubPathSymlinkSwappedWhileContainersStart(t *testing.T) {
	n, _ := startStatusNodelet(t)
	marker := filepath.Join(t.TempDir(), "host-only")
	if err := os.WriteFile(marker, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	var racers strings.Builder
	for i := range 6 {
		fmt.Fprintf(&racers, `  - name: racer%d
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "if [ -e /mnt%s ]; then echo SAW-HOST; else echo saw-volume; fi"]
    volumeMounts: [{name: vol, mountPath: /mnt, subPath: a}]
`, i, busybox, marker)
	}
	n.writeManifest("swap.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sp-swap
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: vol
    emptyDir: {}
  containers:
  - name: swapper
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while true; do mkdir -p /vol/a; rm -rf /vol/a; ln -s / /vol/a; rm /vol/a; done"]
    volumeMounts: [{name: vol, mountPath: /vol}]
%s`, busybox, racers.String()))

	seen := map[string]string{} // container ID → its log
	// Racer instances counted across polls: container GC trims each racer's dead instances as
	// they die, so the runtime never holds them all at once.
	started := map[string]bool{}
	testutil.WaitFor(t, 90*time.Second, "racers started 12 times", func() (bool, string) {
		for _, c := range containers(t, "sp-swap", "") {
			if !strings.HasPrefix(c.Metadata.Name, "racer") {
				continue
			}
			if c.State == cri.ContainerState_CONTAINER_EXITED {
				seen[c.Id] = containerLog(t, c.Id)
			}
			if c.State != cri.ContainerState_CONTAINER_CREATED {
				started[c.Id] = true
			}
		}
		return len(started) >= 12, fmt.Sprintf("%d racer starts", len(started))
	})
	for id, log := range seen {
		if strings.Contains(log, "SAW-HOST") {
			t.Errorf("racer %s saw the host's / through subPath a: %q", id, log)
		}
	}
	t.Logf("%d racer instances read, %d subPaths refused as leading out of the volume", len(seen),
		strings.Count(n.log(), "it leads out of the volume"))
	if _, err := os.ReadFile(marker); err != nil {
		t.Errorf("host marker: %v", err)
	}
}

// containerLog reads what a container wrote to its log, without the CRI log format's
// timestamp, stream and tag.
func containerLog(t *testing.T, id string) string {
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return ""
	}
	b, _ := os.ReadFile(st.Status.LogPath)
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if fields := strings.SplitN(line, " ", 4); len(fields) == 4 {
			out.WriteString(fields[3] + "\n")
		}
	}
	return out.String()
}

// Legitimate subPaths work: a directory, a file, a symlink inside the volume, and a
// subPathExpr made on demand, each bind-mounted from the pod's volume-subpaths directory.
// The mounts go with the pod, whether it is removed while nodelet runs or while it is down
// (found after the restart).
func TestSubPathInsideTheVolumeWorksAndGoesWithThePod(t *testing.T) {
	n, _ := startStatusNodelet(t)
	legit := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: vol
    emptyDir: {}
  initContainers:
  - name: plant
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /vol/dir && echo in-dir > /vol/dir/f && echo conf > /vol/app.conf && ln -s dir /vol/link"]
    volumeMounts: [{name: vol, mountPath: /vol}]
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: IfNotPresent
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    command: ["sh", "-c", "cat /d/f /etc/app.conf /l/f; echo hello > /p/written; echo done; exec sleep 3600"]
    volumeMounts:
    - {name: vol, mountPath: /d, subPath: dir}
    - {name: vol, mountPath: /etc/app.conf, subPath: app.conf, readOnly: true}
    - {name: vol, mountPath: /l, subPath: link}
    - {name: vol, mountPath: /p, subPathExpr: "out/$(POD_NAME)"}
`, name, busybox)
	}
	n.writeManifest("sp-live.yaml", legit("sp-live"))
	n.writeManifest("sp-down.yaml", legit("sp-down"))
	podDirs := map[string]string{}
	for _, name := range []string{"sp-live", "sp-down"} {
		c := waitRunning(t, name, "app", 60*time.Second)
		testutil.WaitFor(t, 20*time.Second, name+" read its subPaths", func() (bool, string) {
			log := containerLog(t, c.Id)
			return strings.Contains(log, "done"), log
		})
		if log := containerLog(t, c.Id); !strings.Contains(log, "in-dir\nconf\nin-dir\n") {
			t.Errorf("%s read %q through its subPaths", name, log)
		}
		uid := c.Labels["io.kubernetes.pod.uid"]
		podDirs[name] = filepath.Join(n.rootDir, "pods", uid)
		written := filepath.Join(podDirs[name], "volumes/kubernetes.io~empty-dir/vol/out", name+"-"+nodeName, "written")
		if b, err := os.ReadFile(written); err != nil || string(b) != "hello\n" {
			t.Errorf("%s: subPathExpr's file in the volume: %q %v", name, b, err)
		}
		if m := mountsUnder(t, filepath.Join(podDirs[name], "volume-subpaths")); len(m) != 4 {
			t.Errorf("%s: subPath mounts %v, want 4", name, m)
		}
	}

	gone := func(name string) {
		dir := podDirs[name]
		testutil.WaitFor(t, 60*time.Second, name+"'s directory and mounts gone", func() (bool, string) {
			m := mountsUnder(t, dir)
			_, err := os.Lstat(dir)
			return len(m) == 0 && os.IsNotExist(err), fmt.Sprintf("mounts %v, directory: %v", m, err)
		})
	}
	n.removeManifest("sp-live.yaml")
	gone("sp-live")
	if m := mountsUnder(t, filepath.Join(podDirs["sp-down"], "volume-subpaths")); len(m) != 4 {
		t.Errorf("sp-down's subPath mounts went with sp-live: %v left", m)
	}
	n.stop(syscall.SIGTERM)
	n.removeManifest("sp-down.yaml")
	n.start()
	gone("sp-down")
}

func mountsUnder(t *testing.T, dir string) []string {
	points, err := mount.ReadPoints(mount.Mountinfo)
	if err != nil {
		t.Fatal(err)
	}
	return mount.Under(points, dir)
}
