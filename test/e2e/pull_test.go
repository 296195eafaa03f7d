//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// Without its secret a pod shows ErrImagePull, then ImagePullBackOff, with upstream's messages
// and events; once the secret exists the next pull (at the end of the back-off) succeeds.
func TestPullBackOffRecoversOnceTheSecretExists(t *testing.T) {
	startPrivateRegistry(t)
	c := joinCluster(t)
	c.waitReady(t)
	c.createPod(privatePod("late", "regcred"))

	// As upstream: the runtime's error as it is (containerd names the image), not nodelet's words.
	pullErr := c.waitWaiting("late", "ErrImagePull", time.Minute)
	if strings.HasPrefix(pullErr, "Failed to pull image") || !strings.Contains(pullErr, privateImage) {
		t.Errorf("ErrImagePull message %q: want the runtime's error as it is, as upstream", pullErr)
	}
	backOff := c.waitWaiting("late", "ImagePullBackOff", time.Minute)
	if want := fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", privateImage, pullErr); backOff != want {
		t.Errorf("ImagePullBackOff message %q, want %q", backOff, want)
	}
	c.waitEvent("late", "FailedToRetrieveImagePullSecret", "Unable to retrieve some image pull secrets (regcred); attempting to pull the image may not succeed.", 10*time.Second)
	c.waitEvent("late", "Failed", fmt.Sprintf("Failed to pull image %q: ", privateImage), 10*time.Second)
	c.waitEvent("late", "Failed", "Error: ErrImagePull", 10*time.Second)
	c.waitEvent("late", "BackOff", fmt.Sprintf("Back-off pulling image %q", privateImage), 10*time.Second)
	c.waitEvent("late", "Failed", "Error: ImagePullBackOff", 10*time.Second)

	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: dockerConfigJSON()}}
	if _, err := c.admin.CoreV1().Secrets(c.ns).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two failures so far at most (10 s, then 20 s of back-off), so one back-off is ≤ 40 s.
	c.waitPodPhase("late", v1.PodRunning, 50*time.Second)
}

// imagePullPolicy Never with an image the node does not have: ErrImageNeverPull, no pull.
func TestPullPolicyNeverWithoutTheImage(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	const image = "nodelet.local/never-pulled:v1"
	p := podSpec("never", "exec sleep 3600")
	p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullNever
	c.createPod(p)
	want := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
	if got := c.waitWaiting("never", "ErrImageNeverPull", time.Minute); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	c.waitEvent("never", "ErrImageNeverPull", want, 10*time.Second)
}

// A pod deleted while its image is being pulled cancels the pull: the registry sees the
// request go away long before it would have answered, and the pod leaves promptly.
func TestDeletedPodCancelsItsPull(t *testing.T) {
	log := startSlowRegistry(t, 5*time.Minute)
	c := joinCluster(t)
	c.waitReady(t)
	image := slowRegistry + "/busybox:1.36"
	p := podSpec("slow", "exec sleep 3600")
	p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullAlways
	c.createPod(p)
	c.waitEvent("slow", "Pulling", fmt.Sprintf("Pulling image %q", image), 30*time.Second)
	time.Sleep(2 * time.Second) // the pull is held in the registry now
	deleted := time.Now()
	if err := c.admin.CoreV1().Pods(c.ns).Delete(context.Background(), "slow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "the registry seeing the pull go away", func() (bool, string) {
		raw, _ := os.ReadFile(log)
		return strings.Contains(string(raw), "the client went away"), tail(string(raw), 500)
	})
	testutil.WaitFor(t, 30*time.Second, "the pod gone from the API", func() (bool, string) {
		_, err := c.getPod("slow")
		return err != nil, fmt.Sprint(err)
	})
	if took := time.Since(deleted); took > 40*time.Second {
		t.Errorf("the deleted pod took %v to go", took)
	}
}

