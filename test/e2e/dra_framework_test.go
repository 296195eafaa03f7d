//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The DRA harness: upstream's own test driver (k8s.io/kubernetes v1.33.4 test/e2e/dra/test-driver,
// built by `make dra-driver`) runs as the node's DRA plugin in kubelet-plugin mode. It publishes
// a ResourceSlice of draDevices devices for the node and, on NodePrepareResources, writes one CDI
// spec per claim into containerd 2's cdi_spec_dirs, setting env vars from the claim's opaque
// config ("user_<key>") and claim_<claim>_<request>=true; NodeUnprepareResources removes it.
var (
	draDriverBin = envOr("DRA_DRIVER_BIN", "../../_output/cp/bin/dra-test-driver")
	// cdiSpecDir is the CRI plugin's cdi_spec_dirs of the project's containerd 2 (hack/lib/runtime2.sh).
	cdiSpecDir = envOr("NODELET_CDI_SPEC_DIR", "/etc/nodelet/containerd/cdi")
)

const (
	draDriverName = "test-driver.cdi.k8s.io"
	draClass      = "e2e-dra"
	draRequest    = "dev"
	draDevices    = 8
	draNSPrefix   = "e2e-dra-"
	draGate       = "--feature-gates=DynamicResourceAllocation=true"
	// draPrepare and draUnprepare are the gRPC methods of the kubelet's DRA service (v1beta1).
	draPrepare   = "DRAPlugin/NodePrepareResources"
	draUnprepare = "DRAPlugin/NodeUnprepareResources"
)

// draKubelet is the kubelet under test joined to the control plane as the node, with DRA on:
// nodelet, or the upstream kubelet v1.33.4, which proves the harness itself.
type draKubelet struct {
	rootDir string
	start   func()
	end     func(syscall.Signal) // stops it, leaving the pods running
	running func() bool
}

// newDRAKubelet makes (without starting) the named kubelet, "nodelet" or "upstream". Cleanup
// stops it, after the driver and the test's namespaces are cleaned up.
func newDRAKubelet(t *testing.T, which string) *draKubelet {
	t.Helper()
	kubeconfig := nodeKubeconfig(t)
	switch which {
	case "nodelet":
		n := newNodelet(t, "--kubeconfig="+kubeconfig, "--client-ca-file="+clusterCA, draGate)
		t.Cleanup(func() {
			n.stop(syscall.SIGTERM)
			if t.Failed() {
				t.Logf("nodelet log (last 6000 bytes):\n%s", tail(n.log(), 6000))
			}
		})
		return &draKubelet{rootDir: n.rootDir, start: n.start, end: n.stop,
			running: func() bool { return n.cmd != nil }}
	case "upstream":
		base := t.TempDir()
		manifests, rootDir := filepath.Join(base, "manifests"), filepath.Join(base, "root")
		if err := os.MkdirAll(manifests, 0o755); err != nil {
			t.Fatal(err)
		}
		// Its root directory is bind-mounted onto itself: undone once it no longer runs.
		t.Cleanup(func() { _ = syscall.Unmount(rootDir, syscall.MNT_DETACH) })
		k := newUpstreamKubelet(t, base, manifests, rootDir)
		k.extraArgs = []string{"--kubeconfig=" + kubeconfig, draGate}
		t.Cleanup(k.stop)
		return &draKubelet{rootDir: rootDir, start: k.start, end: k.end,
			running: func() bool { return k.cmd != nil }}
	}
	t.Fatalf("unknown kubelet %q", which)
	return nil
}

// draDriver is one run after another of the test driver's node plugin, each logging to its own
// file (-v=6: every gRPC call with its request and response).
type draDriver struct {
	args []string
	dir  string
	cmd  *exec.Cmd
	runs int
}

func newDRADriver(t *testing.T, kubeletRoot string) *draDriver {
	t.Helper()
	bin, err := filepath.Abs(draDriverBin)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		t.Fatalf("DRA test driver: %v (`make dra-driver` builds it; DRA_DRIVER_BIN names another)", err)
	}
	// The driver makes neither its socket's directory nor the registration directory.
	registry, plugins := filepath.Join(kubeletRoot, "plugins_registry"), filepath.Join(kubeletRoot, "plugins")
	for _, dir := range []string{registry, filepath.Join(plugins, draDriverName), cdiSpecDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &draDriver{dir: t.TempDir(), args: []string{bin, "-v=6", "--kubeconfig=" + adminKubeconfig,
		"kubelet-plugin", "--node-name=" + nodeName, "--cdi-dir=" + cdiSpecDir,
		"--plugin-registration-path=" + registry, "--datadir=" + plugins,
		fmt.Sprintf("--num-devices=%d", draDevices)}}
}

func (d *draDriver) logPath(run int) string {
	return filepath.Join(d.dir, fmt.Sprintf("driver-%d.log", run))
}

