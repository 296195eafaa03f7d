// Command bench-standalone measures nodelet standalone on the real runtime: the time from a new
// static pod manifest to its container running (as the runtime reports it), and nodelet's RSS
// with N pods running. It starts and stops its own nodelet.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/hack/procstat"
)

const node = "bench"

func main() {
	bin := flag.String("nodelet", "_output/bin/nodelet", "nodelet binary")
	endpoint := flag.String("endpoint", "unix:///run/nodelet/containerd/containerd.sock", "CRI endpoint")
	runs := flag.Int("runs", 20, "single-pod start measurements")
	pods := flag.Int("pods", 20, "pods running for the RSS figure")
	flag.Parse()
	if err := bench(*bin, *endpoint, *runs, *pods); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type env struct {
	rt        cri.RuntimeServiceClient
	manifests string
}

func bench(bin, endpoint string, runs, pods int) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	base, err := os.MkdirTemp("", "nodelet-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	e := &env{rt: cri.NewRuntimeServiceClient(conn), manifests: filepath.Join(base, "manifests")}
	if err := os.MkdirAll(e.manifests, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(bin, "--pod-manifest-path="+e.manifests, "--root-dir="+filepath.Join(base, "root"),
		"--container-runtime-endpoint="+endpoint, "--hostname-override="+node, "--healthz-port=0", "--fail-swap-on=false")
	logf, _ := os.Create(filepath.Join(os.TempDir(), "nodelet-bench.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _, _ = cmd.Process.Wait() }()
	time.Sleep(time.Second)

	fmt.Printf("nodelet standalone on %s, %d runs\n", endpoint, runs)
	var lat []time.Duration
	for i := 0; i < runs; i++ {
		d, err := e.startOne(fmt.Sprintf("lat%d", i))
		if err != nil {
			return err
		}
		lat = append(lat, d)
		fmt.Printf("  run %2d: manifest → running %v\n", i+1, d.Round(time.Millisecond))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("manifest → container running: median %v, min %v, max %v\n",
		lat[len(lat)/2].Round(time.Millisecond), lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))

	rssIdle := procstat.RSSMiB(cmd.Process.Pid)
	start := time.Now()
	for i := 0; i < pods; i++ {
		if err := e.write(fmt.Sprintf("rss%d", i)); err != nil {
			return err
		}
	}
	if err := e.waitRunning(pods, 3*time.Minute); err != nil {
		return err
	}
	fmt.Printf("%d pods running after %v\n", pods, time.Since(start).Round(time.Millisecond))
	time.Sleep(10 * time.Second) // let a few relists and syncs pass
	fmt.Printf("nodelet RSS: idle %.1f MiB, with %d pods running %.1f MiB\n", rssIdle, pods, procstat.RSSMiB(cmd.Process.Pid))
	return e.clear()
}

func (e *env) write(name string) error {
	pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{
"terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"nodelet.local/testhelper:v1",
"imagePullPolicy":"IfNotPresent","args":["sleep"]}]}}`, name)
	tmp := filepath.Join(e.manifests, "."+name)
	if err := os.WriteFile(tmp, []byte(pod), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(e.manifests, name+".json")) // appear whole, at once
}

// startOne writes one manifest and polls the runtime until its container runs.
func (e *env) startOne(name string) (time.Duration, error) {
	start := time.Now()
	if err := e.write(name); err != nil {
		return 0, err
	}
	if err := e.waitRunning(1, time.Minute); err != nil {
		return 0, err
	}
	d := time.Since(start)
	return d, e.clear()
}

func (e *env) running() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := e.rt.ListContainers(ctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{
		State: &cri.ContainerStateValue{State: cri.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range resp.Containers {
		if strings.HasSuffix(c.Labels["io.kubernetes.pod.name"], "-"+node) {
			n++
		}
	}
	return n, nil
}

func (e *env) waitRunning(want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := e.running()
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d containers running after %v", n, want, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clear deletes every manifest and waits until the runtime holds none of the bench's sandboxes.
func (e *env) clear() error {
	entries, _ := os.ReadDir(e.manifests)
	for _, en := range entries {
		_ = os.Remove(filepath.Join(e.manifests, en.Name()))
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := e.rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
		cancel()
		if err != nil {
			return err
		}
		left := 0
		for _, s := range resp.Items {
			if strings.HasSuffix(s.Labels["io.kubernetes.pod.name"], "-"+node) {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("bench pods not removed within 2 minutes")
}
