package kuberuntime

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

func TestFirstSyncCreatesSandboxAndContainer(t *testing.T) {
	e := newTestEnv(t)
	app := ctr("app", "sh", "-c", "echo $(MSG) $$(HOME)")
	app.Args = []string{"$(UNKNOWN)", "$(GREETING)"}
	app.Env = []v1.EnvVar{
		{Name: "GREETING", Value: "hello"},
		{Name: "MSG", Value: "$(GREETING) world"},
		{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}
	app.Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
	app.VolumeMounts = []v1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	pod := newPod("web", app)
	pod.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}

	res := e.sync(pod)
	if res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod: err %v waiting %v", res.Err, res.Waiting)
	}
	wantCalls := []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"}
	if got := filterCalls(e.fake.Calls(), wantCalls...); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("calls = %v, want %v", got, wantCalls)
	}

	sbs := e.fake.Sandboxes()
	if len(sbs) != 1 {
		t.Fatalf("sandboxes = %d", len(sbs))
	}
	sb := sbs[0].Config
	logDir := filepath.Join(e.logsDir, "default_web_uid-web")
	if sb.Metadata.Name != "web" || sb.Metadata.Namespace != "default" || sb.Metadata.Uid != "uid-web" || sb.Metadata.Attempt != 0 {
		t.Errorf("sandbox metadata %+v", sb.Metadata)
	}
	if sb.Hostname != "web" || sb.LogDirectory != logDir {
		t.Errorf("hostname %q log dir %q", sb.Hostname, sb.LogDirectory)
	}
	wantLabels := map[string]string{"app": "web", container.LabelPodName: "web", container.LabelPodNamespace: "default", container.LabelPodUID: "uid-web"}
	if !reflect.DeepEqual(sb.Labels, wantLabels) || sb.Annotations["note"] != "x" {
		t.Errorf("sandbox labels %v annotations %v", sb.Labels, sb.Annotations)
	}
	if len(sb.PortMappings) != 1 || sb.PortMappings[0].HostPort != 8080 || sb.PortMappings[0].ContainerPort != 80 {
		t.Errorf("port mappings %v", sb.PortMappings)
	}
	if sb.DnsConfig.Servers[0] != "10.0.0.53" {
		t.Errorf("dns %v", sb.DnsConfig)
	}

	c := e.running("app")
	cfg := c.Config
	wantCLabels := map[string]string{container.LabelPodName: "web", container.LabelPodNamespace: "default", container.LabelPodUID: "uid-web",
		container.LabelContainerName: "app", container.LabelManagedBy: "nodelet"}
	if !reflect.DeepEqual(cfg.Labels, wantCLabels) {
		t.Errorf("container labels %v", cfg.Labels)
	}
	if cfg.Annotations[container.AnnotationHash] != kubehash.FormatHash(kubehash.ContainerHash(&pod.Spec.Containers[0])) ||
		cfg.Annotations[container.AnnotationRestarts] != "0" || cfg.Annotations[container.AnnotationTermPath] != "/dev/termination-log" ||
		cfg.Annotations[container.AnnotationTermPolicy] != "File" {
		t.Errorf("container annotations %v", cfg.Annotations)
	}
	if cfg.LogPath != "app/0.log" || c.LogPath != filepath.Join(logDir, "app", "0.log") {
		t.Errorf("log path %q (%q)", cfg.LogPath, c.LogPath)
	}
	if _, err := os.Stat(c.LogPath); err != nil {
		t.Errorf("log file: %v", err)
	}
	if cfg.Image.Image != "sha256:"+strings.TrimPrefix(cfg.Image.Image, "sha256:") || cfg.Metadata.Attempt != 0 {
		t.Errorf("image %v attempt %d", cfg.Image, cfg.Metadata.Attempt)
	}
	wantEnv := map[string]string{"GREETING": "hello", "MSG": "hello world", "POD_NAME": "web", "POD_IP": sbs[0].IP}
	if got := envMap(cfg.Envs); !reflect.DeepEqual(got, wantEnv) {
		t.Errorf("env = %v, want %v", got, wantEnv)
	}
	if want := []string{"sh", "-c", "echo hello world $(HOME)"}; !reflect.DeepEqual(cfg.Command, want) {
		t.Errorf("command = %q, want %q", cfg.Command, want)
	}
	if want := []string{"$(UNKNOWN)", "hello"}; !reflect.DeepEqual(cfg.Args, want) {
		t.Errorf("args = %q, want %q", cfg.Args, want)
	}
	mounts := mountMap(cfg.Mounts)
	podDir := filepath.Join(e.rootDir, "pods", "uid-web")
	if mounts["/cache"] != filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "cache") {
		t.Errorf("emptyDir mount %q", mounts["/cache"])
	}
	if dir := filepath.Dir(mounts["/dev/termination-log"]); dir != filepath.Join(podDir, "containers", "app") {
		t.Errorf("termination log mount %q", mounts["/dev/termination-log"])
	}
	hosts, err := os.ReadFile(mounts["/etc/hosts"])
	if err != nil || !strings.Contains(string(hosts), sbs[0].IP+"\tweb") {
		t.Errorf("hosts file %q: %v", hosts, err)
	}
	if cfg.Linux.Resources.OomScoreAdj != 1000 || cfg.Linux.Resources.CpuShares != 2 {
		t.Errorf("best-effort resources %+v", cfg.Linux.Resources)
	}

	evs := e.events()
	for _, want := range []string{"Normal Pulled Container image", "Normal Created Created container app", "Normal Started Started container app"} {
		if !hasEvent(evs, want) {
			t.Errorf("events %q lack %q", evs, want)
		}
	}

	// A second sync of a healthy pod changes nothing.
	e.fake.ResetCalls()
	if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("second SyncPod: %+v", res)
	}
	for _, call := range e.fake.Calls() {
		if call == "RunPodSandbox" || call == "CreateContainer" || call == "StopContainer" {
			t.Errorf("second sync called %s", call)
		}
	}
}

