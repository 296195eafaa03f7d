package kuberuntime

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
	"github.com/nodelet/nodelet/internal/runtime/userns"
)

// usernsEnv is a manager over a fake CRI with a real ID-range allocator under its root dir.
func usernsEnv(t *testing.T, mutate ...func(*Options)) (*testEnv, *userns.Manager) {
	t.Helper()
	var ranges *userns.Manager
	e := newTestEnv(t, append([]func(*Options){func(o *Options) {
		var err error
		if ranges, err = userns.New(filepath.Join(o.RootDir, "pods"), userns.DefaultRange, 110); err != nil {
			t.Fatal(err)
		}
		o.IDRanges = ranges
	}}, mutate...)...)
	return e, ranges
}

// reportFeatures makes the fake report them and the manager read them, as at nodelet's start.
func (e *testEnv) reportFeatures(handlers []*runtimeapi.RuntimeHandler, features *runtimeapi.RuntimeFeatures) {
	e.t.Helper()
	e.fake.SetFeatures(handlers, features)
	if err := e.mgr.Status(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func usernsPod(name string) *v1.Pod {
	c := ctr("app")
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod := newPod(name, c)
	pod.Spec.HostUsers = ptr.To(false)
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	return pod
}

func sandboxOf(t *testing.T, fake *fakecri.Fake, pod *v1.Pod) fakecri.Sandbox {
	t.Helper()
	var found []fakecri.Sandbox
	for _, sb := range fake.Sandboxes() {
		if sb.Config.Metadata.Uid == string(pod.UID) {
			found = append(found, sb)
		}
	}
	if len(found) == 0 {
		t.Fatalf("pod %s has no sandbox", pod.Name)
	}
	return found[len(found)-1]
}

// wantPodUserNamespace checks that the pod's range reaches CRI: the sandbox and the container
// in mode POD with the range mapped from ID 0, and every mount of the container idmapped the
// same way.
func wantPodUserNamespace(t *testing.T, e *testEnv, pod *v1.Pod, r userns.Range) {
	t.Helper()
	want := &runtimeapi.UserNamespace{
		Mode: runtimeapi.NamespaceMode_POD,
		Uids: []*runtimeapi.IDMapping{{HostId: r.First, ContainerId: 0, Length: userns.IDsPerPod}},
		Gids: []*runtimeapi.IDMapping{{HostId: r.First, ContainerId: 0, Length: userns.IDsPerPod}},
	}
	sb := sandboxOf(t, e.fake, pod)
	if got := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got.String() != want.String() {
		t.Fatalf("sandbox user namespace %v, want %v", got, want)
	}
	var ctrs []fakecri.Container
	for _, c := range e.fake.Containers() {
		if c.SandboxID == sb.ID {
			ctrs = append(ctrs, c)
		}
	}
	if len(ctrs) == 0 {
		t.Fatal("no container in the sandbox")
	}
	for _, c := range ctrs {
		if got := c.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got.String() != want.String() {
			t.Fatalf("container user namespace %v, want %v", got, want)
		}
		if len(c.Config.Mounts) < 2 { // the volume, /etc/hosts, the termination log
			t.Fatalf("container mounts %v", c.Config.Mounts)
		}
		for _, mnt := range c.Config.Mounts {
			if fmt.Sprint(mnt.UidMappings) != fmt.Sprint(want.Uids) || fmt.Sprint(mnt.GidMappings) != fmt.Sprint(want.Gids) {
				t.Fatalf("mount %s: uid %v gid %v, want the pod's mapping", mnt.ContainerPath, mnt.UidMappings, mnt.GidMappings)
			}
		}
	}
}

// On a runtime reporting user namespaces, a hostUsers: false pod gets its own range in CRI;
// two pods get disjoint ranges; a restart of nodelet (new allocator and manager over the same
// root) gives the pod's new sandbox the same range; the range is freed with the pod.
func TestHostUsersFalseReachesCRIWithStableDisjointRanges(t *testing.T) {
	e, ranges := usernsEnv(t)
	e.reportFeatures([]*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}, nil)

	a, b := usernsPod("a"), usernsPod("b")
	for _, pod := range []*v1.Pod{a, b} {
		if res := e.sync(pod); res.Err != nil {
			t.Fatalf("%s: %v (events %v)", pod.Name, res.Err, e.events())
		}
	}
	got := ranges.Allocated()
	ra, rb := got[a.UID], got[b.UID]
	if ra.Length == 0 || rb.Length == 0 || ra == rb {
		t.Fatalf("allocations %v: want two distinct ranges", got)
	}
	wantPodUserNamespace(t, e, a, ra)
	wantPodUserNamespace(t, e, b, rb)

	// A pod leaving hostUsers unset shares the node's user namespace, as upstream says so.
	plain := newPod("plain", ctr("app"))
	if res := e.sync(plain); res.Err != nil {
		t.Fatal(res.Err)
	}
	if mode := sandboxOf(t, e.fake, plain).Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetMode(); mode != runtimeapi.NamespaceMode_NODE {
		t.Fatalf("hostUsers unset: mode %v, want NODE", mode)
	}

	// Restart: a new allocator and manager over the same root; pod a's sandbox is gone and
	// is made again with the range its file records.
	restarted, err := userns.New(filepath.Join(e.rootDir, "pods"), userns.DefaultRange, 110)
	if err != nil {
		t.Fatal(err)
	}
	e.mgr.idRanges = restarted
	if _, err := e.fake.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandboxOf(t, e.fake, a).ID}); err != nil {
		t.Fatal(err)
	}
	if res := e.sync(a); res.Err != nil {
		t.Fatal(res.Err)
	}
	wantPodUserNamespace(t, e, a, ra)
	if got := restarted.Allocated(); got[a.UID] != ra || got[b.UID] != rb {
		t.Fatalf("after restart %v, want a %+v b %+v", got, ra, rb)
	}

	restarted.Release(a.UID)
	if _, held := restarted.Allocated()[a.UID]; held {
		t.Fatal("range kept after the pod was released")
	}
	c := usernsPod("c")
	if res := e.sync(c); res.Err != nil {
		t.Fatal(res.Err)
	}
	if rc := restarted.Allocated()[c.UID]; rc != ra {
		t.Fatalf("pod c got %+v, want a's freed %+v", rc, ra)
	}
}

