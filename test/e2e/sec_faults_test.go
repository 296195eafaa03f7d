//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// Faults nodelet must survive with nothing lost (issue 30, item 5): containerd restarting
// under running pods, nodelet SIGKILLed in the middle of a burst, a full root filesystem.

// uiPod and uiNode are the parts of the node page's api/pods and api/node the tests read:
// standalone, the node page is where nodelet shows its pods' statuses and the node's conditions.
type uiPod struct {
	Name     string `json:"name"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
}

type uiNode struct {
	Conditions []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"conditions"`
}

func getJSON(t *testing.T, url string, into any) error {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// uiPods returns the node page's pods by manifest name.
func uiPods(t *testing.T, port int) map[string]uiPod {
	t.Helper()
	var v struct {
		Pods []uiPod `json:"pods"`
	}
	if err := getJSON(t, fmt.Sprintf("http://127.0.0.1:%d/ui/api/pods", port), &v); err != nil {
		t.Fatalf("node page pods: %v", err)
	}
	out := map[string]uiPod{}
	for _, p := range v.Pods {
		out[strings.TrimSuffix(p.Name, "-"+nodeName)] = p
	}
	return out
}

// uiCondition returns the status of a node condition on the node page ("" if absent).
func uiCondition(t *testing.T, port int, typ string) string {
	t.Helper()
	var n uiNode
	if err := getJSON(t, fmt.Sprintf("http://127.0.0.1:%d/ui/api/node", port), &n); err != nil {
		t.Fatalf("node page node: %v", err)
	}
	for _, c := range n.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// podIDs is what the runtime holds of one pod: its sandboxes and containers by ID and state.
type podIDs struct {
	ready, notReady     []string // sandbox IDs
	running, notRunning []string // container IDs
	attempts            []uint32 // attempts of the running containers
}

func (p podIDs) String() string {
	return fmt.Sprintf("sandboxes ready %v not ready %v; containers running %v (attempts %v) other %v",
		p.ready, p.notReady, p.running, p.attempts, p.notRunning)
}

// runtimeIDs lists, per pod UID label, the sandboxes and containers of the test node's pods.
func runtimeIDs(t *testing.T) map[string]*podIDs {
	t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	out := map[string]*podIDs{}
	get := func(uid string) *podIDs {
		if out[uid] == nil {
			out[uid] = &podIDs{}
		}
		return out[uid]
	}
	sbs, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		t.Fatalf("ListPodSandbox: %v", err)
	}
	mine := map[string]bool{}
	for _, s := range sbs.Items {
		if !strings.HasSuffix(s.Labels["io.kubernetes.pod.name"], "-"+nodeName) {
			continue
		}
		mine[s.Id] = true
		p := get(s.Labels["io.kubernetes.pod.uid"])
		if s.State == cri.PodSandboxState_SANDBOX_READY {
			p.ready = append(p.ready, s.Id)
		} else {
			p.notReady = append(p.notReady, s.Id)
		}
	}
	cs, err := rt.ListContainers(ctx, &cri.ListContainersRequest{})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	for _, c := range cs.Containers {
		if !mine[c.PodSandboxId] {
			continue
		}
		p := get(c.Labels["io.kubernetes.pod.uid"])
		if c.State == cri.ContainerState_CONTAINER_RUNNING {
			p.running = append(p.running, c.Id)
			p.attempts = append(p.attempts, c.Metadata.GetAttempt())
		} else {
			p.notRunning = append(p.notRunning, c.Id)
		}
	}
	return out
}

// podUIDs maps the test node's pod names (manifest names) to their UID label.
func podUIDs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, s := range sandboxes(t, "") {
		out[strings.TrimSuffix(s.Labels["io.kubernetes.pod.name"], "-"+nodeName)] = s.Labels["io.kubernetes.pod.uid"]
	}
	return out
}

// containerdScript runs hack/containerd.sh with one command. (TestMain's keepInheritedFDs
// keeps the e2e lock's descriptor from the containerd it starts.)
func containerdScript(t *testing.T, cmd string) error {
	t.Helper()
	out, err := exec.Command("../../hack/containerd.sh", cmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("hack/containerd.sh %s: %v\n%s", cmd, err, out)
	}
	return nil
}