func TestRestartAlwaysBacksOff(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("crash", ctr("app", "false"))
	e.sync(pod)

	// First crash: restarted at once.
	e.exit("app", 1)
	if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 || res.RequeueAfter != 0 {
		t.Fatalf("first restart: %+v", res)
	}
	if c := e.running("app"); c.Config.Metadata.Attempt != 1 || c.Config.LogPath != "app/1.log" {
		t.Fatalf("restarted container attempt %d log %q", c.Config.Metadata.Attempt, c.Config.LogPath)
	}

	// Second crash: 10s back-off.
	e.exit("app", 1)
	res := e.sync(pod)
	w := res.Waiting["app"]
	if w.Reason != ReasonCrashLoopBackOff || w.Message != "back-off 10s restarting failed container=app pod=crash_default(uid-crash)" {
		t.Fatalf("waiting = %+v", w)
	}
	if res.RequeueAfter < 9*time.Second || res.RequeueAfter > 10*time.Second+time.Millisecond {
		t.Errorf("RequeueAfter = %v", res.RequeueAfter)
	}
	if n := len(e.containersNamed("app")); n != 2 {
		t.Fatalf("containers during back-off = %d, want 2", n)
	}
	if evs := e.events(); !hasEvent(evs, "Warning BackOff Back-off restarting failed container app in pod crash_default(uid-crash)") {
		t.Errorf("events %q lack BackOff", evs)
	}

	e.clock.Step(6 * time.Second)
	if res := e.sync(pod); res.Waiting["app"].Reason != ReasonCrashLoopBackOff || res.RequeueAfter > 4*time.Second+time.Millisecond {
		t.Fatalf("6s into back-off: %+v", res)
	}
	e.clock.Step(5 * time.Second)
	if res := e.sync(pod); len(res.Waiting) != 0 {
		t.Fatalf("after back-off: %+v", res)
	}
	e.running("app")

	// Third crash: the back-off doubled.
	e.exit("app", 1)
	if w := e.sync(pod).Waiting["app"]; !strings.HasPrefix(w.Message, "back-off 20s ") {
		t.Fatalf("waiting = %+v", w)
	}

	// A container that ran for more than 10 minutes restarts at once.
	e.clock.Step(21 * time.Second)
	e.sync(pod)
	e.clock.Step(11 * time.Minute)
	e.exit("app", 1)
	if res := e.sync(pod); len(res.Waiting) != 0 {
		t.Fatalf("after a long run: %+v", res)
	}
	e.running("app")
	// Every dead instance stays: container GC (internal/node/gc) removes them, not the sync.
	if n := len(e.containersNamed("app")); n != 5 {
		t.Errorf("%d app containers kept, want 5", n)
	}
	if st := e.status(pod); st.Containers[0].RestartCount != 4 || st.Containers[0].State != container.StateRunning {
		t.Errorf("newest container %+v", st.Containers[0])
	}
}

