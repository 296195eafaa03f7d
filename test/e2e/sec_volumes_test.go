//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A manifest URL may carry credentials (userinfo, or a signed URL's signature in its query):
// whatever nodelet says about the URL (a failed fetch, a manifest it cannot decode) names it
// by scheme, host and path only, in its log, in the Node event, on the node page and in
// /configz.
func TestSecManifestURLCredentialsNotShown(t *testing.T) {
	secrets := []string{"e2e-url-user", "e2e-url-password", "e2e-url-signature"}
	var mu sync.Mutex
	status := http.StatusInternalServerError // first a failed fetch, then a malformed manifest
	manifests := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprint(w, "this is: [not a manifest\n")
	}))
	defer manifests.Close()
	host := strings.TrimPrefix(manifests.URL, "http://")
	shown := "http://" + host + "/static/pods.yaml"
	url := "http://e2e-url-user:e2e-url-password@" + host + "/static/pods.yaml?X-Amz-Signature=e2e-url-signature&X-Amz-Expires=300"

	apiPort, uiPort := freePort(t), freePort(t)
	n := startNodelet(t, append(secretsOpenAPI(t, apiPort), "--address=127.0.0.1", fmt.Sprintf("--node-ui-port=%d", uiPort),
		"--manifest-url="+url, "--http-check-frequency=1s", "-v=5")...)
	testutil.WaitFor(t, 30*time.Second, "the failed fetch logged", func() (bool, string) {
		return strings.Contains(n.log(), "Cannot fetch static pods"), "not logged yet"
	})
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	testutil.WaitFor(t, 30*time.Second, "the FailedToDecode event", func() (bool, string) {
		return strings.Contains(n.log(), `reason="FailedToDecode"`), "no event yet"
	})
	if want := "Could not decode static pod manifest " + shown + ":"; !strings.Contains(n.log(), want) {
		t.Errorf("the event does not name the URL as %q", want)
	}
	events := fmt.Sprintf("http://127.0.0.1:%d/ui/api/events", uiPort)
	var page string
	testutil.WaitFor(t, 30*time.Second, "the event on the node page", func() (bool, string) {
		_, page = secretsGet(t, http.DefaultClient, events)
		return strings.Contains(page, "FailedToDecode"), page
	})
	_, configz := secretsGet(t, secretsInsecure, fmt.Sprintf("https://127.0.0.1:%d/configz", apiPort))
	if !strings.Contains(configz, `"staticPodURL"`) {
		t.Errorf("/configz has no staticPodURL:\n%s", configz)
	}
	for where, text := range map[string]string{"nodelet's log": n.log(), "the node page's events": page, "/configz": configz} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the URL's %q:\n%s", where, s, tail(text, 3000))
			}
		}
	}
}

// A missing subPath directory made under a hostPath volume gets the volume root's mode, as
// upstream makes it, not a world-writable one: every component made is 0750 under a 0750 root.
func TestSecSubPathDirTakesTheVolumeRootMode(t *testing.T) {
	n := startNodelet(t)
	hostDir := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(hostDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hostDir, 0o750); err != nil { // whatever the umask
		t.Fatal(err)
	}
	n.writeManifest("spmode.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: spmode
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: vol
    hostPath: {path: %q, type: Directory}
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    volumeMounts: [{name: vol, mountPath: /mnt, subPath: new/deeper}]
`, hostDir, busybox))
	waitRunning(t, "spmode", "main", 60*time.Second)
	for _, dir := range []string{"new", "new/deeper"} {
		st, err := os.Stat(filepath.Join(hostDir, dir))
		if err != nil {
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode != 0o750 {
			t.Errorf("subPath directory %s has mode %#o, want the volume root's 0750", dir, mode)
		}
	}
}

// walkMetric is nodelet's count of directory walks measuring volumes.
const walkMetric = "nodelet_volume_stats_walk_duration_seconds_count"

// volumeWalks reads walkMetric from /metrics (-1 when it is not there).
func volumeWalks(t *testing.T, port int) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), walkMetric+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return int(n)
		}
	}
	return -1
}

// cpuTicks is the user+system CPU time (clock ticks) process pid has used.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}

// Volumes are measured in the background, once per pod per period: 8 concurrent
// /stats/summary requests over a pod with 100k files in an emptyDir cause at most one walk
// (counted by nodelet_volume_stats_walk_duration_seconds), and each reads the volume's figures.
func TestSecStatsConcurrentSummariesWalkOnce(t *testing.T) {
	n, port := startStatusNodelet(t)
	n.writeManifest("manyfiles.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: manyfiles
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: vol
    emptyDir: {}
  initContainers:
  - name: fill
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "cd /vol && for d in $(seq 100); do mkdir $d && (cd $d && seq 1000 | xargs touch); done"]
    volumeMounts: [{name: vol, mountPath: /vol}]
  containers:
  - name: main
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    volumeMounts: [{name: vol, mountPath: /vol}]
`, busybox))
	waitRunning(t, "manyfiles", "main", 120*time.Second)
	summary := fmt.Sprintf("http://127.0.0.1:%d/stats/summary", port)
	testutil.WaitFor(t, 60*time.Second, "the pod's volume measured", func() (bool, string) {
		err := summaryHasVolume(summary, "manyfiles-"+nodeName, "vol")
		return err == nil, fmt.Sprint(err)
	})
	// Past the minute a measured size used to be reused for, so that a request walking the
	// volume itself would do it now.
	time.Sleep(65 * time.Second)

	before, cpuBefore := volumeWalks(t, port), cpuTicks(t, n.cmd.Process.Pid)
	const requests = 8
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	start := time.Now()
	for range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- summaryHasVolume(summary, "manyfiles-"+nodeName, "vol")
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	after, cpuAfter := volumeWalks(t, port), cpuTicks(t, n.cmd.Process.Pid)
	t.Logf("%d concurrent summaries: %v, nodelet CPU %d ticks, %s %d -> %d", requests, took, cpuAfter-cpuBefore, walkMetric, before, after)
	if before < 0 {
		t.Fatalf("no %s on /metrics: nodelet does not count its volume walks", walkMetric)
	}
	if after-before > 1 {
		t.Errorf("%d concurrent summaries made %d walks, want at most 1", requests, after-before)
	}
}

// summaryHasVolume fetches a summary and checks it has figures for the pod's volume.
func summaryHasVolume(url, pod, volume string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var s statsapi.Summary
	if err := json.Unmarshal(body, &s); err != nil {
		return fmt.Errorf("summary: %v: %.200s", err, body)
	}
	for _, p := range s.Pods {
		if p.PodRef.Name != pod {
			continue
		}
		for _, v := range p.VolumeStats {
			if v.Name == volume && v.InodesUsed != nil {
				return nil
			}
		}
	}
	return fmt.Errorf("summary has no figures for volume %s of %s", volume, pod)
}
