//go:build e2e

package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// verifyingAPIServer is where the test's second kube-apiserver listens.
const verifyingAPIServer = "127.0.0.1:6444"

// An API server that verifies kubelets (--kubelet-certificate-authority, the cluster CA that
// signs kubelet-serving certificates) refuses nodelet's self-signed certificate, and reaches
// the node once nodelet runs with serverTLSBootstrap and its serving CSR is approved; with a
// 3-minute signing duration nodelet renews that certificate through a new CSR, and kubectl logs
// and exec keep going through that server.
func TestAPIServerVerifiesTheRotatingServingCertificate(t *testing.T) {
	restartControllerManager(t, "NODELET_CP_SIGNING_DURATION=3m")
	t.Cleanup(func() { restartControllerManager(t) })
	c := joinCluster(t, "--cert-dir="+t.TempDir())
	c.waitReady(t)
	server := startVerifyingAPIServer(t)
	c.createPod(podSpec("verified", "echo reached-through-a-verified-kubelet; exec sleep 3600"))
	c.waitPodPhase("verified", v1.PodRunning, 60*time.Second)
	logs := func() (string, error) {
		out, err := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "--server", server,
			"-n", c.ns, "logs", "verified").CombinedOutput()
		return string(out), err
	}
	testutil.WaitFor(t, 30*time.Second, "the verifying API server refusing the self-signed certificate", func() (bool, string) {
		out, err := logs()
		return err != nil && strings.Contains(out, "x509"), out
	})

	c.stop(syscall.SIGTERM)
	c.args = append(c.args, "--rotate-server-certificates")
	c.start()
	approveServingCSR(t, c, 60*time.Second)
	first := waitServingIssued(t, nil)
	reachThrough(t, c, server, logs)

	t.Logf("serving certificate valid %v → %v; waiting for its renewal", first.NotBefore, first.NotAfter)
	approveServingCSR(t, c, 4*time.Minute)
	waitServingIssued(t, first)
	reachThrough(t, c, server, logs)
}

// reachThrough checks kubectl logs and exec of the "verified" pod through server.
func reachThrough(t *testing.T, c *cluster, server string, logs func() (string, error)) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, "kubectl logs through the verifying API server", func() (bool, string) {
		out, err := logs()
		return err == nil && strings.Contains(out, "reached-through-a-verified-kubelet"), out
	})
	out, err := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "--server", server,
		"-n", c.ns, "exec", "verified", "--", "echo", "exec-verified").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "exec-verified") {
		t.Fatalf("kubectl exec through the verifying API server: %v\n%s", err, out)
	}
}

// waitServingIssued waits until 10250 serves a CA-issued certificate other than previous
// (nil: any) and returns it.
func waitServingIssued(t *testing.T, previous *x509.Certificate) *x509.Certificate {
	t.Helper()
	var leaf *x509.Certificate
	testutil.WaitFor(t, 30*time.Second, "10250 serving the issued certificate", func() (bool, string) {
		conn, err := tls.Dial("tcp", "127.0.0.1:10250", &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		leaf = conn.ConnectionState().PeerCertificates[0]
		issued := leaf.Subject.CommonName == "system:node:"+nodeName && leaf.Issuer.CommonName != leaf.Subject.CommonName
		fresh := previous == nil || leaf.SerialNumber.Cmp(previous.SerialNumber) != 0
		return issued && fresh, "subject " + leaf.Subject.String() + " issuer " + leaf.Issuer.String() + " serial " + leaf.SerialNumber.String()
	})
	return leaf
}

// approveServingCSR approves the node's pending kubelet-serving CSR created since c started.
func approveServingCSR(t *testing.T, c *cluster, timeout time.Duration) {
	t.Helper()
	var csrName string
	testutil.WaitFor(t, timeout, "the node's pending kubelet-serving CSR", func() (bool, string) {
		out := kubectl(t, "get", "csr", "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.signerName} {.spec.username} {.metadata.creationTimestamp} {.status.certificate}{"\n"}{end}`)
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line) // a pending request has no certificate: 4 fields
			if len(f) != 4 || f[1] != "kubernetes.io/kubelet-serving" || f[2] != "system:node:"+nodeName {
				continue
			}
			if created, err := time.Parse(time.RFC3339, f[3]); err == nil && !created.Before(c.started.Truncate(time.Second)) {
				csrName = f[0]
				return true, ""
			}
		}
		return false, out
	})
	kubectl(t, "certificate", "approve", csrName)
}

// startVerifyingAPIServer runs a second kube-apiserver on the control plane's etcd with the
// running one's flags, but on verifyingAPIServer's port, with --kubelet-certificate-authority
// (the client CA, which also signs CSRs) and no endpoint reconciling (it must not advertise
// itself in the kubernetes Service). It returns its URL once it is ready.
func startVerifyingAPIServer(t *testing.T) string {
	t.Helper()
	args := runningAPIServerArgs(t)
	var out []string
	var ca string
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "--secure-port", "--audit-log-path", "--endpoint-reconciler-type":
			i++ // replaced below
			continue
		case "--client-ca-file":
			if i+1 < len(args) {
				ca = args[i+1]
			}
		}
		out = append(out, args[i])
	}
	if ca == "" {
		t.Fatalf("the running kube-apiserver has no --client-ca-file: %q", args)
	}
	_, port, _ := strings.Cut(verifyingAPIServer, ":")
	out = append(out, "--secure-port", port, "--kubelet-certificate-authority", ca,
		"--endpoint-reconciler-type", "none", "--audit-log-path", filepath.Join(t.TempDir(), "audit.log"))
	startLoggedProcess(t, "verifying kube-apiserver", args[0], out...)
	url := "https://" + verifyingAPIServer
	testutil.WaitFor(t, 90*time.Second, "the verifying kube-apiserver ready", func() (bool, string) {
		out, err := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "--server", url, "get", "--raw", "/readyz").CombinedOutput()
		return err == nil, string(out)
	})
	return url
}

// runningAPIServerArgs is the command line of the control plane's kube-apiserver.
func runningAPIServerArgs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("pgrep", "-f", "-o", "cp/bin/kube-apiserver ").Output()
	if err != nil {
		t.Fatalf("no running kube-apiserver (make cluster starts the control plane): %v", err)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%s/cmdline", strings.TrimSpace(string(out))))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range bytes.Split(bytes.TrimRight(raw, "\x00"), []byte{0}) {
		args = append(args, string(a))
	}
	return args
}