func (d *draDriver) start(t *testing.T) {
	t.Helper()
	d.runs++
	logf, err := os.Create(d.logPath(d.runs))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d.cmd = exec.Command(d.args[0], d.args[1:]...)
	// The driver prefers $KUBECONFIG to its flag.
	d.cmd.Env = append(os.Environ(), "KUBECONFIG="+adminKubeconfig)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

// stop ends the driver as its DaemonSet would: SIGTERM, on which it removes its sockets.
func (d *draDriver) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = d.cmd.Process.Wait()
	d.cmd = nil
}

// log is what run (1 for the first) logged.
func (d *draDriver) log(run int) string {
	b, _ := os.ReadFile(d.logPath(run))
	return string(b)
}

// calls counts the gRPC requests of the method the driver received over all its runs that
// name the claim (every request when uid is empty).
func (d *draDriver) calls(method, uid string) int {
	n := 0
	for run := 1; run <= d.runs; run++ {
		for _, line := range strings.Split(d.log(run), "\n") {
			// klog quotes the message: `"handling request"` is the call, not its success line.
			if strings.Contains(line, `"handling request" `) && strings.Contains(line, method) && strings.Contains(line, uid) {
				n++
			}
		}
	}
	return n
}

// waitRegistered waits until the current run was registered by the kubelet: the kubelet's
// NotifyRegistrationStatus answered (the driver fails the call when registration failed).
func (d *draDriver) waitRegistered(t *testing.T, timeout time.Duration) {
	t.Helper()
	testutil.WaitFor(t, timeout, "the DRA driver registered by the kubelet", func() (bool, string) {
		for _, line := range strings.Split(d.log(d.runs), "\n") {
			if strings.Contains(line, "NotifyRegistrationStatus") && strings.Contains(line, `"handling request succeeded"`) {
				return true, ""
			}
		}
		if d.cmd != nil && d.cmd.ProcessState != nil {
			return false, "driver exited"
		}
		return false, tail(d.log(d.runs), 1500)
	})
}

// draEnv is one kubelet and the driver, with the DeviceClass of the driver's devices.
type draEnv struct {
	t       *testing.T
	admin   kubernetes.Interface
	kubelet *draKubelet
	driver  *draDriver
}

// newDRAEnv starts the kubelet, then the driver (the upstream kubelet wipes the node's
// ResourceSlices as it starts; the driver publishes its own again), and waits until the
// node is Ready, the driver registered and its slice published.
func newDRAEnv(t *testing.T, which string) *draEnv {
	t.Helper()
	admin := adminClient(t)
	requireDRAAPI(t, admin)
	e := &draEnv{t: t, admin: admin, kubelet: newDRAKubelet(t, which)}
	e.driver = newDRADriver(t, e.kubelet.rootDir)
	t.Cleanup(e.cleanupDriver) // after every scenario's namespace is gone, before the kubelet stops
	e.createDeviceClass()
	started := time.Now()
	e.kubelet.start()
	waitNodeReadySince(t, e.admin, started, 60*time.Second)
	e.driver.start(t)
	e.driver.waitRegistered(t, 60*time.Second)
	e.waitSlice(t)
	return e
}

// requireDRAAPI fails the test (not skips it) when the control plane does not serve DRA.
func requireDRAAPI(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	if _, err := admin.Discovery().ServerResourcesForGroupVersion(resourceapi.SchemeGroupVersion.String()); err != nil {
		t.Fatalf("the control plane does not serve %s (%v): DRA is on by default in hack/control-plane.sh; "+
			"restart it with `hack/control-plane.sh up` (NODELET_CP_DRA unset)", resourceapi.SchemeGroupVersion, err)
	}
}

func (e *draEnv) createDeviceClass() {
	e.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	_ = e.admin.ResourceV1beta1().DeviceClasses().Delete(ctx, draClass, metav1.DeleteOptions{}) // a failed run's
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: draClass},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriverName)}}}}}
	if _, err := e.admin.ResourceV1beta1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// cleanupDriver stops the driver, then removes what it leaves: the node's slices of the
// driver, its CDI specs, and the DeviceClass.
func (e *draEnv) cleanupDriver() {
	if e.kubelet.running() {
		testutil.WaitFor(e.t, 150*time.Second, "the scenarios' sandboxes removed", func() (bool, string) {
			n := len(draSandboxes(e.t))
			return n == 0, fmt.Sprintf("%d sandboxes", n)
		})
	}
	e.driver.stop()
	if e.t.Failed() {
		for run := 1; run <= e.driver.runs; run++ {
			e.t.Logf("DRA driver run %d log (last 4000 bytes):\n%s", run, tail(e.driver.log(run), 4000))
		}
	}
	ctx, cancel := criCtx()
	defer cancel()
	_ = e.admin.ResourceV1beta1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName + ",spec.driver=" + draDriverName})
	_ = e.admin.ResourceV1beta1().DeviceClasses().Delete(ctx, draClass, metav1.DeleteOptions{})
	specs, _ := filepath.Glob(filepath.Join(cdiSpecDir, draDriverName+"-*.json"))
	for _, f := range specs {
		_ = os.Remove(f)
	}
}