func waitContainerd(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, "containerd answering", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		_, err := rt.Version(ctx, &cri.VersionRequest{})
		return err == nil, fmt.Sprint(err)
	})
}

// containerd restarts under three running pods: nodelet rides out the failed relists,
// reconnects, and neither kills nor duplicates anything; statuses stay Running and Ready.
func TestContainerdRestartKeepsPodsRunning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("restarting containerd needs root")
	}
	port := freePort(t)
	n := startNodelet(t, fmt.Sprintf("--node-ui-port=%d", port))
	names := []string{"steady-a", "steady-b", "steady-c"}
	// Probes that fail at the first miss: a probe the outage keeps from running must not be
	// taken for a failed one (liveness would restart the container, readiness unready it).
	n.writeManifest("steady-a.yaml", strictlyProbedPodYAML("steady-a"))
	for _, name := range names[1:] {
		n.writeManifest(name+".yaml", podYAML(name, "Always", "exec sleep 3600"))
	}
	before := waitSettled(t, names, 90*time.Second)
	testutil.WaitFor(t, 30*time.Second, "the pods Running and Ready on the node page", func() (bool, string) {
		return allRunningReady(uiPods(t, port), names)
	})

	// Whatever happens below, containerd runs again afterwards (registered after nodelet's
	// cleanup, so it runs first: the cleanup needs the runtime).
	t.Cleanup(func() {
		if err := containerdScript(t, "start"); err != nil {
			t.Errorf("restarting containerd after the test: %v", err)
		}
	})
	if err := containerdScript(t, "stop"); err != nil {
		t.Fatal(err)
	}
	// A few of nodelet's 1 s relists fail meanwhile; the pods' shims keep them running.
	time.Sleep(5 * time.Second)
	if err := containerdScript(t, "start"); err != nil {
		t.Fatal(err)
	}
	waitContainerd(t)
	if !strings.Contains(n.log(), "PLEG relist failed") {
		t.Error("nodelet's log shows no failed relist: the outage went unnoticed")
	}

	// nodelet reconnected: a pod added now starts.
	n.writeManifest("after.yaml", podYAML("after", "Always", "exec sleep 3600"))
	waitRunning(t, "after", "main", 60*time.Second)
	after := waitSettled(t, names, 30*time.Second)
	for _, name := range names {
		if b, a := before[name].String(), after[name].String(); a != b {
			t.Errorf("pod %s changed across the containerd restart:\n before %s\n after  %s", name, b, a)
		}
	}
	pods := uiPods(t, port)
	if ok, detail := allRunningReady(pods, names); !ok {
		t.Errorf("node page after the restart: %s", detail)
	}
	for _, name := range names {
		if pods[name].Restarts != 0 {
			t.Errorf("pod %s shows %d restarts, want 0", name, pods[name].Restarts)
		}
	}
	if strings.Contains(n.log(), "panic") {
		t.Errorf("nodelet log mentions a panic:\n%s", tail(n.log(), 4000))
	}
}

