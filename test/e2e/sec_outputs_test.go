//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// What a pod can make nodelet do with what it answers (issue 40, items 1 and 2): print
// megabytes from a failing exec probe, and redirect a lifecycle hook's GET off the pod.

// noisyProbePodYAML is a pod of two containers whose exec readiness probes print mb MB of
// text, a different first line each time (so no two events are repeats), and fail every second.
func noisyProbePodYAML(name string, mb int) string {
	probe := fmt.Sprintf(`echo "run $RANDOM$RANDOM"; yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c %d; exit 1`, mb<<20)
	container := func(c string) string {
		return fmt.Sprintf(`  - name: %s
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    readinessProbe:
      exec:
        command: ["sh", "-c", %q]
      periodSeconds: 1
      timeoutSeconds: 5
`, c, busybox, probe)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 2
  containers:
%s%s`, name, container("noisy-a"), container("noisy-b"))
}

// rssKiB reads VmRSS of pid from /proc.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// uiEvent is the part of a node page event the tests read.
type uiEvent struct {
	Reason  string `json:"reason"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

func uiEvents(t *testing.T, port int) []uiEvent {
	t.Helper()
	var v struct {
		Events []uiEvent `json:"events"`
	}
	if err := getJSON(t, fmt.Sprintf("http://127.0.0.1:%d/ui/api/events", port), &v); err != nil {
		t.Fatalf("node page events: %v", err)
	}
	return v.Events
}

// Two containers whose failing exec probes print 2 MiB each every second for a minute:
// nodelet's RSS stays within a bound far below what keeping the outputs would take (the
// old code kept every distinct Unhealthy message whole: hundreds of MiB here), and the
// Unhealthy events carry at most the capped output.
func TestNoisyExecProbeOutputIsBounded(t *testing.T) {
	port := freePort(t)
	n := startNodelet(t, fmt.Sprintf("--node-ui-port=%d", port))
	n.writeManifest("noisy.yaml", noisyProbePodYAML("noisy", 2))
	waitRunning(t, "noisy", "noisy-a", 60*time.Second)
	waitRunning(t, "noisy", "noisy-b", 60*time.Second)
	pid := n.cmd.Process.Pid
	testutil.WaitFor(t, 60*time.Second, "Unhealthy events from both containers", func() (bool, string) {
		seen := map[string]bool{}
		for _, e := range uiEvents(t, port) {
			if e.Reason == "Unhealthy" && strings.HasPrefix(e.Name, "noisy-") {
				seen[e.Message[:min(len(e.Message), 40)]] = true
			}
		}
		return len(seen) >= 2, fmt.Sprintf("%d distinct Unhealthy events", len(seen))
	})
	base := rssKiB(t, pid)
	peak := base
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		peak = max(peak, rssKiB(t, pid))
	}
	const boundKiB = 64 << 10 // generous: GC slack over a few MiB of gRPC replies in flight
	t.Logf("nodelet RSS: %d KiB after the first events, peak %d KiB over 60 s", base, peak)
	if peak-base > boundKiB {
		t.Errorf("nodelet RSS grew by %d KiB (from %d to %d) under noisy probes, want under %d KiB", peak-base, base, peak, boundKiB)
	}

	unhealthy, over, longest := 0, 0, 0
	for _, e := range uiEvents(t, port) {
		if e.Reason != "Unhealthy" {
			continue
		}
		unhealthy++
		longest = max(longest, len(e.Message))
		if len(e.Message) > 16<<10 {
			over++
		}
		if !strings.HasPrefix(e.Message, "Readiness probe failed: run ") {
			t.Errorf("Unhealthy message starts %q", e.Message[:min(len(e.Message), 60)])
		}
	}
	switch {
	case unhealthy == 0:
		t.Error("no Unhealthy event on the node page")
	case over > 0:
		t.Errorf("%d of %d Unhealthy event messages are over 16 KiB (the longest %d bytes)", over, unhealthy, longest)
	case longest < 10<<10:
		t.Errorf("the longest Unhealthy message is %d bytes, want the probe's first 10 KiB in it", longest)
	}
}

// hostListener counts the requests a listener on the host's loopback gets.
type hostListener struct {
	port int
	mu   sync.Mutex
	got  []string
}

func listenOnHostLoopback(t *testing.T) *hostListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostListener{port: l.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.got = append(h.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Pod-Secret"))
		h.mu.Unlock()
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

func (h *hostListener) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// redirectHookPodYAML is a pod whose "server" container answers every GET on :8080 with a
// 302 to target, noting the request line in /out/served, and whose "main" container's
// postStart and preStop httpGet hooks call that server.
func redirectHookPodYAML(name, outDir, target string) string {
	script := `cat > /tmp/answer <<'EOF'
#!/bin/sh
CR=$(printf '\r')
read -r first
while read -r l; do { [ "$l" = "$CR" ] || [ -z "$l" ]; } && break; done
echo "$first" >> /out/served
printf 'HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$TARGET"
EOF
chmod +x /tmp/answer
exec nc -ll -p 8080 -e /tmp/answer
`
	hook := func(path string) string {
		return fmt.Sprintf("httpGet: {port: 8080, path: %s, httpHeaders: [{name: X-Pod-Secret, value: from-the-pod}]}", path)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - name: out
    hostPath: {path: %s}
  containers:
  - name: server
    image: %s
    imagePullPolicy: IfNotPresent
    env: [{name: TARGET, value: %q}]
    volumeMounts: [{name: out, mountPath: /out}]
    command: ["sh", "-c", %q]
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    lifecycle:
      postStart: {%s}
      preStop: {%s}
`, name, outDir, busybox, target, script, busybox, hook("/poststart"), hook("/prestop"))
}

// A pod answers its own postStart and preStop httpGet hooks with a redirect to a listener on
// the host's loopback: nodelet, which sends hooks from the host's network namespace, must not
// follow it there (upstream stops at a redirect to another host, as for probes).
func TestLifecycleHookRedirectStaysOffTheHost(t *testing.T) {
	host := listenOnHostLoopback(t)
	outDir := t.TempDir()
	served := filepath.Join(outDir, "served")
	n := startNodelet(t)
	target := fmt.Sprintf("http://127.0.0.1:%d/stolen", host.port)
	n.writeManifest("redirect.yaml", redirectHookPodYAML("redirect", outDir, target))
	waitRunning(t, "redirect", "main", 90*time.Second)
	testutil.WaitFor(t, 60*time.Second, "the postStart hook served by the pod", func() (bool, string) {
		b, _ := os.ReadFile(served)
		return strings.Contains(string(b), "GET /poststart"), string(b)
	})
	time.Sleep(2 * time.Second) // a followed redirect would have landed by now
	if got := host.requests(); len(got) > 0 {
		t.Fatalf("the host's loopback listener got %q after the postStart hook's redirect", got)
	}

	n.removeManifest("redirect.yaml")
	testutil.WaitFor(t, 60*time.Second, "the preStop hook served by the pod", func() (bool, string) {
		b, _ := os.ReadFile(served)
		return strings.Contains(string(b), "GET /prestop"), string(b)
	})
	testutil.WaitFor(t, 60*time.Second, "the pod gone", func() (bool, string) {
		return len(sandboxes(t, "redirect")) == 0, "sandbox left"
	})
	if got := host.requests(); len(got) > 0 {
		t.Fatalf("the host's loopback listener got %q after the hooks' redirects", got)
	}
}
