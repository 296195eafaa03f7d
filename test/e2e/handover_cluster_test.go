//go:build e2e

package e2e

import (
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestHandoverAPIPodWithUpstreamKubelet joins the upstream kubelet to the control plane as the
// node, runs a Deployment's pod with a configMap volume and the projected service account token,
// then hands the node to nodelet and back: the same containers run (IDs in the pod's status
// unchanged, restart count 0, Ready throughout each hold).
func TestHandoverAPIPodWithUpstreamKubelet(t *testing.T) {
	admin := adminClient(t)
	kubeconfig := nodeKubeconfig(t)
	n, k := handoverPair(t, "--kubeconfig="+kubeconfig, "--client-ca-file="+clusterCA)
	c := &cluster{nodelet: n, admin: admin, ns: "e2e-" + rand.String(6)}
	k.extraArgs = []string{"--kubeconfig=" + kubeconfig}
	t.Cleanup(n.cleanup)
	t.Cleanup(c.cleanup) // deletes the namespace and has nodelet remove its pods
	t.Cleanup(k.stop)    // first of all: no upstream kubelet left running

	ctx, cancel := criCtx()
	defer cancel()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(c.ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.start()
	pod := podSpec("web", "exec sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
			Template: v1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}},
	}
	if _, err := admin.AppsV1().Deployments(c.ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *v1.Pod
	testutil.WaitFor(t, 120*time.Second, "the Deployment's pod running and ready under the upstream kubelet", func() (bool, string) {
		running = readyPod(t, c)
		return running != nil, "not yet"
	})
	before := running.Status.ContainerStatuses[0]

	k.stopKeepingPods()
	n.start()
	holdsReady(t, c, running.Name, before, 40*time.Second, "nodelet took the node over")
	n.stop(syscall.SIGTERM)
	k.start()
	holdsReady(t, c, running.Name, before, 40*time.Second, "the upstream kubelet took it back")
	k.stopKeepingPods()
	n.start()
	holdsReady(t, c, running.Name, before, 20*time.Second, "nodelet took it over again")
}

// readyPod is the namespace's one pod when it is Ready, else nil.
func readyPod(t *testing.T, c *cluster) *v1.Pod {
	ctx, cancel := criCtx()
	defer cancel()
	pods, err := c.admin.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		return nil
	}
	p := &pods.Items[0]
	if condition(p, v1.PodReady) != v1.ConditionTrue || len(p.Status.ContainerStatuses) != 1 {
		return nil
	}
	return p
}

// holdsReady checks for d that the pod stays the same, Ready, with the same container and
// restart count, and that the runtime holds no other sandbox of the namespace.
func holdsReady(t *testing.T, c *cluster, name string, want v1.ContainerStatus, d time.Duration, what string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(2 * time.Second) {
		p := readyPod(t, c)
		if p == nil || p.Name != name {
			t.Fatalf("%s: pod %s no longer the one Ready pod", what, name)
		}
		got := p.Status.ContainerStatuses[0]
		if got.ContainerID != want.ContainerID || got.RestartCount != want.RestartCount {
			t.Fatalf("%s: container %s restarts %d, was %s restarts %d", what, got.ContainerID, got.RestartCount, want.ContainerID, want.RestartCount)
		}
		if sbs := namespaceSandboxes(t, c.ns); len(sbs) != 1 {
			t.Fatalf("%s: %d sandboxes in the namespace, want the one", what, len(sbs))
		}
	}
}