// strictlyProbedPodYAML is a sleeping static pod with exec liveness and readiness probes
// every second that give up at the first failure.
func strictlyProbedPodYAML(name string) string {
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
      exec: {command: ["true"]}
      periodSeconds: 1
      failureThreshold: 1
    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
      failureThreshold: 1
`, name, busybox)
}

// waitSettled waits until each named pod runs exactly one ready sandbox and one running
// container, and returns what the runtime holds of them.
func waitSettled(t *testing.T, names []string, timeout time.Duration) map[string]podIDs {
	t.Helper()
	out := map[string]podIDs{}
	testutil.WaitFor(t, timeout, fmt.Sprintf("%d pods with one sandbox and one running container each", len(names)), func() (bool, string) {
		uids, ids := podUIDs(t), runtimeIDs(t)
		for _, name := range names {
			p := ids[uids[name]]
			if p == nil || len(p.ready) != 1 || len(p.running) != 1 {
				return false, fmt.Sprintf("pod %s: %v", name, p)
			}
			out[name] = *p
		}
		return true, ""
	})
	return out
}

func allRunningReady(pods map[string]uiPod, names []string) (bool, string) {
	for _, name := range names {
		if p := pods[name]; p.Phase != "Running" || !p.Ready {
			return false, fmt.Sprintf("pod %s: %+v", name, p)
		}
	}
	return true, ""
}

// nodelet SIGKILLed while 30 static pods start: the restarted nodelet finishes the burst with
// exactly one ready sandbox and one running container per pod, as the upstream kubelet does.
// A container the killed instance created but did not start stays, not running, as the
// pod's previous instance (its replacement counts one restart), as upstream.
func TestSIGKILLMidBurstLeavesOneContainerPerPod(t *testing.T) {
	n := startNodelet(t)
	const count = 30
	var names []string
	for i := range count {
		name := fmt.Sprintf("burst-%02d", i)
		names = append(names, name)
		n.writeManifest(name+".yaml", podYAML(name, "Always", "exec sleep 3600"))
	}
	testutil.WaitFor(t, 90*time.Second, "10 sandboxes of the burst", func() (bool, string) {
		got := len(sandboxes(t, ""))
		return got >= 10, fmt.Sprintf("%d sandboxes", got)
	})
	n.stop(syscall.SIGKILL)
	t.Logf("nodelet killed with %d sandboxes created", len(sandboxes(t, "")))
	n.start()

	settled := waitSettled(t, names, 3*time.Minute)
	uids := podUIDs(t)
	ids := runtimeIDs(t)
	if len(ids) != count {
		t.Errorf("the runtime holds %d of the test's pods, want %d", len(ids), count)
	}
	for _, name := range names {
		p := ids[uids[name]]
		if len(p.ready) != 1 || len(p.running) != 1 {
			t.Errorf("pod %s: %v; want one ready sandbox and one running container", name, p)
		}
		// A container the killed instance created but never started stays as the pod's
		// previous instance (upstream's GC keeps one dead instance per container too).
		if len(p.notRunning) > 1 {
			t.Errorf("pod %s: %v; want at most one container that is not running", name, p)
		}
		if len(p.notReady)+len(p.notRunning) > 0 {
			t.Logf("pod %s keeps what the killed instance left: %v", name, p)
		}
		if p.ready[0] != settled[name].ready[0] || p.running[0] != settled[name].running[0] {
			t.Errorf("pod %s changed after settling: %v, then %v", name, settled[name], p)
		}
	}
}

// The root directory's filesystem fills up under running pods: they keep running, nodelet
// reports DiskPressure and refuses no work by crashing; once space is back a new pod starts
// and the existing pods' files under the root directory are whole.
func TestFullRootFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a loop-mounted filesystem needs root")
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	root := smallFilesystem(t, 64)
	port := freePort(t)
	// A soft nodefs threshold with a long grace period shows the pressure without evicting:
	// the test is about nodelet itself on a full disk, not the eviction policy. The hard
	// thresholds are replaced so that nodefs has none.
	n := startNodelet(t, "--root-dir="+root, fmt.Sprintf("--node-ui-port=%d", port),
		"--eviction-hard=memory.available<1Mi", "--eviction-soft=nodefs.available<50%",
		"--eviction-soft-grace-period=nodefs.available=10m", "--eviction-pressure-transition-period=10s")
	n.rootDir = root
	names := []string{"full-a", "full-b"}
	for _, name := range names {
		n.writeManifest(name+".yaml", podWithEmptyDir(name))
	}
	before := waitSettled(t, names, 90*time.Second)
	if got := uiCondition(t, port, "DiskPressure"); got != "False" {
		t.Fatalf("DiskPressure %q before the fill, want False", got)
	}

	fill := filepath.Join(root, "fill")
	fillUp(t, fill)
	// A pod added while the disk is full cannot get its files written; it must wait, not break.
	n.writeManifest("late.yaml", podWithEmptyDir("late"))
	testutil.WaitFor(t, 60*time.Second, "DiskPressure True on the node page", func() (bool, string) {
		got := uiCondition(t, port, "DiskPressure")
		return got == "True", got
	})
	time.Sleep(5 * time.Second) // a few syncs of the running pods on the full disk
	after := waitSettled(t, names, 10*time.Second)
	for _, name := range names {
		if b, a := before[name].String(), after[name].String(); a != b {
			t.Errorf("pod %s changed on the full disk:\n before %s\n after  %s", name, b, a)
		}
	}
	if err := pollHTTPOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.healthzPort), 10*time.Second); err != nil {
		t.Fatalf("nodelet unhealthy on the full disk: %v", err)
	}
	if c := runningContainer(t, "late", "main"); c != nil {
		t.Errorf("pod late runs on a full root filesystem (container %s): the test did not fill it", c.Id)
	}
	if !strings.Contains(n.log(), "no space left on device") {
		t.Errorf("nodelet's log shows no ENOSPC: the full disk went unnoticed")
	}

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, "late", "main", 90*time.Second)
	testutil.WaitFor(t, 60*time.Second, "DiskPressure back to False", func() (bool, string) {
		got := uiCondition(t, port, "DiskPressure")
		return got == "False", got
	})
	waitSettled(t, append(names, "late"), 30*time.Second)
	checkRootFiles(t, root)
	if log := n.log(); strings.Contains(log, "panic") {
		t.Errorf("nodelet log mentions a panic:\n%s", tail(log, 4000))
	}
}

// podWithEmptyDir is a static pod whose container writes into an emptyDir (on the root dir).
func podWithEmptyDir(name string) string {
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
    command: ["sh", "-c", "echo started > /data/mark; exec sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - {name: data, emptyDir: {}}
`, name, busybox)
}

