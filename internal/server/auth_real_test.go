//go:build real

package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

// TestRealAPIServerAuth runs the server with webhook authentication and authorization against a
// real kube-apiserver. NODELET_E2E_KUBECONFIG names an admin kubeconfig (client certificate of
// system:masters, signed by the cluster CA, which is also the kubelet client CA);
// NODELET_E2E_PKI (default /var/lib/nodelet-cp/pki) holds apiserver-kubelet-client.crt/.key.
// NODELET_E2E_NODE_KUBECONFIG, when set, is what the server itself uses for its reviews (a
// node's credentials, as a real nodelet); otherwise the admin's.
func TestRealAPIServerAuth(t *testing.T) {
	kubeconfig := os.Getenv("NODELET_E2E_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("NODELET_E2E_KUBECONFIG not set")
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	reviewClient := kubernetes.Interface(client)
	if nodeKubeconfig := os.Getenv("NODELET_E2E_NODE_KUBECONFIG"); nodeKubeconfig != "" {
		nodeCfg, err := clientcmd.BuildConfigFromFlags("", nodeKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if reviewClient, err = kubernetes.NewForConfig(nodeCfg); err != nil {
			t.Fatal(err)
		}
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, restCfg.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	admin, err := tls.X509KeyPair(restCfg.CertData, restCfg.KeyData)
	if err != nil {
		t.Fatalf("the admin kubeconfig must embed a client certificate: %v", err)
	}

	hostIP := firstHostIP(t)
	opts := Options{
		Address: hostIP.String(), HostIPs: []net.IP{hostIP}, NodeName: "nodelet-server-e2e", CertDir: t.TempDir(), Client: kubeclienttest.FromClientset(reviewClient),
		EnableDebuggingHandlers: true,
		Pods:                    func() []*v1.Pod { return nil },
	}
	opts.Authentication.X509.ClientCAFile = caFile
	opts.Authentication.Anonymous.Enabled = ptr.To(false)
	opts.Authentication.Webhook.Enabled = ptr.To(true)
	opts.Authentication.Webhook.CacheTTL.Duration = 2 * time.Minute
	opts.Authorization.Mode = "Webhook"
	opts.Authorization.Webhook.CacheAuthorizedTTL.Duration = 5 * time.Minute
	opts.Authorization.Webhook.CacheUnauthorizedTTL.Duration = time.Second // so a new binding shows quickly
	exec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "exec reached") })
	_, srv := start(t, opts, Handlers{Exec: exec})

	if got := do(t, srv.client(admin), "GET", srv.secureURL+"/pods", ""); got.code != http.StatusOK {
		t.Errorf("admin client cert (system:masters): %d %q, want 200", got.code, got.body)
	}
	if got := do(t, srv.client(), "GET", srv.secureURL+"/pods", ""); got.code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d %q, want 401", got.code, got.body)
	}
	if got := do(t, srv.client(), "GET", srv.secureURL+"/pods", "not-a-real-token"); got.code != http.StatusUnauthorized {
		t.Errorf("made-up token: %d %q, want 401", got.code, got.body)
	}

	pki := os.Getenv("NODELET_E2E_PKI")
	if pki == "" {
		pki = "/var/lib/nodelet-cp/pki"
	}
	if apiserver, err := tls.LoadX509KeyPair(filepath.Join(pki, "apiserver-kubelet-client.crt"), filepath.Join(pki, "apiserver-kubelet-client.key")); err != nil {
		t.Logf("skipping the API server's kubelet client check: %v", err)
	} else if got := do(t, srv.client(apiserver), "POST", srv.secureURL+"/exec/ns/pod/ctr", ""); got.code != http.StatusOK || got.body != "exec reached" {
		t.Errorf("API server kubelet client cert, POST /exec: %d %q, want 200", got.code, got.body)
	}

	checkServiceAccountToken(t, client, srv)
	checkAPIServerProxy(t, client, srv, opts.NodeName)
}

// checkAPIServerProxy registers an unschedulable Node pointing at the server and reads
// /api/v1/nodes/<node>/proxy/... through the API server, which dials the server with its kubelet
// client certificate.
func checkAPIServerProxy(t *testing.T, client kubernetes.Interface, srv *running, nodeName string) {
	ctx := t.Context()
	_, portStr, _ := strings.Cut(strings.TrimPrefix(srv.secureURL, "https://"), ":")
	var port int32
	fmt.Sscan(portStr, &port)
	node, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Spec:       v1.NodeSpec{Unschedulable: true},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	host, _, _ := strings.Cut(strings.TrimPrefix(srv.secureURL, "https://"), ":")
	// The control plane's node controllers write the new Node too (taints), so retry on conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: host}}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
		_, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if err != nil {
			if latest, getErr := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); getErr == nil {
				node = latest
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"pods", "healthz"} {
		body, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", nodeName, "proxy", path).DoRaw(ctx)
		if err != nil {
			t.Errorf("GET nodes/%s/proxy/%s through the API server: %v (%s)", nodeName, path, err, body)
			continue
		}
		if path == "healthz" && string(body) != "ok" {
			t.Errorf("proxied /healthz = %q, want ok", body)
		}
		if path == "pods" && !strings.Contains(string(body), `"kind":"PodList"`) {
			t.Errorf("proxied /pods = %q, want a PodList", body)
		}
	}
}

// firstHostIP is a global unicast IPv4 address of this machine: the API server refuses to proxy
// to loopback.
func firstHostIP(t *testing.T) net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagLoopback != 0 || iface.Flags&net.FlagUp == 0 || iface.Name == "nodelet0" {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.To4()
			}
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return nil
}

// checkServiceAccountToken: a ServiceAccount token without RBAC is forbidden; bound to
// system:kubelet-api-admin it is allowed once the denial has left the cache.
func checkServiceAccountToken(t *testing.T, client kubernetes.Interface, srv *running) {
	ctx := t.Context()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nodelet-server-e2e-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	sa, err := client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "caller"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := client.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa.Name,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	token := tr.Status.Token
	user := "system:serviceaccount:" + ns.Name + ":caller"

	got := do(t, srv.client(), "GET", srv.secureURL+"/pods", token)
	want := fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[pods proxy])\n", user)
	if got.code != http.StatusForbidden || got.body != want {
		t.Errorf("token without RBAC: %d %q, want 403 %q", got.code, got.body, want)
	}

	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns.Name + "-kubelet-api-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns.Name}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = do(t, srv.client(), "GET", srv.secureURL+"/pods", token)
		if got.code == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got.code != http.StatusOK || !strings.Contains(got.body, `"kind":"PodList"`) {
		t.Errorf("token bound to system:kubelet-api-admin: %d %q, want 200 PodList", got.code, got.body)
	}
	if got := do(t, srv.client(), "POST", srv.secureURL+"/exec/ns/pod/ctr", token); got.code != http.StatusOK {
		t.Errorf("bound token, POST /exec (nodes/proxy create): %d %q", got.code, got.body)
	}
}
