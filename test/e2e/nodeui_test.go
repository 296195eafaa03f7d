//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	v1 "k8s.io/api/core/v1"
)

// screenshotDir keeps the node page's screenshots as test artifacts.
var screenshotDir = repoPath("_output/e2e/nodeui")

// probedPodYAML is a static pod whose container sleeps behind an exec readiness probe.
func probedPodYAML(name, probe string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    readinessProbe:
      exec:
        command: ["sh", "-c", %q]
      periodSeconds: 1
`, name, busybox, probe)
}

// The node page on its own port, driven in headless Chromium: three pods in their states,
// each pod's waterfall with its steps in order, the node summary and the events.
func TestNodePageInChromium(t *testing.T) {
	browser := newBrowser(t) // first: skips before starting anything when chromium is absent
	port := freePort(t)
	n := startNodelet(t, fmt.Sprintf("--node-ui-port=%d", port))
	n.writeManifest("ready.yaml", probedPodYAML("ready", "true"))
	n.writeManifest("unready.yaml", probedPodYAML("unready", "echo not ready; exit 1"))
	n.writeManifest("crashloop.yaml", podYAML("crashloop", "Always", "echo dying; exit 1"))
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	waitHTTPOK(t, url)
	page := browser.open(t, url)

	// The pods' rows say what each is doing; the page refreshes itself every 5 s.
	page.waitFor(t, 120*time.Second, "the three pods in their states", `(() => {
		const row = (name) => document.querySelector('tr[data-pod="default/' + name + '-`+nodeName+`"]');
		const r = row("ready"), u = row("unready"), c = row("crashloop");
		return !!(r && u && c &&
			r.dataset.status === "Running" && r.dataset.ready === "true" && r.querySelector(".ready").textContent === "1/1" &&
			u.dataset.status === "Running" && u.dataset.ready === "false" && u.querySelector(".ready").textContent === "0/1" &&
			c.dataset.status === "CrashLoopBackOff" && Number(c.querySelector(".restarts").textContent) >= 1);
	})()`)
	page.waitFor(t, 30*time.Second, "the node summary", `document.querySelector("#node-ready").textContent === "Ready" &&
		["MemoryPressure", "DiskPressure", "PIDPressure"].every((c) => document.querySelector('[data-condition="' + c + '"]')) &&
		[...document.querySelectorAll("#resources td")].some((td) => td.textContent === "cpu")`)
	// The machine's topology, read from /sys, and the resource managers' policies.
	page.waitFor(t, 30*time.Second, "the machine topology", `!document.querySelector("#topology").hidden &&
		/\d+ CPUs? \(\d+ per core\)/.test(document.querySelector("#topology-summary").textContent) &&
		document.querySelectorAll("#numa-nodes tbody tr td").length >= 4 &&
		[...document.querySelectorAll("#policies .chip")].some((c) => c.textContent === "topologyManagerPolicy: none")`)
	page.waitFor(t, 30*time.Second, "the BackOff and Unhealthy events", `["BackOff", "Unhealthy"].every((r) =>
		document.querySelector('#event-table tr[data-reason="' + r + '"]'))`)
	page.screenshot(t, "standalone-overview")

	started := []string{"admitted", "sandbox created", "image ready", "container created", "container started"}
	after := func(more ...string) []string { return slices.Concat(started, more) }
	for _, tc := range []struct {
		pod  string
		want []string
	}{
		{"ready", after("readiness probe successful")},
		{"unready", after("readiness probe failed")},
		{"crashloop", after("container exited", "back-off")},
	} {
		page.showPod(t, "default/"+tc.pod+"-"+nodeName, tc.want)
		page.screenshot(t, "standalone-"+tc.pod)
	}

	// Readable on a phone: the pods table still lists every pod.
	page.run(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	page.waitFor(t, 10*time.Second, "the pods on a phone-sized screen", `document.querySelectorAll("#pod-table tbody tr[data-pod]").length === 3`)
	page.screenshot(t, "standalone-phone")
}

// The same page on the kubelet API, through the API server's node proxy (kubectl proxy): its
// relative URLs work under the proxy's prefix, with authorization as /pods.
func TestNodePageThroughTheNodeProxy(t *testing.T) {
	browser := newBrowser(t)
	c := joinCluster(t)
	c.waitReady(t)
	c.createPod(podSpec("paged", "exec sleep 3600"))
	c.waitPodPhase("paged", v1.PodRunning, 60*time.Second)
	if raw := kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/ui/api/pods"); !strings.Contains(raw, `"name":"paged"`) {
		t.Fatalf("api/pods through the node proxy lacks the pod: %s", raw)
	}
	addr := kubectlProxy(t)
	page := browser.open(t, "http://"+addr+"/api/v1/nodes/"+nodeName+"/proxy/ui/")
	page.waitFor(t, 60*time.Second, "the pod Running behind the proxy", `(() => {
		const r = document.querySelector('tr[data-pod="`+c.ns+`/paged"]');
		return !!(r && r.dataset.status === "Running" && document.querySelector("#node-ready").textContent === "Ready");
	})()`)
	page.showPod(t, c.ns+"/paged", []string{"admitted", "sandbox created", "image ready", "container created", "container started"})
	page.screenshot(t, "proxy-pod")
}

// chromium is one headless Chromium for a test.
type chromium struct{ ctx context.Context }

// newBrowser starts headless Chromium, or skips the test when it is not installed.
func newBrowser(t *testing.T) *chromium {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed, so the node page cannot be driven in a browser (apt-get install chromium; `make e2e` installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 900),
		chromedp.NoSandbox) // the tests run as root, where Chromium's sandbox refuses to start
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return &chromium{ctx: ctx}
}

// tab is the browser's tab on the node page.
type tab struct{ ctx context.Context }

func (b *chromium) open(t *testing.T, url string) *tab {
	t.Helper()
	p := &tab{ctx: b.ctx}
	p.run(t, chromedp.Navigate(url))
	return p
}

func (p *tab) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.screenshot(t, "failed-"+sanitize(t.Name()))
		t.Fatal(err)
	}
}

// waitFor polls a JavaScript predicate in the page until it is true; on a timeout it saves a
// screenshot and fails with what the page shows.
func (p *tab) waitFor(t *testing.T, timeout time.Duration, what, predicate string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout+10*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(500*time.Millisecond)))
	if err != nil {
		p.screenshot(t, "failed-"+sanitize(t.Name()))
		text, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\nthe page shows:\n%s", what, err, text)
	}
}

// showPod opens a pod's details and checks its waterfall lists want in that order (other
// steps may come between).
func (p *tab) showPod(t *testing.T, key string, want []string) {
	t.Helper()
	p.run(t, chromedp.Click(chromedp.CSS(`tr[data-pod="`+key+`"]`)))
	p.waitFor(t, 30*time.Second, key+"'s waterfall", fmt.Sprintf(`document.querySelector("#pod-title").textContent === %q &&
		document.querySelectorAll("#waterfall .step").length >= %d`, key, len(want)))
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	steps, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#waterfall .step")].map((s) => s.dataset.step)`))
	if err != nil {
		t.Fatal(err)
	}
	if !inOrder(sandboxFirst(steps), want) {
		p.screenshot(t, "failed-"+sanitize(key))
		t.Errorf("%s's waterfall shows %q; want %q in that order", key, steps, want)
	}
}

// sandboxFirst puts a pod's first "image ready" after the "sandbox created" right behind it:
// nodelet ensures the image while the sandbox is created, so the two come in either order.
func sandboxFirst(steps []string) []string {
	out := slices.Clone(steps)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "image ready" && out[i+1] == "sandbox created" {
			out[i], out[i+1] = out[i+1], out[i]
			break
		}
	}
	return out
}

// inOrder says whether want is a subsequence of got.
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// screenshot saves the whole page as _output/e2e/nodeui/<name>.png.
func (p *tab) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(screenshotDir, name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", file)
}

func sanitize(s string) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(s)
}

// kubectlProxy runs `kubectl proxy` on a free loopback port for the test and returns its address.
func kubectlProxy(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "proxy", "--address=127.0.0.1", "--port=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		// "Starting to serve on 127.0.0.1:40123"
		if _, addr, ok := strings.Cut(line, "serve on "); ok {
			return strings.TrimSpace(addr)
		}
		t.Fatalf("kubectl proxy said %q", line)
	case <-time.After(30 * time.Second):
		t.Fatal("kubectl proxy did not start within 30s")
	}
	return ""
}
