//go:build real

package streaming

// Tests against a real CRI runtime (containerd). They run only when NODELET_E2E_CRI names its
// endpoint:
//
//	NODELET_E2E_CRI=unix:///run/nodelet/containerd/containerd.sock go test -tags real ./internal/server/streaming -run Real
//
// They need root and the images nodelet.local/busybox:1.36, nodelet.local/testhelper:v1 and
// registry.k8s.io/pause:3.10 in the runtime.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/flowcontrol"
	utilexec "k8s.io/utils/exec"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
	"github.com/nodelet/nodelet/internal/testutil"
)

// realEnv is a pod running on the real runtime with the streaming handlers served over HTTP.
type realEnv struct {
	pod *v1.Pod
	srv *httptest.Server
}

func startRealPod(t *testing.T) *realEnv {
	t.Helper()
	client := testutil.RealCRI(t)
	rm, err := kuberuntime.NewManager(kuberuntime.Options{
		CRI: client, RootDir: t.TempDir(), PodLogsDir: "/var/log/pods",
		Recorder: record.NewFakeRecorder(1000), NodeName: "e2e-streaming",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	grace := int64(1)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stream-" + id, Namespace: "default", UID: types.UID("e2e-stream-" + id)},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{
				{Name: "shell", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"sh", "-c", "while true; do echo tick; sleep 1; done"}},
				{Name: "web", Image: "nodelet.local/testhelper:v1", ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"/testhelper"}, Args: []string{"serve", "--port", "8080"}},
			},
		},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rm.KillPod(ctx, p, nil, 0); err != nil {
			t.Logf("KillPod: %v", err)
		}
		if err := rm.RemovePod(ctx, p.UID); err != nil {
			t.Logf("RemovePod: %v", err)
		}
	})

	ctx := context.Background()
	backoff := flowcontrol.NewBackOff(10*time.Second, 300*time.Second)
	testutil.WaitFor(t, 60*time.Second, "the pod running", func() (bool, string) {
		status, err := rm.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		shell, web := status.FindContainer("shell"), status.FindContainer("web")
		if shell != nil && shell.State == container.StateRunning && web != nil && web.State == container.StateRunning {
			return true, ""
		}
		if res := rm.SyncPod(ctx, p, status, backoff); res.Err != nil {
			t.Fatalf("SyncPod: %v", res.Err)
		}
		return false, fmt.Sprintf("%+v", status)
	})

	pods := pod.NewManager()
	pods.Set(p)
	h := New(Deps{Pods: pods, PodStatus: rm.GetPodStatus, Runtime: client})
	srv := httptest.NewServer(mux(h))
	t.Cleanup(srv.Close)
	return &realEnv{pod: p, srv: srv}
}

