//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/nodelet/nodelet/internal/testutil"
)

// Secrets stay secret (issue 30, item 4): the kubelet API and the node page give nothing
// away to whoever may read them, and acting in a container needs create.

var secretsInsecure = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// secretsOpenAPI are the flags of a standalone kubelet API that lets anonymous requests do
// anything, on a free port.
func secretsOpenAPI(t *testing.T, port int) []string {
	return []string{fmt.Sprintf("--port=%d", port), "--anonymous-auth=true", "--authorization-mode=AlwaysAllow",
		"--authentication-token-webhook=false", "--cert-dir=" + t.TempDir()}
}

func secretsGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	code, body, err := tryGet(c, url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return code, body
}

// tryGet is a GET whose failure to connect is an answer, for polls of a server still starting.
func tryGet(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// /configz (and the -v=5 start log) show staticPodURLHeader's name, never its value, while
// the manifest server still receives the credential.
func TestSecretsConfigzMasksManifestURLHeader(t *testing.T) {
	const secret = "Bearer e2e-manifest-credential-7f3a"
	var mu sync.Mutex
	var received []string
	manifests := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusOK) // an empty body: no pods for this node
	}))
	defer manifests.Close()

	apiPort, roPort := freePort(t), freePort(t)
	n := startNodelet(t, append(secretsOpenAPI(t, apiPort), "--address=127.0.0.1", fmt.Sprintf("--read-only-port=%d", roPort),
		"--manifest-url="+manifests.URL, "--manifest-url-header=Authorization:"+secret, "--http-check-frequency=1s", "-v=5")...)

	configz := fmt.Sprintf("https://127.0.0.1:%d/configz", apiPort)
	var code int
	var body string
	testutil.WaitFor(t, 30*time.Second, "the kubelet API serving /configz", func() (bool, string) {
		resp, err := secretsInsecure.Get(configz)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return true, ""
	})
	var got struct {
		KubeletConfig struct {
			StaticPodURLHeader map[string][]string `json:"staticPodURLHeader"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
		t.Fatalf("/configz on the API port: %d %v\n%s", code, err, body)
	}
	if h := got.KubeletConfig.StaticPodURLHeader; len(h) != 1 || len(h["Authorization"]) != 1 || h["Authorization"][0] != "<masked>" {
		t.Errorf("/configz staticPodURLHeader = %q, want Authorization: [<masked>]", h)
	}
	if strings.Contains(body, "e2e-manifest-credential") {
		t.Errorf("/configz on the API port shows the manifest URL's credential:\n%s", body)
	}
	code, body = secretsGet(t, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/configz", roPort))
	if code != http.StatusNotFound || strings.Contains(body, "e2e-manifest-credential") {
		t.Errorf("/configz on the read-only port: %d %q, want 404 without the credential", code, body)
	}

	testutil.WaitFor(t, 30*time.Second, "the manifest server asked with the credential", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for _, got := range received {
			if got == secret {
				return true, ""
			}
		}
		return false, fmt.Sprintf("Authorization headers received: %q", received)
	})
	log := n.log()
	if !strings.Contains(log, "KubeletConfiguration") {
		t.Errorf("no KubeletConfiguration line at -v=5 in the log")
	}
	if strings.Contains(log, "e2e-manifest-credential") {
		t.Errorf("the log shows the manifest URL's credential:\n%s", tail(log, 4000))
	}
}

// The node page refuses a request for a foreign Host (a DNS-rebinding page's name, sent to
// our address) with 421, and serves its own address.
func TestSecretsNodePageRefusesForeignHost(t *testing.T) {
	port := freePort(t)
	startNodelet(t, fmt.Sprintf("--node-ui-port=%d", port))
	page := fmt.Sprintf("http://127.0.0.1:%d/ui/api/pods", port)
	waitHTTPOK(t, page)

	req, err := http.NewRequest("GET", page, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example:" + strconv.Itoa(port)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(body), `not to Host "evil.example:`) {
		t.Errorf("foreign Host: %d %q, want 421 naming the Host", resp.StatusCode, body)
	}
	if strings.Contains(string(body), `"pods":`) || strings.Contains(string(body), nodeName) {
		t.Errorf("the refusal carries the page's data: %q", body)
	}
	for _, host := range []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("localhost:%d", port), fmt.Sprintf("%s:%d", nodeName, port)} {
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host %q: %d, want 200", host, resp.StatusCode)
		}
	}
}

