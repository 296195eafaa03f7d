// Command bench-noisyprobe measures what a pod with noisy failing exec probes costs the node
// agent: a static pod of two containers whose readiness probes print megabytes of changing
// text every second, run for a while under nodelet standalone and then under the upstream
// kubelet, one after the other on the same runtime. It prints each agent's RSS (peak and at
// the end) and the CPU time it used meanwhile. It starts and stops both agents itself.
//
// The upstream kubelet removes every pod, pod cgroup and pod log directory it does not know,
// so the bench runs both agents on a containerd instance of its own (hack/containerd.sh
// INSTANCE=noisyprobe, removed at the end) with one configuration: no QoS cgroups, pod logs
// in a directory of its own. Nothing of other work on the machine is touched.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/nodelet/nodelet/hack/kerneltunables"
	"github.com/nodelet/nodelet/hack/procstat"
)

const node = "noisybench"

// instance is the bench's own containerd (hack/containerd.sh INSTANCE=...).
const instance = "noisyprobe"

var endpoint = "unix:///run/nodelet-" + instance + "/containerd/containerd.sock"

type options struct {
	nodelet, kubelet string
	duration         time.Duration
	mib              int
}

func main() {
	var o options
	flag.StringVar(&o.nodelet, "nodelet", "_output/bin/nodelet", "nodelet binary")
	flag.StringVar(&o.kubelet, "kubelet", "_output/cp/bin/kubelet", "upstream kubelet binary (v1.33.4)")
	flag.DurationVar(&o.duration, "duration", time.Minute, "how long each agent runs the noisy pod")
	flag.IntVar(&o.mib, "mib", 2, "MiB each probe prints per run (one run a second per container)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-noisyprobe:", err)
		os.Exit(1)
	}
}

// figures is what one agent cost under the noisy pod.
type figures struct {
	name                 string
	idle, peak, end, cpu float64
}

func run(o options) error {
	stop, err := ownContainerd()
	defer stop()
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := cri.NewRuntimeServiceClient(conn)
	base, err := os.MkdirTemp("", "noisyprobe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	defer kerneltunables.Save()() // both agents rewrite some at start-up
	fmt.Printf("a pod of 2 containers whose exec probes print %d MiB each and fail every second, %v per agent\n", o.mib, o.duration)
	var out []figures
	for _, s := range []struct{ name, bin string }{{"nodelet", o.nodelet}, {"upstream kubelet", o.kubelet}} {
		dir := filepath.Join(base, strings.ReplaceAll(s.name, " ", "-"))
		f, err := measure(rt, o, s.name, s.bin, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		out = append(out, f)
	}
	fmt.Printf("\n%-18s %12s %12s %12s %10s\n", "agent", "RSS idle", "RSS peak", "RSS end", "CPU")
	for _, f := range out {
		fmt.Printf("%-18s %8.1f MiB %8.1f MiB %8.1f MiB %8.1f s\n", f.name, f.idle, f.peak, f.end, f.cpu)
	}
	return nil
}

// measure starts one agent on a manifest directory under dir, runs the noisy pod for the
// duration while sampling the agent's RSS, then removes the pod and stops the agent.
func measure(rt cri.RuntimeServiceClient, o options, name, bin, dir string) (figures, error) {
	f := figures{name: name}
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return f, err
	}
	argv, err := agentArgs(dir)
	if err != nil {
		return f, err
	}
	logPath := filepath.Join(os.TempDir(), "noisyprobe-"+strings.ReplaceAll(name, " ", "-")+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return f, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return f, err
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); <-exited }()
	fmt.Printf("==> %s (pid %d, log %s)\n", name, pid, logPath)
	time.Sleep(5 * time.Second)
	f.idle = procstat.RSSMiB(pid)

	manifest := filepath.Join(manifests, "noisy.yaml")
	if err := os.WriteFile(manifest, []byte(noisyPod(o.mib)), 0o644); err != nil {
		return f, err
	}
	if err := waitFor(2*time.Minute, "both containers running", func() (bool, error) {
		c, err := count(rt)
		return c.running >= 2, err
	}); err != nil {
		return f, err
	}
	cpu0 := procstat.CPUSeconds(pid)
	for end := time.Now().Add(o.duration); time.Now().Before(end); time.Sleep(time.Second) {
		select {
		case <-exited:
			return f, fmt.Errorf("exited; see %s", logPath)
		default:
		}
		f.peak = max(f.peak, procstat.RSSMiB(pid))
	}
	f.end = procstat.RSSMiB(pid)
	f.cpu = procstat.CPUSeconds(pid) - cpu0
	fmt.Printf("    RSS peak %.1f MiB, end %.1f MiB, CPU %.1f s\n", f.peak, f.end, f.cpu)

	if err := os.Remove(manifest); err != nil {
		return f, err
	}
	return f, waitFor(2*time.Minute, "the pod removed", func() (bool, error) {
		c, err := count(rt)
		return c.own == 0, err
	})
}

