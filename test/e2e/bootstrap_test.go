//go:build e2e

package e2e

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A node that has only a bootstrap token joins by TLS bootstrap: its CSR is approved by the
// controller manager's csrapproving controller, the certificate lands in --cert-dir behind
// kubelet-client-current.pem and --kubeconfig is written. With rotateCertificates and a short
// signing duration the certificate is renewed before it expires, and the node keeps working
// with the new one (without a restart).
func TestTLSBootstrapJoinsAndRotates(t *testing.T) {
	restartControllerManager(t, "NODELET_CP_SIGNING_DURATION=3m")
	t.Cleanup(func() { restartControllerManager(t) })
	dir := t.TempDir()
	bootstrap := filepath.Join(dir, "bootstrap.kubeconfig")
	runScript(t, repoPath(controlPlane), "bootstrap-kubeconfig", bootstrap)
	kubeconfig, certDir := filepath.Join(dir, "kubelet.kubeconfig"), filepath.Join(dir, "pki")

	c := joinCluster(t, "--kubeconfig="+kubeconfig, "--bootstrap-kubeconfig="+bootstrap, "--cert-dir="+certDir, "--rotate-certificates")
	c.waitReady(t)
	current := filepath.Join(certDir, "kubelet-client-current.pem")
	first := readLeaf(t, current)
	if first.Subject.CommonName != "system:node:"+nodeName || first.Subject.Organization[0] != "system:nodes" {
		t.Fatalf("bootstrapped certificate subject %v", first.Subject)
	}
	if raw, err := os.ReadFile(kubeconfig); err != nil || !strings.Contains(string(raw), current) {
		t.Fatalf("kubeconfig %s does not point at %s: %v\n%s", kubeconfig, current, err, raw)
	}
	t.Logf("bootstrapped certificate valid %v → %v", first.NotBefore, first.NotAfter)

	testutil.WaitFor(t, 4*time.Minute, "the client certificate renewed", func() (bool, string) {
		renewed := readLeaf(t, current)
		return renewed.SerialNumber.Cmp(first.SerialNumber) != 0, "serial " + renewed.SerialNumber.String()
	})
	rotatedAt := time.Now()
	// The node still acts with the new identity: it runs a new pod and keeps renewing its Lease.
	c.createPod(podSpec("after-rotation", "exec sleep 3600"))
	c.waitPodPhase("after-rotation", v1.PodRunning, 60*time.Second)
	testutil.WaitFor(t, 30*time.Second, "a Lease renewal after the rotation", func() (bool, string) {
		lease := kubectl(t, "-n", "kube-node-lease", "get", "lease", nodeName, "-o", "jsonpath={.spec.renewTime}")
		renewed, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(lease))
		return err == nil && renewed.After(rotatedAt), lease
	})
	if !strings.Contains(c.log(), "Certificate rotated\" certificate=\"client\"") {
		t.Error("nodelet did not log the rotation")
	}
}

func readLeaf(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return cert
		}
	}
	t.Fatalf("%s holds no certificate", path)
	return nil
}

func restartControllerManager(t *testing.T, env ...string) {
	t.Helper()
	cmd := exec.Command(repoPath(controlPlane), "restart-controller-manager")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restart-controller-manager: %v\n%s", err, out)
	}
}

// serverTLSBootstrap: the kubelet API's serving certificate comes from a kubelet-serving CSR,
// which nothing approves automatically (as in upstream clusters); once approved, :10250 serves
// it, and the API server still reaches the node for logs.
func TestServingCertificateFromACSR(t *testing.T) {
	certDir := t.TempDir()
	c := joinCluster(t, "--rotate-server-certificates", "--cert-dir="+certDir)
	c.waitReady(t)
	approveServingCSR(t, c, 30*time.Second)
	waitServingIssued(t, nil)
	c.createPod(podSpec("logs", "echo served-through-csr; exec sleep 3600"))
	c.waitPodPhase("logs", v1.PodRunning, 60*time.Second)
	testutil.WaitFor(t, 20*time.Second, "kubectl logs through the API server", func() (bool, string) {
		out, err := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "-n", c.ns, "logs", "logs").CombinedOutput()
		return err == nil && strings.Contains(string(out), "served-through-csr"), string(out)
	})
}
