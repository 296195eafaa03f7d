//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The API server v1.33 drops image volumes while its ImageVolume gate is off (the project's
// control plane runs with the defaults), so these pods are static pods, whose status the
// read-only port's /pods shows and whose events nodelet's log shows.
const imageVolumeGate = "--feature-gates=ImageVolume=true"

// imageVolumePodYAML is a static pod whose container main mounts the image volume data (of
// image, with pullPolicy) whole at /data and its directory sub at /sub, and whose container
// other mounts nothing of it.
func imageVolumePodYAML(name, image, pullPolicy string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: data
    image: {reference: %[3]q, pullPolicy: %[4]s}
  containers:
  - name: main
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}, {name: data, mountPath: /sub, subPath: sub}]
  - name: other
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
`, name, busybox, image, pullPolicy)
}

// skipOnContainerd16 skips a test of image volumes on a runtime that cannot mount them
// (TestImageVolumeRefusedOnContainerd16 covers that one).
func skipOnContainerd16(t *testing.T) {
	if v := runtimeVersion(t); strings.HasPrefix(strings.TrimPrefix(v.RuntimeVersion, "v"), "1.") {
		name, ver := v.RuntimeName, v.RuntimeVersion
		t.Skipf("the runtime at %s is %s %s, which cannot mount image volumes", endpoint, name, ver)
	}
}

// buildDataImage builds an image holding /hello and /sub/inner with this run's token in each,
// imports it into the runtime under test and removes it when the test ends.
func buildDataImage(t *testing.T, image, token string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, text := range map[string]string{"hello": "hello " + token, "sub/inner": "inner " + token} {
		if err := os.WriteFile(filepath.Join(root, file), []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tar := filepath.Join(t.TempDir(), "data.tar")
	if out, err := exec.Command(repoPath("_output/bin/mkimage"), "-name", image, "-cmd", "/hello", "-out", tar, root).CombinedOutput(); err != nil {
		t.Fatalf("mkimage: %v\n%s", err, out)
	}
	ctr := func(args ...string) ([]byte, error) {
		return exec.Command("ctr", append([]string{"--address", strings.TrimPrefix(endpoint, "unix://"), "-n", "k8s.io", "images"}, args...)...).CombinedOutput()
	}
	if out, err := ctr("import", tar); err != nil {
		t.Fatalf("importing %s: %v\n%s", image, err, out)
	}
	t.Cleanup(func() { _, _ = ctr("rm", image) })
}

// On containerd 2 with the ImageVolume gate on, an image volume is the image's files, read-only:
// the container reads a file the test put in the image, a subPath mounts a directory of it,
// and a write fails; a container beside it that does not mount it runs too.
func TestImageVolumeMountsTheImageAndASubPath(t *testing.T) {
	skipOnContainerd16(t)
	image, token := "nodelet.local/e2e-imagevolume:1", fmt.Sprintf("%d", time.Now().UnixNano())
	buildDataImage(t, image, token)
	n, port := startStatusNodelet(t, imageVolumeGate)
	n.writeManifest("imgvol.yaml", imageVolumePodYAML("imgvol", image, "IfNotPresent"))
	main := waitRunning(t, "imgvol", "main", 60*time.Second)
	waitRunning(t, "imgvol", "other", 10*time.Second)

	if got := execOut(t, main.Id, "cat", "/data/hello"); got != "hello "+token+"\n" {
		t.Errorf("/data/hello reads %q, want the image's file", got)
	}
	if got := execOut(t, main.Id, "cat", "/sub/inner"); got != "inner "+token+"\n" {
		t.Errorf("/sub/inner (subPath sub) reads %q, want the image's sub/inner", got)
	}
	resp := execSync(t, main.Id, "touch", "/data/new")
	if out := string(resp.Stdout) + string(resp.Stderr); resp.ExitCode == 0 || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a write into the image volume gave %q (exit %d), want EROFS", out, resp.ExitCode)
	}
	if p := podStatus(t, port, "imgvol"); p == nil || p.Status.Phase != v1.PodRunning {
		t.Errorf("pod status %+v, want Running", p)
	}
	if event := fmt.Sprintf(`reason="Pulled" message="Container image \"%s\" already present on machine"`, image); !strings.Contains(n.log(), event) {
		t.Errorf("no event %s in the log", event)
	}
}

// An image volume whose image the registry does not have holds the container that mounts it,
// with upstream's reasons: ErrImagePull with the runtime's error, then ImagePullBackOff, and
// the Failed events; the pod's other container runs.
func TestImageVolumeWithAMissingImageWaits(t *testing.T) {
	skipOnContainerd16(t)
	startAnonymousRegistry(t)
	image := anonymousRegistry + "/e2e-imagevolume-missing:1"
	n, port := startStatusNodelet(t, imageVolumeGate)
	n.writeManifest("imgvol-missing.yaml", imageVolumePodYAML("imgvol-missing", image, "IfNotPresent"))
	waitRunning(t, "imgvol-missing", "other", 60*time.Second)

	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
		var w *v1.ContainerStateWaiting
		testutil.WaitFor(t, 60*time.Second, "main waiting with "+reason, func() (bool, string) {
			w = waitingOf(podStatus(t, port, "imgvol-missing"), "main")
			return w != nil && w.Reason == reason, fmt.Sprintf("%+v", w)
		})
		if reason == "ImagePullBackOff" && !strings.HasPrefix(w.Message, fmt.Sprintf("Back-off pulling image %q: ErrImagePull: ", image)) {
			t.Errorf("ImagePullBackOff message %q", w.Message)
		}
	}
	log := n.log()
	for _, event := range []string{
		fmt.Sprintf(`reason="Failed" message="Failed to pull image \"%s\": `, image),
		`reason="Failed" message="Error: ErrImagePull"`,
		`reason="Failed" message="Error: ImagePullBackOff"`,
	} {
		if !strings.Contains(log, event) {
			t.Errorf("no event %s in the log", event)
		}
	}
	if cs := containers(t, "imgvol-missing", "main"); len(cs) != 0 {
		t.Errorf("main was created %d times without its image volume", len(cs))
	}
}

