//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// draScenarios are issue 45's proofs of Dynamic Resource Allocation on the node, each in its own
// namespace, run one after another on one kubelet and one driver.
var draScenarios = []struct {
	name string
	run  func(*testing.T, *draEnv)
}{
	{"ClaimFromTemplateInjectsCDIEnv", draTemplateClaim},
	{"TwoContainersShareOneClaim", draTwoContainers},
	{"SharedClaimUnpreparedAfterBothPods", draSharedClaim},
	{"UnallocatedClaimWaitsThenStarts", draUnallocatedClaim},
	{"KubeletKilledBetweenPrepareAndStart", draKubeletKilled},
	{"DriverRestartRegistersAgain", draDriverRestart},
}

// TestDRA runs the DRA scenarios against nodelet.
func TestDRA(t *testing.T) { runDRA(t, "nodelet") }

// TestDRAUpstreamKubelet runs the same scenarios against the upstream kubelet v1.33.4: the proof
// that the harness (control plane, containerd's CDI, the test driver) and the scenarios hold.
func TestDRAUpstreamKubelet(t *testing.T) { runDRA(t, "upstream") }

func runDRA(t *testing.T, kubelet string) {
	e := newDRAEnv(t, kubelet)
	for _, sc := range draScenarios {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, e) })
	}
}

// draTemplateClaim: a pod's claim made from a ResourceClaimTemplate is allocated by the
// scheduler, prepared by the driver, and the container sees the env of the driver's CDI spec.
func draTemplateClaim(t *testing.T, e *draEnv) {
	s := e.namespace(t)
	s.createTemplate("tpl")
	s.createPod(draPod("app", templateClaim("tpl"), "main"))
	s.waitRunning("app", 90*time.Second)
	claim := s.podClaim("app")
	s.expectDeviceEnv("app", "main", claim)
	if _, err := os.Stat(s.cdiSpec(claim)); err != nil {
		t.Errorf("the driver's CDI spec of claim %s: %v", claim.Name, err)
	}
	if !reservedFor(claim, "app") {
		t.Errorf("claim %s reserved for %v, want the pod app", claim.Name, claim.Status.ReservedFor)
	}
}

// draTwoContainers: both containers referencing the pod's claim get its device; the claim is
// prepared once.
func draTwoContainers(t *testing.T, e *draEnv) {
	s := e.namespace(t)
	s.createTemplate("tpl")
	s.createPod(draPod("duo", templateClaim("tpl"), "one", "two"))
	s.waitRunning("duo", 90*time.Second)
	claim := s.podClaim("duo")
	s.expectDeviceEnv("duo", "one", claim)
	s.expectDeviceEnv("duo", "two", claim)
	if n := e.driver.calls(draPrepare, string(claim.UID)); n != 1 {
		t.Errorf("claim %s prepared %d times, want once", claim.Name, n)
	}
}

// draSharedClaim: a ResourceClaim used by two pods is unprepared only once both are gone.
func draSharedClaim(t *testing.T, e *draEnv) {
	s := e.namespace(t)
	s.createClaim("shared")
	s.createPod(draPod("p1", namedClaim("shared"), "main"))
	s.createPod(draPod("p2", namedClaim("shared"), "main"))
	s.waitRunning("p1", 90*time.Second)
	s.waitRunning("p2", 90*time.Second)
	claim := s.claim("shared")
	s.expectDeviceEnv("p1", "main", claim)
	s.expectDeviceEnv("p2", "main", claim)
	spec, uid := s.cdiSpec(claim), string(claim.UID)

	s.deletePod("p1")
	time.Sleep(5 * time.Second) // room for a wrong unprepare to show
	if n := e.driver.calls(draUnprepare, uid); n != 0 {
		t.Errorf("claim unprepared %d times while p2 still runs", n)
	}
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("CDI spec gone while p2 still runs: %v", err)
	}
	s.expectDeviceEnv("p2", "main", claim)

	s.deletePod("p2")
	testutil.WaitFor(t, 30*time.Second, "the claim unprepared once p2 is gone", func() (bool, string) {
		_, err := os.Stat(spec)
		return os.IsNotExist(err) && e.driver.calls(draUnprepare, uid) > 0, fmt.Sprintf("spec: %v", err)
	})
	if n := e.driver.calls(draUnprepare, uid); n != 1 {
		t.Errorf("claim unprepared %d times, want once", n)
	}
}

