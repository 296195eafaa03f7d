//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

func TestNodeRegistersReadyAndRenewsLease(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	t.Logf("node Ready %v after start", time.Since(c.started).Round(time.Millisecond))
	n := c.node()
	if n.Status.Capacity.Cpu().IsZero() || n.Status.Capacity.Memory().IsZero() || n.Status.Allocatable.Pods().Value() != 110 {
		t.Fatalf("capacity/allocatable incomplete: %v / %v", n.Status.Capacity, n.Status.Allocatable)
	}
	if !strings.HasPrefix(n.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") || n.Status.NodeInfo.KubeletVersion == "" {
		t.Fatalf("nodeInfo incomplete: %+v", n.Status.NodeInfo)
	}
	if n.Labels["kubernetes.io/hostname"] != nodeName {
		t.Fatalf("labels %v", n.Labels)
	}

	ctx, cancel := criCtx()
	defer cancel()
	lease, err := c.admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := lease.Spec.RenewTime.Time
	if *lease.Spec.LeaseDurationSeconds != 40 || *lease.Spec.HolderIdentity != nodeName {
		t.Fatalf("lease spec %+v", lease.Spec)
	}
	testutil.WaitFor(t, 25*time.Second, "lease renewed", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		l, err := c.admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.Time.After(first), l.Spec.RenewTime.String()
	})
}

func TestAPIPodRunsWithMatchingStatus(t *testing.T) {
	c := joinCluster(t)
	c.createPod(podSpec("api-pod", "exec sleep 3600"))
	p := c.waitPodPhase("api-pod", v1.PodRunning, 60*time.Second)
	sbs := namespaceSandboxes(t, c.ns)
	if len(sbs) != 1 {
		t.Fatalf("want 1 sandbox, got %d", len(sbs))
	}
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: sbs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if ip := st.Status.GetNetwork().GetIp(); p.Status.PodIP != ip || len(p.Status.PodIPs) == 0 {
		t.Fatalf("API podIP %q, runtime %q", p.Status.PodIP, ip)
	}
	if p.Status.HostIP == "" || p.Status.StartTime == nil || p.Status.QOSClass != v1.PodQOSBestEffort {
		t.Fatalf("status incomplete: hostIP %q startTime %v qos %q", p.Status.HostIP, p.Status.StartTime, p.Status.QOSClass)
	}
	testutil.WaitFor(t, 10*time.Second, "conditions", func() (bool, string) {
		p, _ = c.getPod("api-pod")
		for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady, v1.PodInitialized, v1.PodScheduled, v1.PodReadyToStartContainers} {
			if condition(p, ct) != v1.ConditionTrue {
				return false, fmt.Sprintf("%s=%s", ct, condition(p, ct))
			}
		}
		return true, ""
	})
	cs := p.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Running == nil || !cs[0].Ready || !strings.HasPrefix(cs[0].ContainerID, "containerd://") {
		t.Fatalf("container status %+v", cs)
	}
}

func TestDeploymentOf30AllRunning(t *testing.T) {
	c := joinCluster(t)
	replicas := int32(30)
	grace := int64(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "burst"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "burst"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "burst"}},
				Spec: v1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": nodeName}, TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{
					Name: "main", Image: "nodelet.local/testhelper:v1", ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"},
				}}},
			},
		},
	}
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := c.admin.AppsV1().Deployments(c.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 3*time.Minute, "30 pods Running", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		pods, err := c.admin.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		return running == 30, fmt.Sprintf("%d of %d running", running, len(pods.Items))
	})
}

func TestGracefulDeleteEndsWithinGracePeriod(t *testing.T) {
	c := joinCluster(t)
	// testhelper sleep exits on SIGTERM, so deletion should not need the whole grace period.
	p := podSpec("graceful", "")
	p.Spec.Containers[0].Image, p.Spec.Containers[0].Command = "nodelet.local/testhelper:v1", nil
	p.Spec.Containers[0].Args = []string{"sleep"}
	grace := int64(20)
	p.Spec.TerminationGracePeriodSeconds = &grace
	c.createPod(p)
	c.waitPodPhase("graceful", v1.PodRunning, 60*time.Second)
	start := time.Now()
	kubectl(t, "-n", c.ns, "delete", "pod", "graceful", "--wait=false")
	c.waitPodGone("graceful", 20*time.Second)
	t.Logf("pod deleted %v after kubectl delete", time.Since(start).Round(time.Millisecond))
	testutil.WaitFor(t, 10*time.Second, "containers gone", func() (bool, string) {
		n := len(namespaceSandboxes(t, c.ns))
		return n == 0, fmt.Sprintf("%d sandboxes", n)
	})
}

