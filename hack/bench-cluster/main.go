// Command bench-cluster measures nodelet in cluster mode on the local control plane: the start
// latency of a burst of pods, creation → Running as seen by a watch, and nodelet's RSS. It runs
// its own nodelet as node "bench-node" (start the control plane first: make control-plane).
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

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/hack/procstat"
)

const nodeName = "bench-node"

func main() {
	bin := flag.String("nodelet", "_output/bin/nodelet", "nodelet binary")
	admin := flag.String("kubeconfig", "/var/lib/nodelet-cp/admin.kubeconfig", "admin kubeconfig")
	endpoint := flag.String("endpoint", "unix:///run/nodelet/containerd/containerd.sock", "CRI endpoint")
	pods := flag.Int("pods", 30, "pods in the burst")
	flag.Parse()
	if err := run(*bin, *admin, *endpoint, *pods); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cluster:", err)
		os.Exit(1)
	}
}

func run(bin, admin, endpoint string, n int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		return fmt.Errorf("%w (start the control plane: make control-plane)", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	out, err := exec.Command("hack/control-plane.sh", "node-kubeconfig", nodeName).Output()
	if err != nil {
		return fmt.Errorf("node kubeconfig: %w", err)
	}
	base, err := os.MkdirTemp("", "nodelet-bench-cluster")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	cmd := exec.Command(bin, "--kubeconfig="+strings.TrimSpace(string(out)), "--root-dir="+filepath.Join(base, "root"),
		"--container-runtime-endpoint="+endpoint, "--hostname-override="+nodeName, "--healthz-port=0", "--max-pods=250", "--fail-swap-on=false", "-v=2")
	logf, _ := os.Create(filepath.Join(os.TempDir(), "nodelet-bench-cluster.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _, _ = cmd.Process.Wait() }()
	ctx := context.Background()
	if err := waitNodeReady(ctx, client); err != nil {
		return err
	}
	ns := fmt.Sprintf("bench-%d", time.Now().Unix())
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer cleanup(client, ns)
	time.Sleep(3 * time.Second)
	idle := procstat.RSSMiB(cmd.Process.Pid)
	lat, err := burst(ctx, client, ns, n)
	if err != nil {
		return err
	}
	time.Sleep(10 * time.Second)
	fmt.Printf("%d-pod burst, create → Running (watch): p50 %v, p90 %v, p99 %v, all %v\n", n,
		pct(lat, 50), pct(lat, 90), pct(lat, 99), lat[len(lat)-1].Round(time.Millisecond))
	fmt.Printf("nodelet RSS: idle %.1f MiB, with %d pods running %.1f MiB\n", idle, n, procstat.RSSMiB(cmd.Process.Pid))
	return nil
}

// burst creates n pods bound to the node at once and returns each one's create → Running time.
func burst(ctx context.Context, client kubernetes.Interface, ns string, n int) ([]time.Duration, error) {
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	created := map[string]time.Time{}
	grace := int64(1)
	for i := 0; i < n; i++ {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%03d", i)},
			Spec: v1.PodSpec{NodeName: nodeName, TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{
				Name: "c", Image: "nodelet.local/testhelper:v1", ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"},
			}}},
		}
		created[p.Name] = time.Now()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	running := map[string]time.Duration{}
	timeout := time.After(5 * time.Minute)
	for len(running) < n {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Status.Phase != v1.PodRunning {
				continue
			}
			if _, seen := running[p.Name]; !seen {
				running[p.Name] = time.Since(created[p.Name])
			}
		case <-timeout:
			return nil, fmt.Errorf("only %d of %d pods Running after 5 minutes", len(running), n)
		}
	}
	lat := make([]time.Duration, 0, n)
	for _, d := range running {
		lat = append(lat, d)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i].Round(time.Millisecond)
}

func waitNodeReady(ctx context.Context, client kubernetes.Interface) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		n, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && time.Since(c.LastHeartbeatTime.Time) < 15*time.Second {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("node %s not Ready within a minute", nodeName)
}

func cleanup(client kubernetes.Interface, ns string) {
	ctx := context.Background()
	_ = client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
