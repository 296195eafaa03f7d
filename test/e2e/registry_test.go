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
)

// The private registry: hack/registry serving the runtime's nodelet.local images on loopback
// with TLS (its CA is trusted by the project containerd's config) and basic auth.
const (
	privateRegistry = "127.0.0.1:5443"
	privateImage    = privateRegistry + "/busybox:1.36"
	registryUser    = "e2e"
	registryPass    = "s3cret"
	registryTLSDir  = "/var/lib/nodelet/registry-tls"
)

func startPrivateRegistry(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(filepath.Dir(nodeletBin), "registry"), "-addr", privateRegistry, "-host", "nodelet.local",
		"-user", registryUser+":"+registryPass, "-tls-dir", registryTLSDir, "-data", "/var/lib/nodelet/registry-private",
		"-socket", strings.TrimPrefix(endpoint, "unix://"))
	logPath := filepath.Join(t.TempDir(), "registry.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the registry (make tools builds it): %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if t.Failed() {
			raw, _ := os.ReadFile(logPath)
			t.Logf("registry log:\n%s", tail(string(raw), 3000))
		}
	})
	waitFor(t, 30*time.Second, "the private registry asking for credentials", func() (bool, string) {
		caPEM, err := os.ReadFile(filepath.Join(registryTLSDir, "ca.crt"))
		if err != nil {
			return false, err.Error()
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		resp, err := client.Get("https://" + privateRegistry + "/v2/")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized, resp.Status
	})
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
	waitFor(c.t, 60*time.Second, name+" refused its image", func() (bool, string) {
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
	t.Run("credential provider plugin", func(t *testing.T) {
		dir := t.TempDir()
		plugin := `#!/bin/sh
cat >/dev/null
echo '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","auth":{"` +
			privateRegistry + `":{"username":"` + registryUser + `","password":"` + registryPass + `"}}}'
`
		if err := os.WriteFile(filepath.Join(dir, "e2e-provider"), []byte(plugin), 0o755); err != nil {
			t.Fatal(err)
		}
		config := filepath.Join(dir, "providers.yaml")
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
		c := joinCluster(t, "--image-credential-provider-config="+config, "--image-credential-provider-bin-dir="+dir)
		c.waitReady(t)
		c.createPod(privatePod("plugin"))
		c.waitPodPhase("plugin", v1.PodRunning, 60*time.Second)
	})
}
