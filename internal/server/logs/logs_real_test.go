//go:build real

package logs

// A test against the real CRI runtime. It runs only when NODELET_E2E_CRI names its endpoint:
//
//	NODELET_E2E_CRI=unix:///run/nodelet/containerd/containerd.sock go test -tags real ./internal/server/logs -run Real -v
//
// It needs root and the images nodelet.local/busybox:1.36 and registry.k8s.io/pause:3.10 in
// the runtime, and writes container logs under /var/log/pods.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
	"github.com/nodelet/nodelet/internal/testutil"
	"github.com/nodelet/nodelet/internal/volumes/volumestest"
)

// realEnv is a pod on the real runtime whose container "main" prints "line N" on stdout and
// "err N" on stderr every 50ms until the file stop appears in its hostPath directory; then
// it removes the file, prints "exiting" and exits 1.
type realEnv struct {
	t       *testing.T
	rt      *kuberuntime.Manager
	logs    container.LogService
	pod     *v1.Pod
	hostDir string
	backoff *flowcontrol.Backoff
	server  *httptest.Server
}

func newRealEnv(t *testing.T) *realEnv {
	root := t.TempDir()
	rt, err := kuberuntime.NewManager(kuberuntime.Options{
		CRI: testutil.RealCRI(t), RootDir: root, PodLogsDir: "/var/log/pods", NodeName: "logs-e2e",
		Volumes: volumestest.Start(t, root),
	})
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	e := &realEnv{
		t: t, rt: rt, logs: rt, hostDir: t.TempDir(),
		backoff: flowcontrol.NewBackOff(time.Second, 10*time.Second),
	}
	dirType := v1.HostPathDirectoryOrCreate
	script := `i=0; while [ ! -f /host/stop ]; do i=$((i+1)); echo "line $i"; echo "err $i" >&2; sleep 0.05; done; rm /host/stop; echo exiting; exit 1`
	e.pod = &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "logs-" + id + "-logs-e2e", Namespace: "default", UID: types.UID("logs-e2e-" + id)},
		Spec: v1.PodSpec{
			NodeName: "logs-e2e", RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []v1.Container{{
				Name: "main", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
				Command:      []string{"sh", "-c", script},
				VolumeMounts: []v1.VolumeMount{{Name: "host", MountPath: "/host"}},
			}},
			Volumes: []v1.Volume{{Name: "host", VolumeSource: v1.VolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: e.hostDir, Type: &dirType}}}},
		},
	}
	t.Cleanup(e.cleanup)
	pods := pod.NewManager()
	pods.Set(e.pod)
	mux := http.NewServeMux()
	mux.Handle("/containerLogs/{namespace}/{pod}/{container}", NewContainerLogsHandler(Deps{
		Pods: pods, Status: rt.GetPodStatus, Runtime: e.logs,
	}))
	e.server = httptest.NewServer(mux)
	t.Cleanup(e.server.Close)
	return e
}

// ownContainers limits rotation to the test's container (the runtime may hold other pods)
// and counts reopens.
type ownContainers struct {
	container.LogService
	id      string
	reopens int
}

func (o *ownContainers) RunningContainerLogs(ctx context.Context) ([]*container.ContainerLog, error) {
	all, err := o.LogService.RunningContainerLogs(ctx)
	var ours []*container.ContainerLog
	for _, c := range all {
		if c.ContainerID == o.id {
			ours = append(ours, c)
		}
	}
	return ours, err
}

func (o *ownContainers) ReopenContainerLog(ctx context.Context, id string) error {
	o.reopens++
	return o.LogService.ReopenContainerLog(ctx, id)
}

func (e *realEnv) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.rt.KillPod(ctx, e.pod, nil, 0); err != nil {
		e.t.Errorf("KillPod: %v", err)
	}
	if err := e.rt.RemovePod(ctx, e.pod.UID); err != nil {
		e.t.Errorf("RemovePod: %v", err)
	}
}

// syncUntilRunning runs SyncPod until a container with restarts restarts runs.
func (e *realEnv) syncUntilRunning(restarts int) *container.ContainerStatus {
	e.t.Helper()
	ctx := context.Background()
	var running *container.ContainerStatus
	testutil.WaitUntil(e.t, 60*time.Second, fmt.Sprintf("the container running with %d restarts", restarts), func() bool {
		st, err := e.rt.GetPodStatus(ctx, e.pod.UID, e.pod.Name, e.pod.Namespace)
		if err != nil {
			e.t.Fatal(err)
		}
		if c := st.FindContainer("main"); c != nil && c.State == container.StateRunning && c.RestartCount == restarts {
			running = c
			return true
		}
		if res := e.rt.SyncPod(ctx, e.pod, st, e.backoff); res.Err != nil {
			e.t.Fatalf("SyncPod: %v", res.Err)
		}
		return false
	})
	return running
}

func (e *realEnv) get(query string) string {
	e.t.Helper()
	resp, err := http.Get(e.server.URL + "/containerLogs/default/" + e.pod.Name + "/main" + query)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("%s: %d %s", query, resp.StatusCode, body)
	}
	return string(body)
}

// follow streams the log in the background and returns the lines read so far on demand,
// and a channel closed when the response ends.
func (e *realEnv) follow(ctx context.Context, query string) (func() []string, <-chan struct{}) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.server.URL+"/containerLogs/default/"+e.pod.Name+"/main"+query, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		e.t.Fatalf("follow %s: %d", query, resp.StatusCode)
	}
	lines := make(chan string, 100000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		s := bufio.NewScanner(resp.Body)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	var got []string
	return func() []string {
		for {
			select {
			case l := <-lines:
				got = append(got, l)
			default:
				return got
			}
		}
	}, done
}

