// Command gen has the real upstream kubelet write cpu_manager_state, for the compatibility
// test's golden file: it serves the kubelet an in-memory CRI (internal/cri/fakecri, so no real
// runtime's pods are touched), runs it standalone with the static policy and half a CPU
// reserved on a static Guaranteed pod asking for one CPU, and copies the state file once the
// pod's assignment is in it. Its cgroups live under their own root (-cgroup-root) and the
// kernel tunables the kubelet rewrites are put back. Run as root on a 2-CPU machine:
//
//	go run ./internal/cm/cpumanager/testdata/upstream/gen -kubelet _output/cp/bin/kubelet \
//	    -out internal/cm/cpumanager/testdata/upstream
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/cri/fakecri"
)

const image = "nodelet.local/busybox:1.36"

// The sysctls the kubelet rewrites at start (as hack/bench knows); restored afterwards.
var tunables = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

func main() {
	kubelet := flag.String("kubelet", "_output/cp/bin/kubelet", "the upstream kubelet binary")
	out := flag.String("out", "internal/cm/cpumanager/testdata/upstream", "where the state file goes")
	cgroupRoot := flag.String("cgroup-root", "/nodelet-golden", "the kubelet's own cgroup root")
	flag.Parse()
	if err := run(*kubelet, *out, *cgroupRoot); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(kubelet, out, cgroupRoot string) error {
	saved := map[string][]byte{}
	for _, k := range tunables {
		v, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			return err
		}
		saved[k] = v
	}
	defer func() {
		for k, v := range saved {
			_ = os.WriteFile("/proc/sys/"+k, v, 0o644)
		}
	}()
	work, err := os.MkdirTemp("", "golden")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	endpoint, stop, err := serveFakeCRI(filepath.Join(work, "cri.sock"))
	if err != nil {
		return err
	}
	defer stop()
	root := filepath.Join(work, "root")
	if err := writeInputs(work, endpoint, cgroupRoot); err != nil {
		return err
	}
	cmd := exec.Command(kubelet, "--config="+filepath.Join(work, "kubelet.yaml"), "--root-dir="+root,
		"--hostname-override=golden", "--cert-dir="+filepath.Join(work, "pki"), "--v=2")
	logf, err := os.Create(filepath.Join(work, "kubelet.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	defer removeCgroups(cgroupRoot)
	if err := makeCgroups(cgroupRoot); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	state, err := waitForAssignment(filepath.Join(root, "cpu_manager_state"), 2*time.Minute, exited)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(work, "kubelet.log"))
		return fmt.Errorf("%w\nkubelet log tail:\n%s", err, tailOf(string(logs), 4000))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	fmt.Printf("upstream cpu_manager_state: %s\n", state)
	return os.WriteFile(filepath.Join(out, "cpu_manager_state"), state, 0o644)
}

func serveFakeCRI(sock string) (endpoint string, stop func(), err error) {
	f := fakecri.New()
	f.AddImage(image)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return "", nil, err
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	return "unix://" + sock, srv.Stop, nil
}

func writeInputs(work, endpoint, cgroupRoot string) error {
	manifests := filepath.Join(work, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
cgroupRoot: %s
failSwapOn: false
staticPodPath: %s
port: %d
readOnlyPort: 0
healthzPort: 0
cpuManagerPolicy: static
cpuManagerReconcilePeriod: 1s
systemReserved: {cpu: 500m}
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
`, endpoint, cgroupRoot, manifests, freePort())
	if err := os.WriteFile(filepath.Join(work, "kubelet.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default, uid: 6f1a2b3c-0000-4000-8000-00000000c0de}
spec:
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    resources:
      requests: {cpu: "1", memory: 32Mi}
      limits: {cpu: "1", memory: 32Mi}
`, image)
	return os.WriteFile(filepath.Join(manifests, "pinned.yaml"), []byte(pod), 0o644)
}

// freePort is a loopback port nothing listens on now (the kubelet's API port must be set).
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 10299
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitForAssignment(path string, timeout time.Duration, exited <-chan struct{}) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		data, err := os.ReadFile(path)
		if err == nil && bytes.Contains(data, []byte(`"entries"`)) {
			return data, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("the kubelet exited before writing an assignment to %s", path)
		case <-ctx.Done():
			return nil, fmt.Errorf("no assignment in %s after %v (last read: %q, %v)", path, timeout, data, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// makeCgroups makes the kubelet's cgroup root in every v1 hierarchy (the kubelet wants it to
// exist), giving its cpuset the parent's CPUs and memory nodes.
func makeCgroups(root string) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue // not a hierarchy
		}
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the kubelet's cgroup tree in every v1 hierarchy, deepest first.
func removeCgroups(root string) {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
