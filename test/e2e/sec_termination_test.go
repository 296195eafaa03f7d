//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The termination-message swap: containers of one pod share an emptyDir. One init container
// has a file of it (subPath) at its terminationMessagePath, another has its
// terminationMessagePath inside it. Once they have exited, the app container "attacker"
// replaces both files in the volume with symlinks to a host file. nodelet re-reads exited
// containers' messages on every status update, as root: the host file's content must never
// reach the pod's status, and the host file stays as it was. A container writing its message
// the normal way ("reporter", and the init container with the path inside the volume) still
// gets it into its status.
func TestTerminationMessageSymlinkSwapDoesNotLeakHostFile(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret")
	marker := fmt.Sprintf("NODELET-E2E-HOST-SECRET-%d", time.Now().UnixNano())
	if err := os.WriteFile(secret, []byte(marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(secret)
	if err != nil {
		t.Fatal(err)
	}

	// Standalone, the API (and so the read-only port) is served only without webhook auth.
	roPort := freePort(t)
	n := startNodelet(t, fmt.Sprintf("--read-only-port=%d", roPort), fmt.Sprintf("--port=%d", freePort(t)),
		"--address=127.0.0.1", "--authentication-token-webhook=false", "--authorization-mode=AlwaysAllow",
		"--cert-dir="+t.TempDir())
	n.writeManifest("termswap.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: termswap
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  volumes:
  - name: shared
    emptyDir: {}
  initContainers:
  - name: prep
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /shared/msg"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  - name: victim-subpath
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    command: ["true"]
    volumeMounts: [{name: shared, mountPath: /dev/termination-log, subPath: msg}]
  - name: victim-dir
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    terminationMessagePath: /shared/term
    command: ["sh", "-c", "printf dir-message > /shared/term"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
  - name: attacker
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "rm -f /shared/msg /shared/term && ln -s `+secret+` /shared/msg && ln -s `+secret+` /shared/term && touch /shared/swapped && exec sleep 3600"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  - name: reporter
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "until [ -e /shared/swapped ]; do sleep 0.2; done; printf normal-message > /dev/termination-log"]
    volumeMounts: [{name: shared, mountPath: /shared}]
`)
	// reporter exits only after the swap, so the status that shows it terminated was computed
	// (every exited container's message read again) with the symlinks in place.
	var pod *v1.Pod
	var raw []byte
	testutil.WaitFor(t, 90*time.Second, "reporter terminated after the swap", func() (bool, string) {
		pod, raw = podFromReadOnlyPort(t, roPort, "termswap-"+nodeName)
		if pod == nil {
			return false, "pod not listed"
		}
		if bytes.Contains(raw, []byte(marker)) {
			t.Fatalf("the host file's content is in the pod's status:\n%s", raw)
		}
		s := findStatus(pod.Status.ContainerStatuses, "reporter")
		return s != nil && s.State.Terminated != nil, fmt.Sprintf("%+v", pod.Status.ContainerStatuses)
	})
	if bytes.Contains(raw, []byte(marker)) {
		t.Fatalf("the host file's content is in the pod's status:\n%s", raw)
	}
	want := map[string]string{"victim-subpath": "", "victim-dir": "dir-message"}
	for name, msg := range want {
		s := findStatus(pod.Status.InitContainerStatuses, name)
		if s == nil || s.State.Terminated == nil || s.State.Terminated.Message != msg {
			t.Errorf("init container %s: %+v; want terminated with message %q", name, s, msg)
		}
	}
	if s := findStatus(pod.Status.ContainerStatuses, "reporter"); s.State.Terminated.Message != "normal-message" {
		t.Errorf("reporter's message %q, want normal-message", s.State.Terminated.Message)
	}
	after, err := os.Stat(secret)
	content, _ := os.ReadFile(secret)
	if err != nil || string(content) != marker+"\n" || !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() {
		t.Errorf("host file changed: %v %q %v %v", err, content, after.ModTime(), after.Mode())
	}
}

// podFromReadOnlyPort returns the named pod from nodelet's /pods and the raw answer.
func podFromReadOnlyPort(t *testing.T, port int, name string) (*v1.Pod, []byte) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", port))
	if err != nil {
		return nil, nil // the listener may not be up yet
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, raw
	}
	var list v1.PodList
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("decoding /pods: %v", err)
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i], raw
		}
	}
	return nil, raw
}

func findStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}