func TestRestartPolicies(t *testing.T) {
	tests := []struct {
		policy      v1.RestartPolicy
		exitCode    int32
		wantRestart bool
	}{
		{v1.RestartPolicyNever, 0, false},
		{v1.RestartPolicyNever, 1, false},
		{v1.RestartPolicyOnFailure, 0, false},
		{v1.RestartPolicyOnFailure, 3, true},
		{v1.RestartPolicyAlways, 0, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+"/"+strconv.Itoa(int(tt.exitCode)), func(t *testing.T) {
			e := newTestEnv(t)
			pod := newPod("job", ctr("app", "true"))
			pod.Spec.RestartPolicy = tt.policy
			e.sync(pod)
			e.exit("app", tt.exitCode)
			res := e.sync(pod)
			if res.Err != nil || len(res.Waiting) != 0 {
				t.Fatalf("SyncPod: %+v", res)
			}
			if got := len(e.containersNamed("app")) == 2; got != tt.wantRestart {
				t.Errorf("restarted = %v, want %v", got, tt.wantRestart)
			}
		})
	}
}

func TestFinishedPodGetsNoNewSandbox(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			e := newTestEnv(t)
			pod := newPod("job", ctr("app", "true"))
			pod.Spec.RestartPolicy = policy
			e.sync(pod)
			e.exit("app", 0)
			if err := e.fake.StopSandbox(e.fake.Sandboxes()[0].ID); err != nil {
				t.Fatal(err)
			}
			e.fake.ResetCalls()
			e.sync(pod)
			if n := e.fake.CountCalls("RunPodSandbox"); n != 0 {
				t.Errorf("RunPodSandbox called %d times for a finished pod", n)
			}
		})
	}
}

func TestDeadSandboxIsReplaced(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	e.sync(pod)
	old := e.fake.Sandboxes()[0]
	if err := e.fake.StopSandbox(old.ID); err != nil {
		t.Fatal(err)
	}
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	sbs := e.fake.Sandboxes()
	if len(sbs) != 2 || sbs[1].Config.Metadata.Attempt != 1 || sbs[1].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandboxes after replacement: %+v", sbs)
	}
	c := e.running("app")
	if c.SandboxID != sbs[1].ID || c.Config.Metadata.Attempt != 1 {
		t.Errorf("container in sandbox %s attempt %d", c.SandboxID, c.Config.Metadata.Attempt)
	}
	if evs := e.events(); !hasEvent(evs, "Normal SandboxChanged") {
		t.Errorf("events %q lack SandboxChanged", evs)
	}
}

func TestInitContainersRunInOrder(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("init", ctr("app", "sleep", "1d"))
	pod.Spec.InitContainers = []v1.Container{ctr("first", "true"), ctr("second", "true")}

	e.sync(pod)
	e.running("first")
	if len(e.containersNamed("second"))+len(e.containersNamed("app")) != 0 {
		t.Fatal("started more than the first init container")
	}
	e.sync(pod) // first still running: nothing new
	if len(e.fake.Containers()) != 1 {
		t.Fatalf("containers while first init runs: %d", len(e.fake.Containers()))
	}

	e.exit("first", 0)
	e.sync(pod)
	e.running("second")

	// A failed init container is restarted (the policy is Always) before any app container.
	e.exit("second", 1)
	e.sync(pod)
	if c := e.running("second"); c.Config.Metadata.Attempt != 1 {
		t.Errorf("restarted init attempt %d", c.Config.Metadata.Attempt)
	}
	if len(e.containersNamed("app")) != 0 {
		t.Fatal("app started after a failed init container")
	}

	e.exit("second", 0)
	e.sync(pod)
	e.running("app")
	if len(e.containersNamed("first")) != 1 {
		t.Error("first init container ran again")
	}
}

