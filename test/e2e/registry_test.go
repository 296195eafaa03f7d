//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
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

// The private registry: the CNCF distribution registry (test/registry, `make registries`) on
// loopback with TLS (a CA regtool writes, which the project containerd trusts for this host)
// and htpasswd auth, holding the busybox test image pushed from its archive.
const (
	privateRegistry = "127.0.0.1:5443"
	privateImage    = privateRegistry + "/busybox:1.36"
	registryUser    = "e2e"
	registryPass    = "s3cret"
	registryTLSDir  = "/var/lib/nodelet/registry-tls"
	// anonymousRegistry is a second distribution registry, plain http and no auth (containerd
	// speaks http to loopback hosts it has no configuration for).
	anonymousRegistry = "127.0.0.1:5001"
	// slowRegistry is hack/registry holding every request (-delay), for a pull cancelled midway.
	slowRegistry = "127.0.0.1:5002"
	busyboxName  = "nodelet.local/busybox:1.36" // pushed from hack/images.sh's archive
)

// toolBin is a binary `make tools registries` builds next to nodelet.
func toolBin(name string) string { return filepath.Join(filepath.Dir(nodeletBin), name) }

// startPrivateRegistry starts the private registry with the busybox image in it and returns
// its log.
func startPrivateRegistry(t *testing.T) string {
	t.Helper()
	runTool(t, "regtool", "tls", "-dir", registryTLSDir)
	dir := t.TempDir()
	htpasswd := filepath.Join(dir, "htpasswd")
	runTool(t, "regtool", "htpasswd", "-out", htpasswd, "-user", registryUser+":"+registryPass)
	logPath := startRegistryProcess(t, dir, privateRegistry, fmt.Sprintf(`  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: nodelet-e2e
    path: %s
`, filepath.Join(registryTLSDir, "tls.crt"), filepath.Join(registryTLSDir, "tls.key"), htpasswd))
	caPEM, err := os.ReadFile(filepath.Join(registryTLSDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	waitAnswers(t, "the private registry asking for credentials", client, "https://"+privateRegistry+"/v2/", http.StatusUnauthorized)
	runTool(t, "regtool", "push", "-tar", repoPath("_output/images/busybox.tar"), "-src", busyboxName, "-dst", privateImage,
		"-ca", filepath.Join(registryTLSDir, "ca.crt"), "-user", registryUser+":"+registryPass)
	return logPath
}

// startAnonymousRegistry starts a plain-http distribution registry with busybox in it and
// returns its log.
func startAnonymousRegistry(t *testing.T) string {
	t.Helper()
	logPath := startRegistryProcess(t, t.TempDir(), anonymousRegistry, "")
	waitAnswers(t, "the anonymous registry answering", http.DefaultClient, "http://"+anonymousRegistry+"/v2/", http.StatusOK)
	runTool(t, "regtool", "push", "-tar", repoPath("_output/images/busybox.tar"), "-src", busyboxName, "-dst", anonymousRegistry+"/busybox:1.36")
	return logPath
}

// waitAnswers waits until a GET of url through client answers with status want.
func waitAnswers(t *testing.T, what string, client *http.Client, url string, want int) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, what, func() (bool, string) {
		resp, err := client.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == want, resp.Status
	})
}