func TestStaticPodGetsMirrorPodThatComesBack(t *testing.T) {
	c := joinCluster(t)
	c.writeManifest("static.yaml", podYAML("static", "Always", "exec sleep 3600"))
	name := "static-" + nodeName
	var mirror *v1.Pod
	testutil.WaitFor(t, 60*time.Second, "mirror pod Running", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		p, err := c.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		mirror = p
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
	})
	if mirror.Annotations["kubernetes.io/config.mirror"] == "" || len(mirror.OwnerReferences) != 1 || mirror.OwnerReferences[0].Kind != "Node" {
		t.Fatalf("mirror pod metadata: %v %v", mirror.Annotations, mirror.OwnerReferences)
	}
	before := runningContainer(t, "static", "main")
	kubectl(t, "-n", "default", "delete", "pod", name, "--wait=false")
	testutil.WaitFor(t, 30*time.Second, "mirror pod recreated", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		p, err := c.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.UID != mirror.UID && p.DeletionTimestamp == nil, "old mirror still there"
	})
	if after := runningContainer(t, "static", "main"); after == nil || after.Id != before.Id {
		t.Fatal("deleting the mirror pod restarted the static pod")
	}
	c.removeManifest("static.yaml")
	testutil.WaitFor(t, 30*time.Second, "mirror pod deleted with the static pod", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		_, err := c.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func TestPodOverMaxPodsIsRejected(t *testing.T) {
	c := joinCluster(t, "--max-pods=1")
	c.createPod(podSpec("first", "exec sleep 3600"))
	c.waitPodPhase("first", v1.PodRunning, 60*time.Second)
	c.createPod(podSpec("second", "exec sleep 3600"))
	p := c.waitPodPhase("second", v1.PodFailed, 30*time.Second)
	if p.Status.Reason != "OutOfpods" {
		t.Fatalf("rejected with reason %q, want OutOfpods", p.Status.Reason)
	}
}

func TestAPIServerOutageKillsNothing(t *testing.T) {
	c := joinCluster(t)
	c.createPod(podSpec("survivor", "exec sleep 3600"))
	c.waitPodPhase("survivor", v1.PodRunning, 60*time.Second)
	before := c.podContainers("survivor")
	kubectl(t, "get", "--raw", "/readyz")
	runScript(t, repoPath(controlPlane), "stop-apiserver")
	time.Sleep(30 * time.Second)
	runScript(t, repoPath(controlPlane), "start-apiserver")
	after := c.podContainers("survivor")
	if len(after) != 1 || after[0].Id != before[0].Id {
		t.Fatalf("pod's container changed during the outage: %d instances", len(after))
	}
	// Pods and status flow again. Every client-go watcher (nodelet's, the scheduler's, the
	// controller manager's) retries with a back-off that reaches ~30 s plus jitter during the
	// outage, so the first post-outage round trip may take up to a minute; and the node
	// controller, seeing a stale Lease, may mark the node Unknown until the next status post.
	c.createPod(podSpec("after-outage", "exec sleep 3600"))
	c.waitPodPhase("after-outage", v1.PodRunning, 150*time.Second)
	testutil.WaitFor(t, 60*time.Second, "node Ready after the outage", func() (bool, string) {
		n := c.node()
		return nodeReady(n), fmt.Sprint(n.Status.Conditions)
	})
}

func TestProbesGateReadinessAndRestartOnLivenessFailure(t *testing.T) {
	c := joinCluster(t)
	p := podSpec("probed", "")
	main := &p.Spec.Containers[0]
	main.Image, main.Command, main.Args = "nodelet.local/testhelper:v1", nil, []string{"serve", "--port", "8080"}
	main.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	main.ReadinessProbe = &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
		HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}}
	main.LivenessProbe = &v1.Probe{PeriodSeconds: 1, FailureThreshold: 1, ProbeHandler: v1.ProbeHandler{
		Exec: &v1.ExecAction{Command: []string{"sh", "-c", "test ! -e /tmp/dead"}}}}
	c.createPod(p)
	c.waitPodPhase("probed", v1.PodRunning, 60*time.Second)
	testutil.WaitFor(t, 20*time.Second, "pod Ready through its readiness probe", func() (bool, string) {
		got, _ := c.getPod("probed")
		return condition(got, v1.PodReady) == v1.ConditionTrue, string(condition(got, v1.PodReady))
	})
	// Kill the liveness check's condition inside the container: nodelet restarts it.
	id := c.podContainers("probed")[0].Id
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: []string{"touch", "/tmp/dead"}, Timeout: 5}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 40*time.Second, "restart after liveness failure", func() (bool, string) {
		got, _ := c.getPod("probed")
		if len(got.Status.ContainerStatuses) == 0 {
			return false, "no status"
		}
		return got.Status.ContainerStatuses[0].RestartCount >= 1, fmt.Sprint(got.Status.ContainerStatuses[0].RestartCount)
	})
}