// url builds an API URL for kind (exec, attach, run, portForward) on this pod.
func (e *realEnv) url(kind, container string, query url.Values) string {
	u := e.srv.URL + "/" + kind + "/" + e.pod.Namespace + "/" + e.pod.Name
	if container != "" {
		u += "/" + container
	}
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// TestRealStreaming runs one pod on the runtime and reaches it through every endpoint.
func TestRealStreaming(t *testing.T) {
	e := startRealPod(t)
	t.Run("ExecOverSPDY", func(t *testing.T) { testRealExecOverSPDY(t, e) })
	t.Run("AttachOverSPDY", func(t *testing.T) { testRealAttachOverSPDY(t, e) })
	t.Run("PortForwardOverSPDY", func(t *testing.T) { testRealPortForwardOverSPDY(t, e) })
	t.Run("Run", func(t *testing.T) { testRealRun(t, e) })
	t.Run("ExecOverWebSocket", func(t *testing.T) { testRealExecOverWebSocket(t, e) })
}

func (e *realEnv) parsedURL(t *testing.T, kind, container string, query url.Values) *url.URL {
	u, err := url.Parse(e.url(kind, container, query))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func execQuery(stdin, tty bool, cmd ...string) url.Values {
	q := url.Values{"command": cmd, "output": {"1"}}
	if stdin {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	return q
}

// spdyExec runs a command the way kubectl exec (through the API server) reaches the kubelet.
func (e *realEnv) spdyExec(t *testing.T, q url.Values, stdin io.Reader) (string, string, error) {
	t.Helper()
	exec, err := remotecommand.NewSPDYExecutor(&restclient.Config{Host: e.srv.URL}, http.MethodPost, e.parsedURL(t, "exec", "shell", q))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Tty: q.Get("tty") == "1"}
	if !opts.Tty {
		opts.Stderr = &stderr
	}
	err = exec.StreamWithContext(ctx, opts)
	return stdout.String(), stderr.String(), err
}

func testRealExecOverSPDY(t *testing.T, e *realEnv) {

	stdout, stderr, err := e.spdyExec(t, execQuery(false, false, "sh", "-c", "echo hi; echo oops >&2"), nil)
	if err != nil || stdout != "hi\n" || stderr != "oops\n" {
		t.Errorf("echo: stdout %q stderr %q err %v", stdout, stderr, err)
	}

	_, _, err = e.spdyExec(t, execQuery(false, false, "sh", "-c", "exit 3"), nil)
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 3 {
		t.Errorf("exit 3: err %v (%T)", err, err)
	}

	stdout, _, err = e.spdyExec(t, execQuery(true, false, "cat"), strings.NewReader("round\ntrip\n"))
	if err != nil || stdout != "round\ntrip\n" {
		t.Errorf("cat: stdout %q err %v", stdout, err)
	}

	stdout, _, err = e.spdyExec(t, execQuery(false, true, "tty"), nil)
	if err != nil || !strings.HasPrefix(stdout, "/dev/pts/") {
		t.Errorf("tty: stdout %q err %v", stdout, err)
	}
}

// lineWatcher is a writer that reports when a line containing want has been written.
type lineWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func testRealAttachOverSPDY(t *testing.T, e *realEnv) {
	q := url.Values{"output": {"1"}, "error": {"1"}}
	exec, err := remotecommand.NewSPDYExecutor(&restclient.Config{Host: e.srv.URL}, http.MethodPost, e.parsedURL(t, "attach", "shell", q))
	if err != nil {
		t.Fatal(err)
	}
	out := &lineWatcher{want: "tick\n", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: io.Discard})
	}()
	select {
	case <-out.seen:
	case err := <-done:
		t.Fatalf("attach ended before any output: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no output from the attached container in 20s")
	}
	cancel()
	<-done
}

func testRealPortForwardOverSPDY(t *testing.T, e *realEnv) {
	transport, upgrader, err := spdy.RoundTripperFor(&restclient.Config{Host: e.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	target := e.parsedURL(t, "portForward", "", nil)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, target)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	defer func() { close(stop); <-done }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward failed: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("port-forward not ready in 20s")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("ports %v, %v", ports, err)
	}
	for i := range 2 { // two connections over the one forwarding session
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(int(ports[0].Local)) + "/")
		if err != nil {
			t.Fatalf("GET %d through the forward: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), e.pod.Name) {
			t.Errorf("GET %d through the forward: %d %q, want the pod's hostname", i, resp.StatusCode, body)
		}
	}
}

func testRealRun(t *testing.T, e *realEnv) {
	resp, err := http.Post(e.url("run", "shell", url.Values{"cmd": {"cat /etc/hostname"}}), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != e.pod.Name {
		t.Errorf("run cat /etc/hostname: %d %q", resp.StatusCode, body)
	}
	resp, err = http.Post(e.url("run", "shell", url.Values{"cmd": {"cat /nope"}}), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "exited with 1") {
		t.Errorf("run cat /nope: %d %q", resp.StatusCode, body)
	}
}

// testRealExecOverWebSocket uses client-go's WebSocket executor straight against nodelet (no
// API server in between). containerd 1.6 speaks the WebSocket protocols up to
// v4.channel.k8s.io, which nodelet passes through; v5 (kubectl 1.30+'s default) exists only
// at the API server, which talks SPDY to the kubelet, so a direct v5 request is refused.
func testRealExecOverWebSocket(t *testing.T, e *realEnv) {
	wsExec := func(protocol string) (string, error) {
		exec, err := remotecommand.NewWebSocketExecutorForProtocols(&restclient.Config{Host: e.srv.URL}, http.MethodGet,
			e.url("exec", "shell", execQuery(false, false, "sh", "-c", "echo hi; exit 4")), protocol)
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: io.Discard})
		return stdout.String(), err
	}
	stdout, err := wsExec(remotecommandconsts.StreamProtocolV4Name)
	var exitErr utilexec.ExitError
	if stdout != "hi\n" || !errors.As(err, &exitErr) || exitErr.ExitStatus() != 4 {
		t.Errorf("WebSocket v4: stdout %q err %v, want \"hi\\n\" and exit status 4", stdout, err)
	}
	_, err = wsExec(remotecommandconsts.StreamProtocolV5Name)
	t.Logf("WebSocket v5 straight to the runtime: %v", err)
}
