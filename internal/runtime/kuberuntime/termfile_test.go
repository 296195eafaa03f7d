package kuberuntime

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/containeropts"
)

// termSetup runs a one-container pod (restartPolicy Never) and returns its termination file.
func termSetup(t *testing.T, mutate func(*v1.Pod)) (*testEnv, *v1.Pod, string) {
	t.Helper()
	e := newTestEnv(t)
	pod := newPod("term", ctr("app", "true"))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	if mutate != nil {
		mutate(pod)
	}
	e.sync(pod)
	path := firstMount(e.running("app").Config.Mounts, containeropts.TerminationMessagePath(&pod.Spec.Containers[0]))
	if path == "" {
		t.Fatal("no termination message mount")
	}
	return e, pod, path
}

func firstMount(mounts []*runtimeapi.Mount, containerPath string) string {
	for _, m := range mounts {
		if m.ContainerPath == containerPath {
			return m.HostPath
		}
	}
	return ""
}

func hostSecret(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("HOST-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTerminationMessageTailOfRegularFile(t *testing.T) {
	e, pod, path := termSetup(t, nil)
	if err := os.WriteFile(path, []byte(strings.Repeat("a", 1000)+strings.Repeat("z", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.exit("app", 1)
	if msg := e.status(pod).FindContainer("app").Message; msg != strings.Repeat("z", 4096) {
		t.Fatalf("message has %d bytes (%q...), want the file's last 4096", len(msg), msg[:min(10, len(msg))])
	}
}

func TestTerminationMessageSymlinkSwapIsNotFollowed(t *testing.T) {
	e, pod, path := termSetup(t, nil)
	secret := hostSecret(t)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	e.exit("app", 1)
	if msg := e.status(pod).FindContainer("app").Message; msg != "" {
		t.Fatalf("message %q read through a symlink", msg)
	}
	_, err := e.mgr.readTerminationFile(string(pod.UID), path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("reading through the symlink: err %v, want one naming %s", err, path)
	}
}

func TestTerminationMessageFIFOAndDirectoryAreRefused(t *testing.T) {
	e, pod, path := termSetup(t, nil)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	// Opening a FIFO for reading without a writer would block: this returns at once.
	if msg, err := e.mgr.readTerminationFile(string(pod.UID), path); msg != "" || err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("FIFO: %q, %v", msg, err)
	}
	os.Remove(path)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if msg, err := e.mgr.readTerminationFile(string(pod.UID), path); msg != "" || err == nil {
		t.Fatalf("directory: %q, %v", msg, err)
	}
}

func TestTerminationMessageOutsideThePodDirIsRefused(t *testing.T) {
	e, pod, path := termSetup(t, nil)
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := hostSecret(t)
	podsDir := filepath.Join(e.rootDir, "pods")
	for _, p := range []string{
		secret,
		filepath.Join(podsDir, string(pod.UID), "..", "other", "f"),
		filepath.Join(podsDir, "other-uid", "containers", "app", "f"),
		podsDir + "/" + string(pod.UID) + "/../../../" + secret,
	} {
		if msg, err := e.mgr.readTerminationFile(string(pod.UID), p); msg != "" || err == nil {
			t.Errorf("%s: %q, %v; want refused", p, msg, err)
		}
	}
	if msg, err := e.mgr.readTerminationFile("other-uid", path); msg != "" || err == nil {
		t.Errorf("another pod's UID read this pod's file: %q, %v", msg, err)
	}
	if msg, err := e.mgr.readTerminationFile(string(pod.UID), path); msg != "mine" || err != nil {
		t.Errorf("own file: %q, %v", msg, err)
	}
}

// withVolumeAtTermPath mounts an emptyDir's file "msg" (subPath) at the termination path.
func withVolumeAtTermPath(pod *v1.Pod) {
	pod.Spec.Volumes = []v1.Volume{{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "shared", MountPath: "/dev/termination-log", SubPath: "msg"}}
}

func TestTerminationMessageFromVolumeAtTheTerminationPath(t *testing.T) {
	e, pod, path := termSetup(t, withVolumeAtTermPath)
	// The volume's subPath reaches the container as its bind mount under volume-subpaths.
	if !strings.Contains(path, "volume-subpaths") {
		t.Fatalf("first mount at the termination path is %s, want the volume's subPath mount", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("from the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.exit("app", 1)
	if msg := e.status(pod).FindContainer("app").Message; msg != "from the volume" {
		t.Fatalf("message %q", msg)
	}

	// Another container of the pod swaps the file, then the volume directory, for symlinks.
	secret := hostSecret(t)
	os.Remove(path)
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	if msg := e.status(pod).FindContainer("app").Message; msg != "" {
		t.Fatalf("message %q read through a symlinked file in the volume", msg)
	}
	volDir := filepath.Dir(path)
	os.RemoveAll(volDir)
	if err := os.Symlink(filepath.Dir(secret), volDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(secret, filepath.Join(filepath.Dir(secret), "msg")); err != nil {
		t.Fatal(err)
	}
	if msg, err := e.mgr.readTerminationFile(string(pod.UID), path); msg != "" || err == nil {
		t.Fatalf("read through a symlinked volume directory: %q, %v", msg, err)
	}
}

func TestTerminationMessageMissingFileIsNoMessage(t *testing.T) {
	e, pod, path := termSetup(t, nil)
	os.Remove(path)
	if msg, err := e.mgr.readTerminationFile(string(pod.UID), path); msg != "" || err != nil {
		t.Fatalf("missing file: %q, %v; want no message, no error", msg, err)
	}
}