// A standalone API that lets anonymous requests do anything refuses to start on an address
// beyond loopback, naming the fields and the way out; it starts with the opt-in, or on loopback.
func TestSecretsAnonymousAlwaysAllowBeyondLoopbackRefused(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--root-dir=" + t.TempDir(), "--container-runtime-endpoint=" + endpoint, "--hostname-override=" + nodeName,
		"--healthz-port=0", "--fail-swap-on=false", "--address=0.0.0.0"}, secretsOpenAPI(t, port)...)
	out, err := exec.CommandContext(ctx, nodeletBin, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("nodelet ran with anonymous + AlwaysAllow on 0.0.0.0 instead of refusing:\n%s", tail(string(out), 3000))
	}
	if err == nil {
		t.Fatalf("nodelet exited 0 with anonymous + AlwaysAllow on 0.0.0.0:\n%s", out)
	}
	for _, want := range []string{"authentication.anonymous.enabled", "authorization.mode AlwaysAllow", "address 0.0.0.0",
		"--address=127.0.0.1", "--anonymous-auth=false", "--allow-insecure-anonymous-api"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}

	// Told explicitly: it serves everyone, as asked.
	n := startNodelet(t, append(secretsOpenAPI(t, port), "--address=0.0.0.0", "--allow-insecure-anonymous-api")...)
	secretsWaitAnonymousPods(t, port)
	n.stop(syscall.SIGTERM)
	// On loopback no opt-in is needed.
	n.args = append(n.args[:len(n.args)-2], "--address=127.0.0.1")
	n.start()
	secretsWaitAnonymousPods(t, port)
}

func secretsWaitAnonymousPods(t *testing.T, port int) {
	t.Helper()
	url := fmt.Sprintf("https://127.0.0.1:%d/pods", port)
	testutil.WaitFor(t, 30*time.Second, "anonymous GET /pods answered 200", func() (bool, string) {
		resp, err := secretsInsecure.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// exec over WebSocket (a GET upgrade) by a user who may only get nodes/proxy is refused:
// acting in a container is create. The same exec by a user who may create works.
func TestSecretsWebSocketExecNeedsCreate(t *testing.T) {
	c := joinCluster(t)
	c.createPod(podSpec("target", "exec sleep 3600"))
	reader := secretsServiceAccount(t, c, "reader", "get")
	operator := secretsServiceAccount(t, c, "operator", "get", "create")
	c.waitPodPhase("target", v1.PodRunning, 60*time.Second)

	// The reader's token and RBAC work: it may read the pods.
	if code, body := secretsDo(t, "GET", "https://127.0.0.1:10250/pods", reader, nil); code != http.StatusOK {
		t.Fatalf("reader GET /pods: %d %q, want 200", code, body)
	}
	execURL := "https://127.0.0.1:10250/exec/" + c.ns + "/target/main?command=echo&command=exec-by-websocket&stdout=true"
	upgrade := http.Header{
		"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Protocol": {"v5.channel.k8s.io"},
	}
	code, body := secretsDo(t, "GET", execURL, reader, upgrade)
	if code != http.StatusForbidden || !strings.Contains(body, "verb=create") || !strings.Contains(body, "subresource(s)=[proxy]") {
		t.Errorf("reader's WebSocket exec: %d %q, want 403 asking create on nodes/proxy", code, body)
	}
	if _, err := secretsWebSocketExec(execURL, reader); err == nil {
		t.Errorf("reader's WebSocket exec through client-go succeeded")
	}

	out, err := secretsWebSocketExec(execURL, operator)
	if err != nil || out != "exec-by-websocket\n" {
		t.Errorf("operator's WebSocket exec: %q, %v; want the command's output", out, err)
	}
}

// secretsServiceAccount creates a service account allowed verbs on nodes/proxy (a
// ClusterRole and binding, removed with the test), waits until the API server says so and
// returns a token of it.
func secretsServiceAccount(t *testing.T, c *cluster, name string, verbs ...string) string {
	t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := c.admin.CoreV1().ServiceAccounts(c.ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	roleName := c.ns + "-" + name
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: verbs}}}
	if _, err := c.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: roleName},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: roleName},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: c.ns}}}
	if _, err := c.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := criCtx()
		defer cancel()
		_ = c.admin.RbacV1().ClusterRoleBindings().Delete(ctx, roleName, metav1.DeleteOptions{})
		_ = c.admin.RbacV1().ClusterRoles().Delete(ctx, roleName, metav1.DeleteOptions{})
	})
	// nodelet caches a denial for 30 s: ask it only once the API server's RBAC has the binding.
	user := "system:serviceaccount:" + c.ns + ":" + name
	testutil.WaitFor(t, 30*time.Second, user+" allowed "+verbs[len(verbs)-1]+" nodes/proxy", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		sar, err := c.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + c.ns, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: verbs[len(verbs)-1], Resource: "nodes", Subresource: "proxy", Name: nodeName},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sar.Status.Allowed, sar.Status.Reason
	})
	return strings.TrimSpace(kubectl(t, "-n", c.ns, "create", "token", name))
}

func secretsDo(t *testing.T, method, url, token string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := secretsInsecure.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// secretsWebSocketExec runs an exec the way kubectl does over WebSocket (channel protocol v5,
// v4 if the runtime's streaming server has no v5), straight to the kubelet API.
func secretsWebSocketExec(rawURL, token string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	cfg := &rest.Config{Host: "https://" + u.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	ex, err := remotecommand.NewWebSocketExecutorForProtocols(cfg, "GET", rawURL, "v5.channel.k8s.io", "v4.channel.k8s.io")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), fmt.Errorf("%w (stderr %q)", err, stderr.String())
	}
	return stdout.String(), nil
}