func TestInitFailureUnderNeverStopsPod(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("init", ctr("app", "sleep", "1d"))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{ctr("setup", "false")}
	e.sync(pod)
	e.exit("setup", 1)
	for i := 0; i < 2; i++ {
		if res := e.sync(pod); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if n := len(e.fake.Containers()); n != 1 {
		t.Errorf("containers = %d, want only the failed init container", n)
	}
}

// missingImage is an image whose pulls fail with "not found".
const missingImage = "nodelet.local/missing:1"

// missingImagePod is a pod whose one container, app, runs missingImage, set to fail in e.
func missingImagePod(e *testEnv, name string) *v1.Pod {
	e.fake.SetPullError(missingImage, errors.New("not found"))
	c := ctr("app")
	c.Image = missingImage
	return newPod(name, c)
}

func TestImagePullErrors(t *testing.T) {
	e := newTestEnv(t)
	const img = missingImage
	pod := missingImagePod(e, "pull")

	res := e.sync(pod)
	if res.Err == nil || res.Waiting["app"].Reason != "ErrImagePull" {
		t.Fatalf("first sync: %+v", res)
	}
	if len(e.fake.Sandboxes()) != 1 {
		t.Error("sandbox not created before the pull")
	}
	res = e.sync(pod)
	if w := res.Waiting["app"]; w.Reason != "ImagePullBackOff" || w.Message != `Back-off pulling image "`+img+`": ErrImagePull: not found` {
		t.Fatalf("second sync: %+v", w)
	}
	if len(e.fake.Containers()) != 0 {
		t.Error("container created without its image")
	}

	never := ctr("app")
	never.Image = "nodelet.local/absent:1"
	never.ImagePullPolicy = v1.PullNever
	if w := e.sync(newPod("never", never)).Waiting["app"]; w.Reason != "ErrImageNeverPull" {
		t.Fatalf("pull policy Never: %+v", w)
	}
}

// As upstream, the hash covers the container's name and image, the fields the API lets
// change that need a new container: a new image replaces it, anything else keeps it.
func TestChangedSpecRestartsContainer(t *testing.T) {
	e := newTestEnv(t)
	const newImage = "nodelet.local/busybox:other"
	e.fake.AddImage(newImage)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7)
	e.sync(pod)
	old := e.running("app")

	pod.Spec.Containers[0].Args = []string{"ignored"}
	if res := e.sync(pod); res.Err != nil || e.running("app").ID != old.ID {
		t.Fatalf("a change of args restarted the container (err %v)", res.Err)
	}
	pod.Spec.Containers[0].Image = newImage
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	stopped, _ := e.fake.Container(old.ID)
	if stopped.StopTimeout != 7 {
		t.Errorf("old container stop timeout %d, want 7", stopped.StopTimeout)
	}
	if c := e.running("app"); c.Config.Image.UserSpecifiedImage != newImage || c.Config.Metadata.Attempt != 1 {
		t.Errorf("new container %v attempt %d", c.Config.Image, c.Config.Metadata.Attempt)
	}
	if evs := e.events(); !hasEvent(evs, "Normal Killing Container app definition changed, will be restarted") {
		t.Errorf("events %q", evs)
	}
}

func TestStartFailureIsReportedAndRetried(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	e.fake.FailNext("StartContainer", errors.New("exec: not found"))
	res := e.sync(pod)
	if w := res.Waiting["app"]; w.Reason != ReasonRunContainerError || !strings.Contains(w.Message, "exec: not found") {
		t.Fatalf("waiting %+v", res.Waiting)
	}
	if evs := e.events(); !hasEvent(evs, "Warning Failed Error: ") {
		t.Errorf("events %q lack Failed", evs)
	}
	if res := e.sync(pod); len(res.Waiting) != 0 || res.Err != nil {
		t.Fatalf("retry: %+v", res)
	}
	if c := e.running("app"); c.Config.Metadata.Attempt != 1 {
		t.Errorf("retried container attempt %d", c.Config.Metadata.Attempt)
	}
}

func TestConfigErrorIsReported(t *testing.T) {
	e := newTestEnv(t)
	c := ctr("app")
	c.Env = []v1.EnvVar{{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
	res := e.sync(newPod("web", c))
	if res.Waiting["app"].Reason != ReasonCreateContainerConfigError || res.Err == nil {
		t.Fatalf("%+v", res)
	}
}

func filterCalls(calls []string, keep ...string) []string {
	var out []string
	for _, c := range calls {
		for _, k := range keep {
			if c == k {
				out = append(out, c)
			}
		}
	}
	return out
}

func envMap(kvs []*runtimeapi.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Value
	}
	return out
}

func mountMap(mounts []*runtimeapi.Mount) map[string]string {
	out := map[string]string{}
	for _, m := range mounts {
		out[m.ContainerPath] = m.HostPath
	}
	return out
}

func TestImageUpdateResetsBackOff(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("crash", ctr("app", "false"))
	e.sync(pod)
	for i := 0; i < 2; i++ {
		e.exit("app", 1)
		e.sync(pod)
	}
	if w := e.sync(pod).Waiting["app"]; w.Reason != ReasonCrashLoopBackOff {
		t.Fatalf("after two crashes: waiting %+v, want back-off", w)
	}
	const newImage = "nodelet.local/busybox:fixed"
	e.fake.AddImage(newImage)
	pod.Spec.Containers[0].Image = newImage
	if res := e.sync(pod); len(res.Waiting) != 0 {
		t.Fatalf("after the image update: %+v, want the container started at once", res)
	}
	if img := e.running("app").Config.Image.UserSpecifiedImage; img != newImage {
		t.Fatalf("running image %q, want %q", img, newImage)
	}
}
