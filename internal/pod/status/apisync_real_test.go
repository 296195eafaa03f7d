//go:build real

package status_test

// End-to-end check of the cluster-mode pod pieces (API source, status syncer, mirror client)
// against a real API server. Run with
//
//	NODELET_E2E_KUBECONFIG=/var/lib/nodelet-cp/admin.kubeconfig go test -tags real ./internal/pod/status -run Real -v
//
// The node's own credentials (hack/control-plane.sh node-kubeconfig apipods-test) are used for
// nodelet's calls when NODELET_E2E_NODE_KUBECONFIG names them or they lie next to the admin
// kubeconfig, so the Node authorizer and NodeRestriction are exercised too.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/pod/status"
)

const (
	e2eNode      = "apipods-test"
	e2eNamespace = "default"
	e2eTimeout   = 30 * time.Second
)

func e2eClients(t *testing.T) (admin, node kubernetes.Interface) {
	t.Helper()
	adminPath := os.Getenv("NODELET_E2E_KUBECONFIG")
	if adminPath == "" {
		t.Skip("NODELET_E2E_KUBECONFIG not set")
	}
	admin = clientFor(t, adminPath)
	nodePath := os.Getenv("NODELET_E2E_NODE_KUBECONFIG")
	if nodePath == "" {
		nodePath = filepath.Join(filepath.Dir(adminPath), "node-"+e2eNode+".kubeconfig")
	}
	if _, err := os.Stat(nodePath); err != nil {
		t.Logf("no node kubeconfig at %s; nodelet's calls use the admin identity", nodePath)
		return admin, admin
	}
	t.Logf("nodelet's calls use %s", nodePath)
	return admin, clientFor(t, nodePath)
}

func clientFor(t *testing.T, path string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// e2eEnv is one test's cluster objects and running nodelet pieces.
type e2eEnv struct {
	t         *testing.T
	ctx       context.Context
	admin     kubernetes.Interface
	node      kubernetes.Interface
	snapshots chan []*v1.Pod
	syncer    *status.APISyncer
	mirrors   *pod.MirrorSet
}

func setupE2E(t *testing.T) *e2eEnv {
	admin, node := e2eClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env := &e2eEnv{t: t, ctx: ctx, admin: admin, node: node, snapshots: make(chan []*v1.Pod), mirrors: pod.NewMirrorSet()}

	nodes := admin.CoreV1().Nodes()
	_ = nodes.Delete(ctx, e2eNode, metav1.DeleteOptions{}) // a leftover of an aborted run
	env.waitGone(func() error { _, err := nodes.Get(ctx, e2eNode, metav1.GetOptions{}); return err })
	if _, err := nodes.Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: e2eNode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		zero := int64(0)
		pods, _ := admin.CoreV1().Pods(e2eNamespace).List(bg, metav1.ListOptions{FieldSelector: "spec.nodeName=" + e2eNode})
		if pods != nil {
			for _, p := range pods.Items {
				_ = admin.CoreV1().Pods(e2eNamespace).Delete(bg, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			}
		}
		_ = admin.CoreV1().Pods(e2eNamespace).Delete(bg, "apipods-elsewhere", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err := nodes.Delete(bg, e2eNode, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting node: %v", err)
		}
	})

	go source.NewAPISource(kubeclienttest.FromClientset(node), e2eNode, env.snapshots).Run(ctx)
	env.syncer = status.NewAPISyncer(kubeclienttest.FromClientset(node), env.mirrors.Lookup)
	go env.syncer.Run(ctx)
	return env
}

// waitSnapshot waits for a snapshot satisfying ok and returns it.
func (e *e2eEnv) waitSnapshot(what string, ok func([]*v1.Pod) bool) []*v1.Pod {
	e.t.Helper()
	deadline := time.After(e2eTimeout)
	for {
		select {
		case pods := <-e.snapshots:
			if ok(pods) {
				return pods
			}
		case <-deadline:
			e.t.Fatalf("timed out waiting for a snapshot with %s", what)
		}
	}
}

// waitPod polls the pod (as admin) until ok holds.
func (e *e2eEnv) waitPod(name, what string, ok func(*v1.Pod) bool) *v1.Pod {
	e.t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, e2eTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.admin.CoreV1().Pods(e2eNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return ok(p), nil
	})
	if err != nil {
		e.t.Fatalf("pod %s never had %s; last seen: %s", name, what, dump(last))
	}
	return last
}

func (e *e2eEnv) waitGone(get func() error) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, e2eTimeout, true, func(context.Context) (bool, error) {
		return apierrors.IsNotFound(get()), nil
	})
	if err != nil {
		e.t.Fatal("object not gone in time")
	}
}

func dump(p *v1.Pod) string {
	if p == nil {
		return "<none>"
	}
	b, _ := json.MarshalIndent(p.Status, "", "  ")
	return string(b)
}

func findPod(pods []*v1.Pod, name string) *v1.Pod {
	for _, p := range pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func findCond(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func e2ePod(name, nodeName string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e2eNamespace},
		Spec: v1.PodSpec{
			NodeName:       nodeName,
			Containers:     []v1.Container{{Name: "main", Image: "nodelet.local/busybox:1.36", Command: []string{"sleep", "3600"}}},
			ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/gate"}},
		},
	}
}

func e2eRunning(now metav1.Time) v1.PodStatus {
	cond := func(t v1.PodConditionType) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: now}
	}
	return v1.PodStatus{
		Phase: v1.PodRunning, HostIP: "192.0.2.10", HostIPs: []v1.HostIP{{IP: "192.0.2.10"}},
		PodIP: "10.85.0.42", PodIPs: []v1.PodIP{{IP: "10.85.0.42"}}, StartTime: &now,
		QOSClass: v1.PodQOSBestEffort,
		Conditions: []v1.PodCondition{
			cond(v1.PodReadyToStartContainers), cond(v1.PodInitialized), cond(v1.PodReady),
			cond(v1.ContainersReady), cond(v1.PodScheduled),
		},
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "main", Ready: true, Started: ptr.To(true), RestartCount: 0,
			Image: "nodelet.local/busybox:1.36", ImageID: "sha256:0123", ContainerID: "containerd://0123",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}},
		}},
	}
}