// checkConsecutive fails unless the lines are "<prefix> N" with N counting up by one.
func checkConsecutive(t *testing.T, what string, lines []string, prefix string) {
	t.Helper()
	prev := -1
	for _, l := range lines {
		n, err := strconv.Atoi(strings.TrimPrefix(l, prefix+" "))
		if err != nil || !strings.HasPrefix(l, prefix+" ") {
			t.Fatalf("%s: unexpected line %q", what, l)
		}
		if prev >= 0 && n != prev+1 {
			t.Fatalf("%s: %d follows %d (lost or repeated lines)", what, n, prev)
		}
		prev = n
	}
}

func TestRealContainerLogsAndRotation(t *testing.T) {
	e := newRealEnv(t)
	first := e.syncUntilRunning(0)
	time.Sleep(500 * time.Millisecond) // some lines

	// tail, timestamps, stream and limitBytes.
	tail := strings.Split(strings.TrimSuffix(e.get("?tailLines=4"), "\n"), "\n")
	if len(tail) != 4 {
		t.Fatalf("tailLines=4 gave %q", tail)
	}
	stamped := e.get("?tailLines=1&timestamps=true")
	ts, rest, _ := strings.Cut(stamped, " ")
	when, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || time.Since(when) > time.Minute || !strings.HasPrefix(rest, "line ") && !strings.HasPrefix(rest, "err ") {
		t.Fatalf("timestamps=true gave %q (%v)", stamped, err)
	}
	stdout := e.get("?stream=Stdout&limitBytes=100")
	if len(stdout) > 100 || strings.Contains(stdout, "err") || !strings.HasPrefix(stdout, "line 1\nline 2\n") {
		t.Fatalf("stream=Stdout&limitBytes=100 gave %q", stdout)
	}
	t.Logf("tail %q, stamped %q", tail, stamped)

	// Follow for a second: lines keep coming while the request is open.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	read, done := e.follow(ctx, "?follow=true&tailLines=0&stream=All")
	<-done
	cancel()
	followed := read()
	if len(followed) < 5 {
		t.Fatalf("follow for 1s read %d lines: %q", len(followed), followed)
	}
	t.Logf("follow for 1s read %d lines", len(followed))

	// Rotation with a tiny MaxSize while a follower reads stdout: rotated files appear,
	// old ones are compressed and pruned, and the follower misses no line.
	onlyOurs := &ownContainers{LogService: e.logs, id: first.ID}
	rotator, err := NewRotator(RotatorOptions{MaxSize: 2048, MaxFiles: 3, Interval: time.Second, Runtime: onlyOurs})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	rotator.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	followCtx, stopFollow := context.WithCancel(context.Background())
	defer stopFollow()
	readStdout, followDone := e.follow(followCtx, "?follow=true&stream=Stdout")
	logDir := filepath.Join("/var/log/pods", "default_"+e.pod.Name+"_"+string(e.pod.UID), "main")
	for range 15 {
		time.Sleep(300 * time.Millisecond)
		rotator.rotateAll(context.Background())
	}
	entries, _ := os.ReadDir(logDir)
	var names []string
	gz := 0
	for _, en := range entries {
		names = append(names, en.Name())
		if strings.HasSuffix(en.Name(), ".gz") {
			gz++
		}
	}
	t.Logf("log dir after %d rotations: %v", onlyOurs.reopens, names)
	if onlyOurs.reopens < 3 {
		t.Fatalf("%d rotations, want at least 3 to see pruning", onlyOurs.reopens)
	}
	if len(names) != 3 || gz != 1 || names[0] != "0.log" {
		t.Fatalf("want 0.log and two rotated files (one compressed), got %v", names)
	}
	if info, _ := os.Stat(filepath.Join(logDir, "0.log")); info.Size() >= 4096 {
		t.Errorf("live log %d bytes: not rotated", info.Size())
	}
	time.Sleep(300 * time.Millisecond)
	// The live file grows again after the last reopen: the runtime writes to the new file.
	if tail := e.get("?tailLines=1"); !strings.HasPrefix(tail, "line ") && !strings.HasPrefix(tail, "err ") {
		t.Fatalf("after rotation tail gave %q", tail)
	}

	// The container exits: the follower reads its last line and its stream ends.
	if err := os.WriteFile(filepath.Join(e.hostDir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-followDone:
	case <-time.After(30 * time.Second):
		t.Fatal("follow did not end when the container exited")
	}
	lines := readStdout()
	if len(lines) < 20 || lines[0] != "line 1" || lines[len(lines)-1] != "exiting" {
		t.Fatalf("followed %d lines ending %q", len(lines), lines[max(0, len(lines)-3):])
	}
	checkConsecutive(t, "follow across rotations", lines[:len(lines)-1], "line")
	t.Logf("followed %d stdout lines across rotations, %s .. %s", len(lines), lines[0], lines[len(lines)-2])

	// Restarted: previous=true reads the exited instance, the default the new one.
	second := e.syncUntilRunning(1)
	if second.ID == first.ID {
		t.Fatal("container not restarted")
	}
	time.Sleep(300 * time.Millisecond)
	if prev := e.get("?previous=true&tailLines=1"); prev != "exiting\n" {
		t.Errorf("previous=true tail gave %q", prev)
	}
	if cur := e.get("?stream=Stdout&limitBytes=7"); cur != "line 1\n" {
		t.Errorf("current instance starts %q", cur)
	}
	fmt.Fprintln(os.Stderr, "real container logs test done")
}