// On a runtime that does not report user namespaces (containerd 1.6), or for a RuntimeClass
// handler without them, the sandbox is refused with upstream's message and event, nothing is
// allocated, and a normal pod runs.
func TestHostUsersFalseRefusedWithoutRuntimeSupport(t *testing.T) {
	e, ranges := usernsEnv(t, func(o *Options) {
		o.RuntimeClasses = classesFunc(func(pod *v1.Pod) (string, error) { return ptr.Deref(pod.Spec.RuntimeClassName, ""), nil })
	})
	if err := e.mgr.Status(context.Background()); err != nil { // reports no handlers at all
		t.Fatal(err)
	}
	if _, _, err := e.mgr.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	pod := usernsPod("refused")
	res := e.sync(pod)
	// Upstream's message, then the runtime the node runs and the release that would lift it.
	wantEvent := "Warning FailedCreatePodSandBox Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces " +
		"(this node runs fakecri 1.0.0; containerd 2.0 or later with runc 1.2 or later on Linux 6.3 or later has it)"
	if events := e.events(); res.Err == nil || !slices.Contains(events, wantEvent) {
		t.Fatalf("err %v events %q; want %q", res.Err, events, wantEvent)
	}

	e.reportFeatures([]*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
		{Name: "kata", Features: &runtimeapi.RuntimeHandlerFeatures{}},
	}, nil)
	pod.Spec.RuntimeClassName = ptr.To("kata")
	res = e.sync(pod)
	wantEvent = "Warning FailedCreatePodSandBox Failed to create pod sandbox: can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces"
	if events := e.events(); res.Err == nil || !slices.Contains(events, wantEvent) {
		t.Fatalf("err %v events %q; want %q", res.Err, events, wantEvent)
	}
	for _, sb := range e.fake.Sandboxes() {
		t.Errorf("sandbox %s was run", sb.Config.Metadata.Name)
	}
	if got := ranges.Allocated(); len(got) != 0 {
		t.Fatalf("ranges allocated for refused pods: %v", got)
	}
	if res := e.sync(newPod("normal", ctr("app"))); res.Err != nil {
		t.Fatalf("normal pod: %v", res.Err)
	}
	e.running("app")
}

// featureGates UserNamespacesSupport=false, as upstream with the gate off: a pod that sets
// hostUsers at all (true or false) is refused with upstream's message even on a runtime that
// supports user namespaces, and a pod without it gets no user namespace option.
func TestUserNamespacesGateOff(t *testing.T) {
	e, ranges := usernsEnv(t, func(o *Options) { o.UserNamespacesOff = true })
	e.reportFeatures([]*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}, nil)
	wantEvent := "Warning FailedCreatePodSandBox Failed to create pod sandbox: the feature gate \"UserNamespacesSupport\" is disabled: can't set spec.HostUsers"
	for _, hostUsers := range []bool{false, true} {
		pod := usernsPod(fmt.Sprintf("hostusers-%v", hostUsers))
		pod.Spec.HostUsers = ptr.To(hostUsers)
		if res := e.sync(pod); res.Err == nil || !slices.Contains(e.events(), wantEvent) {
			t.Fatalf("hostUsers %v: err %v events %q; want %q", hostUsers, res.Err, e.events(), wantEvent)
		}
	}
	if got := ranges.Allocated(); len(got) != 0 {
		t.Fatalf("ranges allocated for refused pods: %v", got)
	}
	normal := newPod("normal", ctr("app"))
	if res := e.sync(normal); res.Err != nil {
		t.Fatalf("normal pod: %v", res.Err)
	}
	if opt := sandboxOf(t, e.fake, normal).Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); opt != nil {
		t.Fatalf("a pod without hostUsers got user namespace options %v with the gate off", opt)
	}
}