// The pull policies against a plain registry: IfNotPresent pulls an image the node lacks and
// then uses it as it is; Always pulls again.
func TestPullPoliciesAgainstAnAnonymousRegistry(t *testing.T) {
	startAnonymousRegistry(t)
	image := anonymousRegistry + "/busybox:1.36"
	// An earlier run may have left the image in the runtime.
	_ = exec.Command("ctr", "--address", strings.TrimPrefix(endpoint, "unix://"), "-n", "k8s.io", "images", "rm", image).Run()
	c := joinCluster(t)
	c.waitReady(t)
	for _, step := range []struct {
		pod    string
		policy v1.PullPolicy
		event  string
	}{
		{"first", v1.PullIfNotPresent, fmt.Sprintf("Successfully pulled image %q in ", image)},
		{"second", v1.PullIfNotPresent, fmt.Sprintf("Container image %q already present on machine", image)},
		{"always", v1.PullAlways, fmt.Sprintf("Successfully pulled image %q in ", image)},
	} {
		p := podSpec(step.pod, "exec sleep 3600")
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, step.policy
		c.createPod(p)
		c.waitPodPhase(step.pod, v1.PodRunning, time.Minute)
		c.waitEvent(step.pod, "Pulled", step.event, 10*time.Second)
	}
}

// waitWaiting waits until the pod's first container waits with reason and returns the message.
func (c *cluster) waitWaiting(name, reason string, timeout time.Duration) string {
	c.t.Helper()
	var msg string
	testutil.WaitFor(c.t, timeout, name+" waiting with "+reason, func() (bool, string) {
		p, err := c.getPod(name)
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, fmt.Sprint(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		msg = w.Message
		return w.Reason == reason, w.Reason + " " + w.Message
	})
	return msg
}

// credentialPlugin writes a credential provider plugin answering for the private registry
// with cacheKeyType Registry, which appends a line to calls at each run; it returns the
// provider config to pass to nodelet and its bin dir.
func credentialPlugin(t *testing.T, calls string) (config, binDir string) {
	t.Helper()
	binDir = t.TempDir()
	plugin := `#!/bin/sh
cat >/dev/null
echo called >> ` + calls + `
echo '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","auth":{"` +
		privateRegistry + `":{"username":"` + registryUser + `","password":"` + registryPass + `"}}}'
`
	if err := os.WriteFile(filepath.Join(binDir, "e2e-provider"), []byte(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	config = filepath.Join(binDir, "providers.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: e2e-provider
  matchImages: ["`+privateRegistry+`"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return config, binDir
}

// The project registry (hack/images.sh push, which `make e2e` runs) holds the test images, and
// the project containerd mirrors nodelet.local to it: a name the runtime has never held is
// pulled from there. The test pushes the test-helper image under a name of its own first.
func TestPullsTheTestImageFromTheProjectRegistry(t *testing.T) {
	const registry = "127.0.0.1:5000"
	tag := fmt.Sprintf("run%d", time.Now().UnixNano())
	image := "nodelet.local/e2e-pull/testhelper:" + tag
	waitAnswers(t, "the project registry (hack/images.sh push starts it)", http.DefaultClient, "http://"+registry+"/v2/", http.StatusOK)
	runTool(t, "regtool", "push", "-tar", repoPath("_output/images/testhelper.tar"), "-src", "nodelet.local/testhelper:v1",
		"-dst", registry+"/e2e-pull/testhelper:"+tag)
	t.Cleanup(func() {
		_ = exec.Command("ctr", "--address", strings.TrimPrefix(endpoint, "unix://"), "-n", "k8s.io", "images", "rm", image).Run()
	})
	c := joinCluster(t)
	c.waitReady(t)
	p := podSpec("mirrored", "exec sleep 3600")
	p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullIfNotPresent
	c.createPod(p)
	c.waitPodPhase("mirrored", v1.PodRunning, time.Minute)
	c.waitEvent("mirrored", "Pulled", fmt.Sprintf("Successfully pulled image %q in ", image), 10*time.Second)
}
