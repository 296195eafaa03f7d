//go:build guestvm

package inguest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/internal/testutil"
)

const (
	// The payload's control plane (hack/guest.sh): etcd and kube-apiserver v1.33.4 from the
	// host, the certificates and kubeconfigs the host's `certs` made for 127.0.0.1:6443.
	cpDir = "/payload/cp"
	// The address nodes report: the guest has no network (-nic none), and the kubelets
	// refuse a loopback node IP, so a dummy interface carries it.
	guestNodeIP = "10.99.0.2"
	// Under emulation the API server takes minutes to be ready.
	cpTimeout = 8 * time.Minute
)

// adminToken is a bearer token of system:masters the API server accepts (the upstream node
// suite authenticates with one, as on the host); startControlPlane makes a fresh one.
var adminToken string

// startControlPlane runs etcd and kube-apiserver in the guest (no scheduler: the tests set
// spec.nodeName; no controller manager: nothing here needs one) and returns an admin client
// and the node's kubeconfig. Cleanup stops them.
func startControlPlane(t *testing.T) (*kubernetes.Clientset, string) {
	t.Helper()
	dummyNodeIP(t)
	dir := t.TempDir()
	pki := filepath.Join(cpDir, "pki")
	tokens := adminTokenFile(t, dir)
	start := time.Now()
	cpDaemon(t, "etcd", filepath.Join(cpDir, "bin/etcd"), "--name=guest", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=guest=http://127.0.0.1:2380")
	// As hack/control-plane.sh, less what needs a controller manager (ServiceAccount
	// admission) or the host.
	cpDaemon(t, "kube-apiserver", filepath.Join(cpDir, "bin/kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379", "--bind-address=127.0.0.1", "--advertise-address="+guestNodeIP,
		"--secure-port=6443", "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=Node,RBAC",
		"--client-ca-file="+pki+"/ca.crt", "--tls-cert-file="+pki+"/apiserver.crt",
		"--tls-private-key-file="+pki+"/apiserver.key",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki+"/sa.pub", "--service-account-signing-key-file="+pki+"/sa.key",
		"--kubelet-client-certificate="+pki+"/apiserver-kubelet-client.crt",
		"--kubelet-client-key="+pki+"/apiserver-kubelet-client.key",
		// The node's Hostname address (guest-node) resolves nowhere in the guest, and the
		// node proxy (/configz, exec) refuses an address it cannot look up: the IP first.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--enable-admission-plugins=NodeRestriction",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition", "--profiling=false",
		"--token-auth-file="+tokens)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cpDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	testutil.WaitFor(t, cpTimeout, "the API server's /readyz", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		return string(b) == "ok", string(b)
	})
	// The default namespace appears shortly after /readyz.
	testutil.WaitFor(t, time.Minute, "the default namespace", func() (bool, string) {
		_, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("etcd and kube-apiserver ready in %v", time.Since(start).Round(time.Second))
	return cs, filepath.Join(cpDir, "node-"+nodeName+".kubeconfig")
}

// adminTokenFile writes the API server's token file in dir: one random token of
// system:masters, kept in adminToken.
func adminTokenFile(t *testing.T, dir string) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	adminToken = hex.EncodeToString(b)
	path := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(path, []byte(adminToken+",guest-admin,guest-admin,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// cpDaemon starts one control-plane process, logging to /var/tmp (copied to the results),
// and stops it at cleanup.
func cpDaemon(t *testing.T, name, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create("/var/tmp/" + subject + "-guest-cp-" + name + ".log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// dummyNodeIP gives the guest a non-loopback address and a default route for the kubelets'
// node address (once per boot).
func dummyNodeIP(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/class/net/guest0"); err == nil {
		return
	}
	for _, args := range [][]string{
		{"link", "add", "guest0", "type", "dummy"},
		{"addr", "add", guestNodeIP + "/24", "dev", "guest0"},
		{"link", "set", "guest0", "up"},
		{"route", "add", "default", "dev", "guest0"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
}