// draUnallocatedClaim: a pod bound to the node (no scheduler) whose claim is not allocated
// waits without a sandbox; once the claim is allocated and reserved for it, it starts.
func draUnallocatedClaim(t *testing.T, e *draEnv) {
	s := e.namespace(t)
	s.createClaim("late")
	pod := draPod("waiter", namedClaim("late"), "main")
	pod.Spec.NodeName = nodeName
	pod = s.createPod(pod)
	claim := s.claim("late")
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if p := s.pod("waiter"); p.Status.Phase != v1.PodPending {
			t.Fatalf("pod with an unallocated claim is %s, want Pending", p.Status.Phase)
		}
		if n := len(s.podSandboxes("waiter")); n != 0 {
			t.Fatalf("pod with an unallocated claim has %d sandboxes", n)
		}
	}
	if n := e.driver.calls(draPrepare, string(claim.UID)); n != 0 {
		t.Fatalf("unallocated claim prepared %d times", n)
	}
	s.allocate(claim, pod, "device-07")
	s.waitRunning("waiter", 90*time.Second)
	s.expectDeviceEnv("waiter", "main", s.claim("late"))
}

// draKubeletKilled: the kubelet SIGKILLed once the claim is prepared and before the container
// using it started (an init container holds it back), then started again: the pod starts
// with its device and the driver was asked to prepare the claim only once.
func draKubeletKilled(t *testing.T, e *draEnv) {
	s := e.namespace(t)
	s.createTemplate("tpl")
	pod := draPod("slow", templateClaim("tpl"), "main")
	pod.Spec.InitContainers = []v1.Container{{Name: "hold", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sleep", "15"}}}
	s.createPod(pod)
	testutil.WaitFor(t, 90*time.Second, "the init container running (the claim prepared)", func() (bool, string) {
		for _, c := range s.containers("slow", "hold") {
			if c.State == cri.ContainerState_CONTAINER_RUNNING {
				return true, ""
			}
		}
		return false, "not yet"
	})
	e.kubelet.end(syscall.SIGKILL)
	claim := s.podClaim("slow")
	if n := e.driver.calls(draPrepare, string(claim.UID)); n != 1 {
		t.Fatalf("claim prepared %d times before the kill, want once", n)
	}
	if n := len(s.containers("slow", "main")); n != 0 {
		t.Fatalf("the claim's container was created before the kill (%d): the kill came too late", n)
	}
	started := time.Now()
	e.kubelet.start()
	waitNodeReadySince(t, e.admin, started, 60*time.Second)
	s.waitRunning("slow", 90*time.Second)
	s.expectDeviceEnv("slow", "main", claim)
	if n := e.driver.calls(draPrepare, string(claim.UID)); n != 1 {
		t.Errorf("claim prepared %d times across the restart, want once", n)
	}
}

// draDriverRestart: the driver stopped and started again registers again, and a new pod's
// claim is prepared by the new instance.
func draDriverRestart(t *testing.T, e *draEnv) {
	e.driver.stop()
	e.driver.start(t)
	e.driver.waitRegistered(t, 60*time.Second)
	e.waitSlice(t)
	s := e.namespace(t)
	s.createTemplate("tpl")
	s.createPod(draPod("after", templateClaim("tpl"), "main"))
	s.waitRunning("after", 90*time.Second)
	claim := s.podClaim("after")
	s.expectDeviceEnv("after", "main", claim)
	if !regexp.MustCompile(`"handling request" .*` + draPrepare + `.*` + string(claim.UID)).MatchString(e.driver.log(e.driver.runs)) {
		t.Errorf("the restarted driver did not prepare claim %s", claim.Name)
	}
}

// draClaimSpec asks for one device of the class, with an opaque config the driver turns into
// the env var user_greeting=hello.
func draClaimSpec() resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: draRequest, DeviceClassName: draClass}},
		Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{draRequest},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: draDriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"greeting":"hello"}`)}}}}},
	}}
}

func templateClaim(template string) v1.PodResourceClaim {
	return v1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}
}

func namedClaim(claim string) v1.PodResourceClaim {
	return v1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To(claim)}
}

// draPod is a busybox pod for the node (through the scheduler, which allocates its claim) whose
// containers all use its one claim.
func draPod(name string, claim v1.PodResourceClaim, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{
		NodeSelector:                  map[string]string{"kubernetes.io/hostname": nodeName},
		TerminationGracePeriodSeconds: ptr.To[int64](2),
		ResourceClaims:                []v1.PodResourceClaim{claim},
	}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: busybox,
			ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sleep", "3600"},
			Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: claim.Name}}}})
	}
	return p
}

func (s *draNS) createPod(p *v1.Pod) *v1.Pod {
	s.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	out, err := s.admin.CoreV1().Pods(s.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func (s *draNS) createTemplate(name string) {
	s.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	tpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: draClaimSpec()}}
	if _, err := s.admin.ResourceV1beta1().ResourceClaimTemplates(s.ns).Create(ctx, tpl, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *draNS) createClaim(name string) {
	s.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: draClaimSpec()}
	if _, err := s.admin.ResourceV1beta1().ResourceClaims(s.ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *draNS) claim(name string) *resourceapi.ResourceClaim {
	s.t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	c, err := s.admin.ResourceV1beta1().ResourceClaims(s.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// podClaim is the claim the resourceclaim controller made for the pod from its template.
func (s *draNS) podClaim(pod string) *resourceapi.ResourceClaim {
	s.t.Helper()
	var name string
	testutil.WaitFor(s.t, 30*time.Second, "the claim generated for "+pod, func() (bool, string) {
		st := s.pod(pod).Status.ResourceClaimStatuses
		if len(st) == 1 && st[0].ResourceClaimName != nil {
			name = *st[0].ResourceClaimName
		}
		return name != "", fmt.Sprint(st)
	})
	return s.claim(name)
}

// allocate does the scheduler's work for a pod bound to the node: the claim allocated the
// device of the driver's pool and reserved for the pod.
func (s *draNS) allocate(claim *resourceapi.ResourceClaim, pod *v1.Pod, device string) {
	s.t.Helper()
	claim.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: draRequest, Driver: draDriverName, Pool: nodeName, Device: device}},
			Config: []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
				Requests: []string{draRequest}, DeviceConfiguration: claim.Spec.Devices.Config[0].DeviceConfiguration}},
		},
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}}}}},
	}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := s.admin.ResourceV1beta1().ResourceClaims(s.ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func reservedFor(claim *resourceapi.ResourceClaim, pod string) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.Resource == "pods" && r.Name == pod {
			return true
		}
	}
	return false
}

// cdiSpec is where the driver writes the claim's CDI spec (one per claim and request).
func (s *draNS) cdiSpec(claim *resourceapi.ResourceClaim) string {
	return filepath.Join(cdiSpecDir, fmt.Sprintf("%s-%s-%s.json", draDriverName, claim.UID, draRequest))
}

// expectDeviceEnv checks, from inside the container, the two env vars the driver's CDI spec
// for the claim injects: the claim's config and claim_<claim>_<request>=true.
func (s *draNS) expectDeviceEnv(pod, container string, claim *resourceapi.ResourceClaim) {
	s.t.Helper()
	if got := s.env(pod, container, "user_greeting"); got != "hello" {
		s.t.Errorf("%s/%s: user_greeting=%q, want hello (from the CDI spec of claim %s)", pod, container, got, claim.Name)
	}
	key := regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString("claim_"+claim.Name+"_"+draRequest, "_")
	if got := s.env(pod, container, key); got != "true" {
		s.t.Errorf("%s/%s: %s=%q, want true", pod, container, key, got)
	}
}