// startRegistryProcess runs the distribution registry on addr, storing under dir, with the
// http settings and sections in extra (TLS, auth), until the test ends; it returns its log,
// shown when the test fails.
func startRegistryProcess(t *testing.T, dir, addr, extra string) string {
	t.Helper()
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
`, filepath.Join(dir, "store"), addr) + extra
	configPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeImagesFrom(t, addr) })
	return startLoggedProcess(t, "registry", toolBin("distribution-registry"), "serve", configPath)
}

// startSlowRegistry runs hack/registry serving the runtime's nodelet.local images on
// slowRegistry, holding every manifest and blob request for delay; it returns the log.
func startSlowRegistry(t *testing.T, delay time.Duration) string {
	t.Helper()
	t.Cleanup(func() { removeImagesFrom(t, slowRegistry) })
	logPath := startLoggedProcess(t, "slow registry", toolBin("registry"), "-addr", slowRegistry, "-host", "nodelet.local",
		"-delay", delay.String(), "-data", "/var/lib/nodelet/registry-slow", "-socket", strings.TrimPrefix(endpoint, "unix://"))
	waitAnswers(t, "the slow registry answering", http.DefaultClient, "http://"+slowRegistry+"/v2/", http.StatusOK)
	return logPath
}

// startLoggedProcess starts bin with args, logging to a file of the test's, and stops it when
// the test ends (showing the log's tail if the test failed).
func startLoggedProcess(t *testing.T, what, bin string, args ...string) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "process.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s (make tools registries builds it): %v", what, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		logf.Close()
		if t.Failed() {
			raw, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", what, tail(string(raw), 3000))
		}
	})
	return logPath
}

// removeImagesFrom drops the runtime's image names under the registry at addr: a name such as
// 127.0.0.1:5001/busybox:1.36 left on the shared busybox image would be the name containerd
// reports for later containers of that image (it reports an image's first name).
func removeImagesFrom(t *testing.T, addr string) {
	t.Helper()
	ctr := []string{"--address", strings.TrimPrefix(endpoint, "unix://"), "-n", "k8s.io", "images"}
	out, err := exec.Command("ctr", append(ctr, "ls", "-q")...).Output()
	if err != nil {
		t.Logf("listing images to remove %s's: %v", addr, err)
		return
	}
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, addr+"/") {
			if out, err := exec.Command("ctr", append(ctr, "rm", name)...).CombinedOutput(); err != nil {
				t.Logf("removing image %s: %v: %s", name, err, out)
			}
		}
	}
}

// runTool runs one of the registry tools and fails the test with its output when it fails.
func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(toolBin(name), args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func dockerConfigJSON() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPass))
	return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, privateRegistry, auth))
}

// privatePod pulls the private image every time (imagePullPolicy Always), so each pod proves
// its own credentials.
func privatePod(name string, secrets ...string) *v1.Pod {
	p := podSpec(name, "exec sleep 3600")
	p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = privateImage, v1.PullAlways
	for _, s := range secrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return p
}

// waitPullRefused waits until the pod's container is waiting on ErrImagePull/ImagePullBackOff.
func (c *cluster) waitPullRefused(name string) {
	c.t.Helper()
	testutil.WaitFor(c.t, 60*time.Second, name+" refused its image", func() (bool, string) {
		p, err := c.getPod(name)
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, fmt.Sprint(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff", w.Reason + " " + w.Message
	})
}

// A pod's imagePullSecret opens the private registry; without one the pull is refused.
func TestPrivateRegistryNeedsThePodsSecret(t *testing.T) {
	startPrivateRegistry(t)
	c := joinCluster(t)
	c.waitReady(t)
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: dockerConfigJSON()}}
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := c.admin.CoreV1().Secrets(c.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.createPod(privatePod("anonymous"))
	c.createPod(privatePod("with-secret", "regcred"))
	c.waitPodPhase("with-secret", v1.PodRunning, 60*time.Second)
	c.waitPullRefused("anonymous")
}

// Without pod secrets, the node's own docker config (config.json in the root dir) or a
// credential provider plugin gives the credentials.
func TestNodeCredentialsOpenThePrivateRegistry(t *testing.T) {
	startPrivateRegistry(t)
	t.Run("root dir config.json", func(t *testing.T) {
		c := joinCluster(t)
		if err := os.WriteFile(filepath.Join(c.rootDir, "config.json"), dockerConfigJSON(), 0o600); err != nil {
			t.Fatal(err)
		}
		c.waitReady(t)
		c.createPod(privatePod("node-config"))
		c.waitPodPhase("node-config", v1.PodRunning, 60*time.Second)
	})
	t.Run("credential provider plugin, run once per cache period", func(t *testing.T) {
		calls := filepath.Join(t.TempDir(), "calls")
		config, binDir := credentialPlugin(t, calls)
		c := joinCluster(t, "--image-credential-provider-config="+config, "--image-credential-provider-bin-dir="+binDir)
		c.waitReady(t)
		for _, name := range []string{"plugin-1", "plugin-2"} { // both pull (Always) within the 1m cache period
			c.createPod(privatePod(name))
			c.waitPodPhase(name, v1.PodRunning, 60*time.Second)
		}
		raw, _ := os.ReadFile(calls)
		if n := strings.Count(string(raw), "called"); n != 1 {
			t.Fatalf("the plugin ran %d times for two pulls within its cache period, want 1", n)
		}
	})
}