// draSandboxes lists the runtime's sandboxes of the DRA scenarios' namespaces.
func draSandboxes(t *testing.T) []*cri.PodSandbox {
	return sandboxesWhere(t, func(sb *cri.PodSandbox) bool {
		return strings.HasPrefix(sb.Labels["io.kubernetes.pod.namespace"], draNSPrefix)
	})
}

// waitSlice waits until the node's ResourceSlice of the driver lists its devices.
func (e *draEnv) waitSlice(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, "the driver's ResourceSlice for the node", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		slices, err := e.admin.ResourceV1beta1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: "spec.nodeName=" + nodeName + ",spec.driver=" + draDriverName})
		if err != nil {
			return false, err.Error()
		}
		for _, s := range slices.Items {
			if len(s.Spec.Devices) == draDevices {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d slices", len(slices.Items))
	})
}

// draNS is one scenario's namespace. Cleanup deletes it and waits until its pods are gone from
// the API and none of their sandboxes is ready (the kubelet started again if the scenario left it
// stopped). The upstream kubelet removes stopped sandboxes in its minutely garbage collection:
// the environment's cleanup waits for that once, at the end.
type draNS struct {
	*draEnv
	t  *testing.T
	ns string
}

func (e *draEnv) namespace(t *testing.T) *draNS {
	t.Helper()
	s := &draNS{draEnv: e, t: t, ns: draNSPrefix + rand.String(5)}
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := e.admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := criCtx()
		defer cancel()
		_ = e.admin.CoreV1().Namespaces().Delete(ctx, s.ns, metav1.DeleteOptions{})
		if !e.kubelet.running() {
			e.kubelet.start()
		}
		testutil.WaitFor(t, 90*time.Second, "the namespace's pods stopped and gone from the API", func() (bool, string) {
			ctx, cancel := criCtx()
			defer cancel()
			pods, err := e.admin.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			n := len(s.readySandboxes(""))
			return len(pods.Items) == 0 && n == 0, fmt.Sprintf("%d pods, %d ready sandboxes", len(pods.Items), n)
		})
	})
	return s
}

func (s *draNS) pod(name string) *v1.Pod {
	s.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	p, err := s.admin.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// waitRunning waits until the API shows the pod Running with every container ready.
func (s *draNS) waitRunning(name string, timeout time.Duration) *v1.Pod {
	s.t.Helper()
	var pod *v1.Pod
	testutil.WaitFor(s.t, timeout, name+" Running and Ready", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		p, err := s.admin.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return p.Status.Phase == v1.PodRunning && condition(p, v1.PodReady) == v1.ConditionTrue,
			fmt.Sprintf("%s %s %v", p.Status.Phase, p.Status.Reason, p.Status.Conditions)
	})
	return pod
}

// deletePod deletes the pod and waits until it is gone from the API and its sandbox stopped.
func (s *draNS) deletePod(name string) {
	s.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	if err := s.admin.CoreV1().Pods(s.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatal(err)
	}
	testutil.WaitFor(s.t, 60*time.Second, name+" gone", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		_, err := s.admin.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprint("API: ", err)
		}
		n := len(s.readySandboxes(name))
		return n == 0, fmt.Sprintf("%d ready sandboxes", n)
	})
}

// podSandboxes lists the runtime's sandboxes of the namespace's pod (every pod's when name is
// empty), in any state.
func (s *draNS) podSandboxes(name string) []*cri.PodSandbox {
	labels := map[string]string{"io.kubernetes.pod.namespace": s.ns}
	if name != "" {
		labels["io.kubernetes.pod.name"] = name
	}
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{Filter: &cri.PodSandboxFilter{LabelSelector: labels}})
	if err != nil {
		s.t.Fatalf("ListPodSandbox: %v", err)
	}
	return resp.Items
}

func (s *draNS) readySandboxes(name string) []*cri.PodSandbox {
	var out []*cri.PodSandbox
	for _, sb := range s.podSandboxes(name) {
		if sb.State == cri.PodSandboxState_SANDBOX_READY {
			out = append(out, sb)
		}
	}
	return out
}

// containers lists the runtime's containers of the pod, optionally of one name.
func (s *draNS) containers(pod, name string) []*cri.Container {
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ListContainers(ctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": s.ns}}})
	if err != nil {
		s.t.Fatalf("ListContainers: %v", err)
	}
	var out []*cri.Container
	for _, c := range resp.Containers {
		if name == "" || c.Metadata.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// env reads an environment variable (key: letters, digits and _) from inside the pod's running
// container, with its shell: the test image has no printenv.
func (s *draNS) env(pod, container, key string) string {
	s.t.Helper()
	for _, c := range s.containers(pod, container) {
		if c.State != cri.ContainerState_CONTAINER_RUNNING {
			continue
		}
		ctx, cancel := criCtx()
		defer cancel()
		resp, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: c.Id, Cmd: []string{"sh", "-c", "echo \"$" + key + "\""}, Timeout: 5})
		if err != nil {
			s.t.Fatalf("exec in %s/%s: %v", pod, container, err)
		}
		return strings.TrimSpace(string(resp.Stdout))
	}
	s.t.Fatalf("%s/%s has no running container", pod, container)
	return ""
}