// smallFilesystem mounts a fresh ext4 filesystem of sizeMiB on a loop device and returns its
// mount point; it is unmounted (after nodelet's cleanup) when the test ends.
func smallFilesystem(t *testing.T, sizeMiB int64) string {
	t.Helper()
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "root.img"), filepath.Join(dir, "root")
	f, err := os.Create(img)
	if err == nil {
		err = errors.Join(f.Truncate(sizeMiB<<20), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mnt, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"mkfs.ext4", "-q", "-F", img}, {"mount", "-o", "loop", img, mnt}} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Skipf("%v: %v\n%s", cmd, err, out)
		}
	}
	t.Cleanup(func() {
		// Volumes nodelet left mounted below would keep the filesystem busy.
		_ = exec.Command("umount", "--recursive", mnt).Run()
		if _, err := os.Stat(filepath.Join(mnt, "lost+found")); err == nil {
			t.Errorf("%s is still mounted", mnt)
			_ = exec.Command("umount", "--lazy", mnt).Run()
		}
	})
	return mnt
}

// fillUp writes path until the filesystem has no space left.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", path, err)
			}
			break
		}
	}
	// The last bytes: small writes take what the megabyte chunks could not.
	for chunk = chunk[:4096]; ; {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	_ = f.Sync()
}

// checkRootFiles checks the files nodelet keeps under its root directory: every JSON state file
// parses, and no pod's files are empty or left as temporaries.
func checkRootFiles(t *testing.T, root string) {
	t.Helper()
	var checked []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if d.Name() == "volumes" || d.Name() == "lost+found" {
				return filepath.SkipDir // the pods' own data
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.Contains(d.Name(), ".tmp") || strings.HasPrefix(d.Name(), ".tmp"):
			t.Errorf("temporary file left behind: %s", rel)
		case strings.HasSuffix(d.Name(), ".json") || strings.HasSuffix(d.Name(), "_state") || strings.HasSuffix(d.Name(), "checkpoint"):
			if !json.Valid(b) {
				t.Errorf("state file %s does not parse: %q", rel, tail(string(b), 200))
			}
			checked = append(checked, rel)
		case d.Name() == "etc-hosts":
			if !strings.Contains(string(b), "localhost") {
				t.Errorf("%s is truncated: %q", rel, b)
			}
			checked = append(checked, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(checked)
	t.Logf("checked files under the root directory: %v", checked)
	if len(checked) == 0 {
		t.Error("found no nodelet file under the root directory to check")
	}
}