// On containerd 1.6, which takes a CRI Mount's image field and ignores it, a pod with an image
// volume is refused at admission (the gate on), naming the runtime's version and the one that
// would mount it, rather than run with an empty directory in place of the image. Run with
// NODELET_CRI_ENDPOINT=unix:///run/nodelet-containerd16/containerd/containerd.sock.
func TestImageVolumeRefusedOnContainerd16(t *testing.T) {
	v := runtimeVersion(t)
	name, ver := v.RuntimeName, v.RuntimeVersion
	if !strings.HasPrefix(strings.TrimPrefix(ver, "v"), "1.") {
		t.Skipf("the runtime at %s is %s %s, which mounts image volumes", endpoint, name, ver)
	}
	n, port := startStatusNodelet(t, imageVolumeGate)
	n.writeManifest("imgvol-old.yaml", imageVolumePodYAML("imgvol-old", busybox, "IfNotPresent"))
	var p *v1.Pod
	testutil.WaitFor(t, 30*time.Second, "the pod refused", func() (bool, string) {
		p = podStatus(t, port, "imgvol-old")
		return p != nil && p.Status.Phase == v1.PodFailed, fmt.Sprintf("%+v", p)
	})
	want := fmt.Sprintf("Pod was rejected: spec.volumes[0].image: image volumes need a runtime that mounts images through CRI: "+
		"this node runs %s %s; containerd 2.1 or later (or CRI-O 1.31 or later) has it", name, strings.TrimPrefix(ver, "v"))
	if p.Status.Reason != reasonFieldNotSupported || p.Status.Message != want {
		t.Errorf("refusal %q %q, want %s %q", p.Status.Reason, p.Status.Message, reasonFieldNotSupported, want)
	}
	if sbs := sandboxes(t, "imgvol-old"); len(sbs) != 0 {
		t.Errorf("the refused pod got %d sandboxes", len(sbs))
	}
}