// agentArgs writes the KubeletConfiguration both agents run with and returns their flags: the
// bench's runtime and manifest directory, cgroupfs without QoS cgroups (the node's other pods'
// cgroups are not theirs to clean up), pod logs under dir, no swap check, the API on loopback
// only with nothing to authenticate against.
func agentArgs(dir string) ([]string, error) {
	no, yes := false, true
	healthz := int32(0)
	cfg := kubeletv1beta1.KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		ContainerRuntimeEndpoint: endpoint,
		StaticPodPath:            filepath.Join(dir, "manifests"),
		PodLogsDir:               filepath.Join(dir, "pod-logs"),
		CgroupDriver:             "cgroupfs",
		CgroupsPerQOS:            &no,
		EnforceNodeAllocatable:   []string{"none"},
		FailSwapOn:               &no,
		Address:                  "127.0.0.1",
		Port:                     10350,
		ReadOnlyPort:             0,
		HealthzPort:              &healthz,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &no},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &yes},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	return []string{"--config=" + path, "--hostname-override=" + node, "--root-dir=" + filepath.Join(dir, "root")}, nil
}

// ownContainerd starts the bench's containerd instance with the sandbox image and busybox;
// stop stops it and deletes its state (that instance's only).
func ownContainerd() (stop func(), err error) {
	script := func(cmd string) error {
		c := exec.Command("hack/containerd.sh", cmd)
		c.Env = append(os.Environ(), "INSTANCE="+instance)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("INSTANCE=%s hack/containerd.sh %s: %v\n%s", instance, cmd, err, out)
		}
		return nil
	}
	stop = func() {
		if err := script("clean"); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if err := script("start"); err != nil {
		return stop, err
	}
	socket := strings.TrimPrefix(endpoint, "unix://")
	for _, tar := range []string{"_output/images/pause.tar", "_output/images/busybox.tar"} {
		if out, err := exec.Command("ctr", "--address", socket, "-n", "k8s.io", "images", "import", tar).CombinedOutput(); err != nil {
			return stop, fmt.Errorf("importing %s: %v\n%s (run `make images` first)", tar, err, out)
		}
	}
	return stop, nil
}

// noisyPod is the pod both agents run: each probe run prints a different first line and then
// mib MiB, and fails.
func noisyPod(mib int) string {
	probe := fmt.Sprintf(`echo "run $RANDOM$RANDOM"; yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c %d; exit 1`, mib<<20)
	container := func(name string) string {
		return fmt.Sprintf(`  - name: %s
    image: nodelet.local/busybox:1.36
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    readinessProbe:
      exec:
        command: ["sh", "-c", %q]
      periodSeconds: 1
      timeoutSeconds: 5
`, name, probe)
	}
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: noisy\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n" +
		container("noisy-a") + container("noisy-b")
}

// census is what the runtime holds of the bench's pod: sandboxes and running containers.
type census struct{ own, running int }

func count(rt cri.RuntimeServiceClient) (census, error) {
	var c census
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sbs, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return c, err
	}
	for _, s := range sbs.Items {
		if strings.HasSuffix(s.Labels["io.kubernetes.pod.name"], "-"+node) {
			c.own++
		}
	}
	cs, err := rt.ListContainers(ctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{
		State: &cri.ContainerStateValue{State: cri.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		return c, err
	}
	for _, ctr := range cs.Containers {
		if strings.HasSuffix(ctr.Labels["io.kubernetes.pod.name"], "-"+node) {
			c.running++
		}
	}
	return c, nil
}

func waitFor(timeout time.Duration, what string, cond func() (bool, error)) error {
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s after %v", what, timeout)
		}
	}
}
