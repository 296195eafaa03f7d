//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// bootstrapFiles are a node's --bootstrap-kubeconfig (the control plane's bootstrap token),
// --kubeconfig (not there yet) and --cert-dir, in a fresh directory.
type bootstrapFiles struct {
	bootstrap, kubeconfig, certDir string
}

func newBootstrapFiles(t *testing.T) bootstrapFiles {
	t.Helper()
	dir := t.TempDir()
	f := bootstrapFiles{bootstrap: filepath.Join(dir, "bootstrap.kubeconfig"),
		kubeconfig: filepath.Join(dir, "kubelet.kubeconfig"), certDir: filepath.Join(dir, "pki")}
	runScript(t, repoPath(controlPlane), "bootstrap-kubeconfig", f.bootstrap)
	return f
}

func (f bootstrapFiles) args() []string {
	return []string{"--kubeconfig=" + f.kubeconfig, "--bootstrap-kubeconfig=" + f.bootstrap, "--cert-dir=" + f.certDir}
}

func (f bootstrapFiles) current() string {
	return filepath.Join(f.certDir, "kubelet-client-current.pem")
}
func (f bootstrapFiles) pendingKey() string {
	return filepath.Join(f.certDir, "kubelet-client.key.tmp")
}

// A control-plane node's API server is one of its static pods: with the API server down and
// no client certificate yet, nodelet still starts (healthz) and runs the static pod; TLS
// bootstrap waits in the background. Once the API server is back the node gets its
// certificate, registers, makes the mirror pod, and posts the events it recorded meanwhile.
func TestTLSBootstrapWhileTheAPIServerIsDownRunsStaticPods(t *testing.T) {
	f := newBootstrapFiles(t)
	runScript(t, repoPath(controlPlane), "stop-apiserver")
	apiDown := true
	t.Cleanup(func() {
		if apiDown {
			runScript(t, repoPath(controlPlane), "start-apiserver")
		}
	})
	// A static pod's mirror is made at its next sync after the node registered: a 10 s sync
	// period (1 min by default) keeps the test short.
	n := startNodelet(t, append(f.args(), "--client-ca-file="+clusterCA, "--sync-frequency=10s")...)
	n.writeManifest("cp.yaml", podYAML("bootstrap-static", "Always", "exec sleep 3600"))
	before := waitRunning(t, "bootstrap-static", "main", 60*time.Second)
	if _, err := os.Stat(f.current()); !os.IsNotExist(err) {
		t.Fatalf("a client certificate while the API server is down? %v", err)
	}
	if out, err := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "get", "--raw", "/readyz").CombinedOutput(); err == nil {
		t.Fatalf("the API server answers during the outage: %s", out)
	}

	runScript(t, repoPath(controlPlane), "start-apiserver")
	apiDown = false
	back := time.Now()
	c := &cluster{nodelet: n, admin: adminClient(t), started: back}
	// The bootstrap request is retried with a back-off of at most 32 s.
	testutil.WaitFor(t, 90*time.Second, "node Ready after TLS bootstrap", func() (bool, string) {
		node, err := c.admin.CoreV1().Nodes().Get(t.Context(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(node) && !readySince(node).Before(back.Truncate(time.Second)), fmt.Sprint(node.Status.Conditions)
	})
	t.Logf("node Ready %v after the API server came back", time.Since(back).Round(time.Second))
	mirror := "bootstrap-static-" + nodeName
	testutil.WaitFor(t, 90*time.Second, "the mirror pod Running", func() (bool, string) {
		p, err := c.admin.CoreV1().Pods("default").Get(t.Context(), mirror, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
	})
	t.Logf("mirror pod Running %v after the API server came back", time.Since(back).Round(time.Second))
	if after := runningContainer(t, "bootstrap-static", "main"); after == nil || after.Id != before.Id {
		t.Fatal("the static pod's container was replaced when the node joined")
	}
	// Recorded while the API server was down, posted once the node had its identity.
	testutil.WaitFor(t, 60*time.Second, "the static pod's Started event in the API", func() (bool, string) {
		events, err := c.admin.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + mirror + ",reason=Started"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.FirstTimestamp.Time.Before(back.Truncate(time.Second)) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Started events, none from before the API server came back", len(events.Items))
	})
}

// A client certificate that expires while nodelet runs (rotation off; the controller manager
// signs for 30 s) is replaced by a new TLS bootstrap, and the node keeps heartbeating with
// it: its Lease is renewed after the first certificate's NotAfter.
func TestExpiredClientCertificateBootstrapsAgain(t *testing.T) {
	restartControllerManager(t, "NODELET_CP_SIGNING_DURATION=30s")
	t.Cleanup(func() { restartControllerManager(t) })
	f := newBootstrapFiles(t)
	c := joinCluster(t, append(f.args(), "--rotate-certificates=false")...)
	testutil.WaitFor(t, 30*time.Second, "a bootstrapped client certificate", func() (bool, string) {
		_, err := os.Stat(f.current())
		return err == nil, fmt.Sprint(err)
	})
	first := readLeaf(t, f.current())
	if life := time.Until(first.NotAfter); life > 2*time.Minute {
		t.Fatalf("certificate valid for %v more: the short signing duration is not in effect", life)
	}
	t.Logf("first client certificate expires %v", first.NotAfter)
	testutil.WaitFor(t, time.Until(first.NotAfter)+60*time.Second, "a new client certificate after the first expired", func() (bool, string) {
		cur := readLeaf(t, f.current())
		return cur.SerialNumber.Cmp(first.SerialNumber) != 0 && cur.NotAfter.After(first.NotAfter), "serial " + cur.SerialNumber.String()
	})
	testutil.WaitFor(t, 40*time.Second, "a Lease renewal after the first certificate expired", func() (bool, string) {
		lease := kubectl(t, "-n", "kube-node-lease", "get", "lease", nodeName, "-o", "jsonpath={.spec.renewTime}")
		renewed, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(lease))
		return err == nil && renewed.After(first.NotAfter), lease
	})
	c.createPod(podSpec("after-expiry", "exec sleep 3600"))
	c.waitPodPhase("after-expiry", v1.PodRunning, 60*time.Second)
	if !strings.Contains(c.log(), "the client certificate expired") {
		t.Error("nodelet did not log why it bootstrapped again")
	}
}

// A restart while the node's CSR is pending (nothing approves it automatically here) keeps
// the key in --cert-dir and waits for the same request; approved after the restart, it gives
// the node a certificate for that key, and no second request is made.
func TestRestartWhileTheCSRIsPendingKeepsTheRequest(t *testing.T) {
	restartControllerManager(t, "NODELET_CP_CONTROLLERS=*,-csrapproving")
	t.Cleanup(func() { restartControllerManager(t) })
	f := newBootstrapFiles(t)
	c := joinCluster(t, f.args()...)
	var csr string
	testutil.WaitFor(t, 60*time.Second, "the node's pending client CSR", func() (bool, string) {
		names := nodeClientCSRs(t, c.started)
		if len(names) == 1 {
			csr = names[0]
		}
		return csr != "", fmt.Sprint(names)
	})
	key, err := os.ReadFile(f.pendingKey())
	if err != nil {
		t.Fatalf("the pending request's key is not kept: %v", err)
	}

	c.stop(syscall.SIGTERM)
	c.start()
	testutil.WaitFor(t, 60*time.Second, "the restarted nodelet finding its request", func() (bool, string) {
		return strings.Contains(c.log(), "Found the certificate signing request made with the kept key"), ""
	})
	if again, err := os.ReadFile(f.pendingKey()); err != nil || string(again) != string(key) {
		t.Fatalf("the kept key changed across the restart (%v)", err)
	}
	kubectl(t, "certificate", "approve", csr)
	testutil.WaitFor(t, 60*time.Second, "node Ready with the approved certificate", func() (bool, string) {
		node, err := c.admin.CoreV1().Nodes().Get(t.Context(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(node) && !readySince(node).Before(c.started.Truncate(time.Second)), fmt.Sprint(node.Status.Conditions)
	})
	block, _ := pem.Decode(key)
	priv, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if pub, ok := readLeaf(t, f.current()).PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&priv.PublicKey) {
		t.Error("the node's certificate is not for the key kept across the restart")
	}
	if names := nodeClientCSRs(t, c.started); len(names) != 1 {
		t.Errorf("client CSRs since the start: %v, want the one", names)
	}
	if _, err := os.Stat(f.pendingKey()); !os.IsNotExist(err) {
		t.Errorf("the pending key is still there after the certificate was stored: %v", err)
	}
}

// nodeClientCSRs names the kubelet client CSRs made with the bootstrap token since since.
func nodeClientCSRs(t *testing.T, since time.Time) []string {
	t.Helper()
	out := kubectl(t, "get", "csr", "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.signerName} {.spec.username} {.metadata.creationTimestamp}{"\n"}{end}`)
	var names []string
	for _, line := range strings.Split(out, "\n") {
		fl := strings.Fields(line)
		if len(fl) != 4 || fl[1] != "kubernetes.io/kube-apiserver-client-kubelet" || !strings.HasPrefix(fl[2], "system:bootstrap:") {
			continue
		}
		if created, err := time.Parse(time.RFC3339, fl[3]); err == nil && !created.Before(since.Truncate(time.Second)) {
			names = append(names, fl[0])
		}
	}
	return names
}
