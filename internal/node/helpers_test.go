package node

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

const testNode = "worker-1"

var testStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeRuntime answers Version.
type fakeRuntime struct {
	name, version string
	err           error
}

func (f *fakeRuntime) Version(context.Context) (string, string, error) {
	return f.name, f.version, f.err
}

// fakeImages answers List with a fixed list.
type fakeImages struct {
	mu     sync.Mutex
	images []v1.ContainerImage
}

func (f *fakeImages) List(context.Context) ([]v1.ContainerImage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]v1.ContainerImage(nil), f.images...), nil
}

// health is a switchable health check.
type health struct {
	mu  sync.Mutex
	err error
}

func (h *health) set(err error) { h.mu.Lock(); h.err = err; h.mu.Unlock() }
func (h *health) check() error  { h.mu.Lock(); defer h.mu.Unlock(); return h.err }

type env struct {
	client   *fake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	health   *health
	images   *fakeImages
	runtime  *fakeRuntime
	ctrl     *Controller
}

func testMachine() *machine.Machine {
	return &machine.Machine{
		CPUs: 4, MemoryBytes: 8 << 30,
		HugePages:       map[v1.ResourceName]int64{"hugepages-2Mi": 0, "hugepages-1Gi": 1 << 30},
		MachineID:       "mid",
		SystemUUID:      "uuid",
		BootID:          "boot",
		KernelVersion:   "6.1.0-test",
		OSImage:         "Debian GNU/Linux 12 (bookworm)",
		OperatingSystem: "linux",
		Architecture:    "amd64",
	}
}

func testOptions() Options {
	return Options{
		NodeName:       testNode,
		NodeIPs:        []string{"192.0.2.10"},
		Labels:         map[string]string{"tier": "edge"},
		Taints:         []v1.Taint{{Key: "dedicated", Value: "edge", Effect: v1.TaintEffectNoSchedule}},
		Register:       true,
		MaxPods:        110,
		KubeReserved:   map[string]string{"cpu": "500m", "memory": "1Gi"},
		SystemReserved: map[string]string{"cpu": "250m", "memory": "512Mi", "ephemeral-storage": "1Gi"},
		EvictionHard:   map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"},
		MaxImages:      2,
		RootDir:        "/nodelet-root", // statfs is faked
	}
}

// rootFsSize is what the fake statfs reports: 100Gi.
const rootFsSize = 100 << 30

func fakeStatfs(path string, st *syscall.Statfs_t) error {
	st.Bsize, st.Blocks = 4096, rootFsSize/4096
	return nil
}

func newEnv(t *testing.T, opts Options, objects ...runtime.Object) *env {
	t.Helper()
	return newEnvView(t, opts, nil, objects...)
}

// newEnvView builds the controller over view (nil: one of its own).
func newEnvView(t *testing.T, opts Options, view *View, objects ...runtime.Object) *env {
	t.Helper()
	e := &env{
		client:   fake.NewClientset(objects...),
		clock:    clocktesting.NewFakeClock(testStart),
		recorder: record.NewFakeRecorder(100),
		health:   &health{},
		images: &fakeImages{images: []v1.ContainerImage{
			{Names: []string{"a@sha256:1", "a:1", "a:2", "a:3", "a:4", "a:5"}, SizeBytes: 300},
			{Names: []string{"b:1"}, SizeBytes: 200},
			{Names: []string{"c:1"}, SizeBytes: 100},
		}},
		runtime: &fakeRuntime{name: "containerd", version: "1.6.20~ds1"},
	}
	ctrl, err := New(opts, Deps{
		Client: kubeclienttest.FromClientset(e.client), Recorder: e.recorder, Runtime: e.runtime, Images: e.images,
		Health: e.health.check, Machine: testMachine(),
		Paths: machine.MachinePaths{Proc: "/nonexistent", Statfs: fakeStatfs}, Clock: e.clock, View: view,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctrl.primaryIP = func() (net.IP, error) { return nil, errors.New("no host address in tests") }
	e.ctrl = ctrl
	return e
}

// events drains the recorder: "Type Reason Message" strings.
func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// reasons drains the recorder and keeps only the reasons.
func (e *env) reasons() []string {
	var out []string
	for _, ev := range e.events() {
		out = append(out, strings.Fields(ev)[1])
	}
	return out
}

// count counts the client's actions with this verb, resource and subresource.
func (e *env) count(verb, resource, subresource string) int {
	n := 0
	for _, a := range e.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			n++
		}
	}
	return n
}

func (e *env) node(t *testing.T) *v1.Node {
	t.Helper()
	obj, err := e.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", testNode)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*v1.Node)
}

// failN makes the first n requests with this verb on resource fail with err.
func failN(client *fake.Clientset, verb, resource string, n int, err error) {
	var mu sync.Mutex
	client.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return false, nil, nil
		}
		n--
		return true, nil, err
	})
}

func condition(n *v1.Node, typ v1.NodeConditionType) v1.NodeCondition {
	c, _ := findCondition(n.Status.Conditions, typ)
	return c
}

func fakeClient() *fake.Clientset { return fake.NewClientset() }
