//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The local control plane (hack/control-plane.sh up) the cluster tests join.
var (
	adminKubeconfig = envOr("NODELET_ADMIN_KUBECONFIG", "/var/lib/nodelet-cp/admin.kubeconfig")
	controlPlane    = envOr("NODELET_CONTROL_PLANE", "hack/control-plane.sh")
	clusterCA       = "/var/lib/nodelet-cp/pki/ca.crt"
)

// cluster is a nodelet joined to the control plane as node e2e-node, plus an admin client.
type cluster struct {
	*nodelet
	admin   kubernetes.Interface
	ns      string
	started time.Time // just before the nodelet started
}

// joinCluster starts nodelet in cluster mode and gives the test its own namespace. Cleanup
// deletes the namespace and waits until the runtime holds none of its pods.
func joinCluster(t *testing.T, extraArgs ...string) *cluster {
	t.Helper()
	admin := adminClient(t)
	kubeconfig := nodeKubeconfig(t)
	started := time.Now()
	n := startNodelet(t, append([]string{"--kubeconfig=" + kubeconfig, "--client-ca-file=" + clusterCA}, extraArgs...)...)
	c := &cluster{nodelet: n, admin: admin, ns: "e2e-" + rand.String(6), started: started}
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.cleanup) // runs before the nodelet's own cleanup: last registered, first run
	return c
}

func (c *cluster) cleanup() {
	ctx, cancel := criCtx()
	defer cancel()
	_ = c.admin.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{})
	if c.cmd == nil {
		c.start()
	}
	testutil.WaitFor(c.t, 90*time.Second, "namespace pods gone from the runtime", func() (bool, string) {
		n := len(namespaceSandboxes(c.t, c.ns))
		return n == 0, fmt.Sprintf("%d sandboxes", n)
	})
}

func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		t.Fatalf("no control plane (%v); start it with `make control-plane`", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// nodeKubeconfig writes (once) the kubeconfig of identity system:node:e2e-node.
func nodeKubeconfig(t *testing.T) string {
	t.Helper()
	path := "/var/lib/nodelet-cp/node-" + nodeName + ".kubeconfig"
	if _, err := os.Stat(path); err == nil {
		return path
	}
	out, err := exec.Command(repoPath(controlPlane), "node-kubeconfig", nodeName).CombinedOutput()
	if err != nil {
		t.Fatalf("node kubeconfig: %v\n%s", err, out)
	}
	return path
}

func repoPath(rel string) string { return "../../" + rel }

func namespaceSandboxes(t *testing.T, ns string) []string {
	var out []string
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		t.Fatalf("ListPodSandbox: %v", err)
	}
	for _, s := range resp.Items {
		if s.Labels["io.kubernetes.pod.namespace"] == ns {
			out = append(out, s.Id)
		}
	}
	return out
}

// podSpec is a busybox pod bound to our node.
func podSpec(name, script string) *v1.Pod {
	grace := int64(5)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "main", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", script},
			}},
		},
	}
}

func (c *cluster) createPod(p *v1.Pod) *v1.Pod {
	c.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	out, err := c.admin.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *cluster) getPod(name string) (*v1.Pod, error) {
	ctx, cancel := criCtx()
	defer cancel()
	return c.admin.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
}

// waitPodPhase waits until the API shows the pod in phase.
func (c *cluster) waitPodPhase(name string, phase v1.PodPhase, timeout time.Duration) *v1.Pod {
	c.t.Helper()
	var pod *v1.Pod
	testutil.WaitFor(c.t, timeout, name+" "+string(phase), func() (bool, string) {
		p, err := c.getPod(name)
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return p.Status.Phase == phase, string(p.Status.Phase) + " " + p.Status.Reason
	})
	return pod
}

func (c *cluster) waitPodGone(name string, timeout time.Duration) {
	c.t.Helper()
	testutil.WaitFor(c.t, timeout, name+" deleted", func() (bool, string) {
		_, err := c.getPod(name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func (c *cluster) node() *v1.Node {
	c.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	n, err := c.admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// waitReady waits until this nodelet has posted Ready: the Node object may still carry the
// previous test's Ready condition.
func (c *cluster) waitReady(t *testing.T) {
	t.Helper()
	waitNodeReadySince(t, c.admin, c.started, 10*time.Second)
}

// waitNodeReadySince waits until a kubelet started at started has posted the node Ready.
func waitNodeReadySince(t *testing.T, admin kubernetes.Interface, started time.Time, timeout time.Duration) {
	t.Helper()
	testutil.WaitFor(t, timeout, "node Ready", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		// The API keeps heartbeat times in whole seconds.
		return nodeReady(n) && !readySince(n).Before(started.Truncate(time.Second)), "not ready yet"
	})
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// readySince is the Ready condition's last heartbeat: when this nodelet last posted it.
func readySince(n *v1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

func condition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", adminKubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// podContainers lists the runtime's containers of an API pod in the test namespace.
func (c *cluster) podContainers(name string) []*cri.Container {
	c.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ListContainers(ctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": c.ns},
	}})
	if err != nil {
		c.t.Fatalf("ListContainers: %v", err)
	}
	return resp.Containers
}

func runScript(t *testing.T, script string, args ...string) {
	t.Helper()
	out, err := exec.Command(script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
}