// recursiveReadOnly as upstream: Enabled needs the runtime's feature (else the container
// fails with upstream's error), IfPossible falls back to a plain read-only mount, and both
// need readOnly without propagation.
func TestRecursiveReadOnlyMounts(t *testing.T) {
	rroPod := func(name string, mode v1.RecursiveReadOnlyMode, mutate func(*v1.VolumeMount)) *v1.Pod {
		c := ctr("app")
		c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &mode}}
		if mutate != nil {
			mutate(&c.VolumeMounts[0])
		}
		pod := newPod(name, c)
		pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		return pod
	}
	dataMount := func(e *testEnv, pod *v1.Pod) *runtimeapi.Mount {
		for _, c := range e.fake.Containers() {
			if c.Config.Labels[container.LabelPodUID] != string(pod.UID) {
				continue
			}
			for _, m := range c.Config.Mounts {
				if m.ContainerPath == "/data" {
					return m
				}
			}
		}
		t.Fatalf("pod %s: no container with /data", pod.Name)
		return nil
	}
	wantFailure := func(e *testEnv, pod *v1.Pod, msg string) {
		t.Helper()
		res := e.sync(pod)
		w := res.Waiting["app"]
		if w.Reason != ReasonCreateContainerConfigError || w.Message != "failed to resolve recursive read-only mode: "+msg {
			t.Errorf("%s: waiting %+v, want CreateContainerConfigError %q", pod.Name, w, msg)
		}
		if !slices.Contains(e.events(), "Warning Failed Error: failed to resolve recursive read-only mode: "+msg) {
			t.Errorf("%s: no Failed event", pod.Name)
		}
	}

	e := newTestEnv(t)
	if _, _, err := e.mgr.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantFailure(e, rroPod("enabled", v1.RecursiveReadOnlyEnabled, nil), `volume "data" requested recursive read-only mode, but it is not supported `+
		`by the runtime (this node runs fakecri 1.0.0; containerd 2.0 or later with runc 1.1 or later on Linux 5.12 or later has it)`)
	wantFailure(e, rroPod("not-ro", v1.RecursiveReadOnlyIfPossible, func(m *v1.VolumeMount) { m.ReadOnly = false }),
		`volume "data" requested recursive read-only mode, but it is not read-only`)
	wantFailure(e, rroPod("propagation", v1.RecursiveReadOnlyIfPossible, func(m *v1.VolumeMount) {
		m.MountPropagation = ptr.To(v1.MountPropagationHostToContainer)
	}), `volume "data" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"`)
	ifPossible := rroPod("if-possible", v1.RecursiveReadOnlyIfPossible, nil)
	if res := e.sync(ifPossible); res.Err != nil {
		t.Fatal(res.Err)
	}
	if m := dataMount(e, ifPossible); !m.Readonly || m.RecursiveReadOnly {
		t.Errorf("IfPossible without the feature: %v, want plain read-only", m)
	}

	supporting := newTestEnv(t)
	supporting.reportFeatures([]*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}}}, nil)
	for _, mode := range []v1.RecursiveReadOnlyMode{v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible} {
		pod := rroPod(strings.ToLower(string(mode)), mode, nil)
		if res := supporting.sync(pod); res.Err != nil {
			t.Fatal(res.Err)
		}
		if m := dataMount(supporting, pod); !m.Readonly || !m.RecursiveReadOnly {
			t.Errorf("%s with the feature: %v, want recursive read-only", mode, m)
		}
	}
}

// supplementalGroupsPolicy reaches CRI on the sandbox and the containers.
func TestSupplementalGroupsPolicyReachesCRI(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("strict", ctr("app"))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroups: []int64{5000}, SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if p := sandboxOf(t, e.fake, pod).Config.GetLinux().GetSecurityContext().GetSupplementalGroupsPolicy(); p != runtimeapi.SupplementalGroupsPolicy_Strict {
		t.Errorf("sandbox policy %v", p)
	}
	if p := e.running("app").Config.GetLinux().GetSecurityContext().GetSupplementalGroupsPolicy(); p != runtimeapi.SupplementalGroupsPolicy_Strict {
		t.Errorf("container policy %v", p)
	}
}
