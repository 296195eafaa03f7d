//go:build real

package status_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

func TestRealAPIPods(t *testing.T) {
	env := setupE2E(t)
	pods := env.admin.CoreV1().Pods(e2eNamespace)

	web, err := pods.Create(env.ctx, e2ePod("apipods-web", e2eNode), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(env.ctx, e2ePod("apipods-elsewhere", "apipods-other-node"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Someone else's condition (a readiness gate) that nodelet must keep.
	web.Status.Conditions = append(web.Status.Conditions, v1.PodCondition{
		Type: "example.com/gate", Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(),
	})
	if web, err = pods.UpdateStatus(env.ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("source", func(t *testing.T) {
		snap := env.waitSnapshot("apipods-web", func(p []*v1.Pod) bool { return findPod(p, "apipods-web") != nil })
		if findPod(snap, "apipods-elsewhere") != nil {
			t.Error("snapshot holds a pod bound to another node")
		}
	})

	t.Run("status", func(t *testing.T) { checkStatusSync(t, env, web) })
	t.Run("uid-precondition", func(t *testing.T) { checkUIDPrecondition(t, env, web) })
	t.Run("mirror", func(t *testing.T) { checkMirror(t, env) })
	t.Run("graceful-delete", func(t *testing.T) { checkGracefulDelete(t, env) })
}

func checkStatusSync(t *testing.T, env *e2eEnv, web *v1.Pod) {
	env.t = t
	env.syncer.StatusChanged(web, e2eRunning(metav1.Now()))
	got := env.waitPod("apipods-web", "phase Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	for _, ct := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled, "example.com/gate"} {
		if c := findCond(got, ct); c == nil || c.Status != v1.ConditionTrue {
			t.Errorf("condition %s = %+v", ct, c)
		}
	}
	if got.Status.PodIP != "10.85.0.42" || got.Status.HostIP != "192.0.2.10" || len(got.Status.ContainerStatuses) != 1 ||
		got.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("status not as written: %s", dump(got))
	}
	logKubectl(t, "get", "pod", "apipods-web", "-o", "yaml")
	// The watch brings the new status back to the source.
	env.waitSnapshot("apipods-web Running", func(p []*v1.Pod) bool {
		w := findPod(p, "apipods-web")
		return w != nil && w.Status.Phase == v1.PodRunning
	})
}

// checkUIDPrecondition shows what the API server does with a status patch naming another UID:
// the syncer relies on it being refused.
func checkUIDPrecondition(t *testing.T, env *e2eEnv, web *v1.Pod) {
	patch := []byte(`{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"},"status":{"phase":"Failed"}}`)
	_, err := env.node.CoreV1().Pods(e2eNamespace).Patch(env.ctx, web.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	if err == nil {
		t.Fatal("status patch with a wrong UID was accepted")
	}
	t.Logf("patch with a wrong UID: conflict=%v invalid=%v: %v", apierrors.IsConflict(err), apierrors.IsInvalid(err), err)
	if !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) {
		t.Errorf("want Conflict or Invalid (the syncer re-reads on those), got %v", err)
	}
	got, err := env.admin.CoreV1().Pods(e2eNamespace).Get(env.ctx, web.Name, metav1.GetOptions{})
	if err != nil || got.Status.Phase != v1.PodRunning {
		t.Errorf("pod changed by a refused patch: %v %s", err, dump(got))
	}
}

func checkMirror(t *testing.T, env *e2eEnv) {
	env.t = t
	static := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "apipods-static-" + e2eNode, Namespace: e2eNamespace, UID: "static-uid-1",
			Labels: map[string]string{"tier": "static"},
			Annotations: map[string]string{
				podutil.AnnotationSource: podutil.FileSource, podutil.AnnotationHash: "hash-1",
			},
		},
		Spec: v1.PodSpec{
			NodeName:   e2eNode,
			Containers: []v1.Container{{Name: "main", Image: "nodelet.local/busybox:1.36", Command: []string{"sleep", "3600"}}},
		},
	}
	mc := pod.NewMirrorClient(kubeclienttest.FromClientset(env.node), e2eNode)
	if err := mc.Create(env.ctx, static); err != nil {
		t.Fatal(err)
	}
	if err := mc.Create(env.ctx, static); err != nil {
		t.Errorf("second create: %v", err)
	}
	mirror, err := env.admin.CoreV1().Pods(e2eNamespace).Get(env.ctx, static.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := env.admin.CoreV1().Nodes().Get(env.ctx, e2eNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !pod.MatchesStatic(mirror, static) || mirror.Labels["tier"] != "static" {
		t.Errorf("mirror does not match its static pod: %+v", mirror.ObjectMeta)
	}
	if refs := mirror.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != node.UID {
		t.Errorf("mirror owner references = %+v, want node %s", refs, node.UID)
	}
	snap := env.waitSnapshot("the mirror pod", func(p []*v1.Pod) bool { return findPod(p, static.Name) != nil })
	if !podutil.IsMirror(findPod(snap, static.Name)) {
		t.Error("mirror pod in the snapshot lacks its annotation")
	}

	// The static pod's status goes to its mirror.
	env.syncer.StatusChanged(static, e2eRunning(metav1.Now()))
	env.mirrors.Set(mirror)
	env.syncer.MirrorChanged(static)
	env.waitPod(static.Name, "phase Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	uid := mirror.UID
	if err := mc.Delete(env.ctx, e2eNamespace, static.Name, &uid); err != nil {
		t.Fatal(err)
	}
	env.waitGone(func() error {
		_, err := env.admin.CoreV1().Pods(e2eNamespace).Get(env.ctx, static.Name, metav1.GetOptions{})
		return err
	})
	if err := mc.Delete(env.ctx, e2eNamespace, static.Name, &uid); err != nil {
		t.Errorf("deleting a deleted mirror: %v", err)
	}
	env.syncer.Forget(static.UID)
}

func checkGracefulDelete(t *testing.T, env *e2eEnv) {
	env.t = t
	grace := int64(30)
	if err := env.admin.CoreV1().Pods(e2eNamespace).Delete(env.ctx, "apipods-web", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	snap := env.waitSnapshot("apipods-web being deleted", func(p []*v1.Pod) bool {
		w := findPod(p, "apipods-web")
		return w != nil && w.DeletionTimestamp != nil
	})
	deleting := findPod(snap, "apipods-web")
	start := time.Now()

	// nodelet killed the containers: final status, then the deletion is completed.
	final := e2eRunning(metav1.Now())
	final.Phase = v1.PodFailed
	final.ContainerStatuses[0].Ready = false
	final.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode: 137, Reason: "Error", StartedAt: metav1.Now(), FinishedAt: metav1.Now(), ContainerID: "containerd://0123",
	}}
	for i := range final.Conditions {
		if final.Conditions[i].Type == v1.PodReady || final.Conditions[i].Type == v1.ContainersReady {
			final.Conditions[i].Status = v1.ConditionFalse
		}
	}
	env.syncer.StatusChanged(deleting, final)
	env.syncer.PodTerminated(deleting)
	env.waitSnapshot("apipods-web gone", func(p []*v1.Pod) bool { return findPod(p, "apipods-web") == nil })
	if _, err := env.admin.CoreV1().Pods(e2eNamespace).Get(env.ctx, "apipods-web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod still in the API: %v", err)
	}
	if waited := time.Since(start); waited >= time.Duration(grace)*time.Second {
		t.Errorf("deletion took %v: not completed by nodelet", waited)
	}
}

// logKubectl logs what kubectl (as admin) shows, when kubectl is installed.
func logKubectl(t *testing.T, args ...string) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		return
	}
	args = append([]string{"--kubeconfig", os.Getenv("NODELET_E2E_KUBECONFIG")}, args...)
	out, err := exec.Command("kubectl", args...).CombinedOutput()
	t.Logf("kubectl %v (err %v):\n%s", args[2:], err, out)
}
