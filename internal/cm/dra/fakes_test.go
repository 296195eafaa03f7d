package dra

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	drav1alpha4 "k8s.io/kubelet/pkg/apis/dra/v1alpha4"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/testutil"
)

// fakeDriver is a DRA driver's kubelet plugin: it prepares every claim with one device whose
// CDI ID names the claim, and records the calls.
type fakeDriver struct {
	drapb.UnimplementedDRAPluginServer
	mu             sync.Mutex
	prepares       [][]string // claim names per NodePrepareResources call
	unprepares     [][]string
	failUnprepares int // the next n unprepare calls fail
}

func (d *fakeDriver) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	var names []string
	for _, c := range req.Claims {
		names = append(names, c.Name)
		resp.Claims[c.UID] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{
			{RequestNames: []string{"gpu"}, PoolName: "node-1", DeviceName: "gpu-" + c.Name, CDIDeviceIDs: []string{"example.com/gpu=" + c.Name}},
			{RequestNames: []string{"nic"}, PoolName: "node-1", DeviceName: "nic-" + c.Name, CDIDeviceIDs: []string{"example.com/nic=" + c.Name}},
		}}
	}
	slices.Sort(names)
	d.prepares = append(d.prepares, names)
	return resp, nil
}

func (d *fakeDriver) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	var names []string
	for _, c := range req.Claims {
		names = append(names, c.Name)
		r := &drapb.NodeUnprepareResourceResponse{}
		if d.failUnprepares > 0 {
			r.Error = "device busy"
		}
		resp.Claims[c.UID] = r
	}
	if d.failUnprepares > 0 {
		d.failUnprepares--
	}
	slices.Sort(names)
	d.unprepares = append(d.unprepares, names)
	return resp, nil
}

func (d *fakeDriver) calls() (prepares, unprepares [][]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.prepares), slices.Clone(d.unprepares)
}

// tempDir is short enough for unix socket paths.
func tempDir(t *testing.T) string { return testutil.ShortDir(t, "dra") }

// serveDriver serves d on dir/name.sock, with the v1beta1 service or only v1alpha4's.
func serveDriver(t *testing.T, dir, name string, d *fakeDriver, alpha bool) string {
	t.Helper()
	path := filepath.Join(dir, name+".sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if alpha {
		drav1alpha4.RegisterNodeServer(s, drav1alpha4.V1Beta1ServerWrapper{DRAPluginServer: d})
	} else {
		drapb.RegisterDRAPluginServer(s, d)
	}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return path
}

// readyPlugins is a registry whose start-up wipe is done (standalone: none to do).
func readyPlugins(client *fake.Clientset) *Plugins {
	var p *Plugins
	if client == nil {
		p = NewPlugins(nil, "node-1")
	} else {
		p = NewPlugins(kubeclienttest.FromClientset(client), "node-1")
	}
	close(p.wiped)
	return p
}

const driverName = "gpu.example.com"

// allocatedClaim is a claim of driverName allocated on the node and reserved for pods.
func allocatedClaim(name string, pods ...*v1.Pod) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driverName, Pool: "node-1", Device: "gpu-0"}},
		}}},
	}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

// ownedBy makes pod the controller of claim, as the claim controller does for a template's.
func ownedBy(claim *resourceapi.ResourceClaim, pod *v1.Pod) *resourceapi.ResourceClaim {
	claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	return claim
}

// claimPod has one container per claim reference given as "claim" or "claim/request".
func claimPod(name string, claims []v1.PodResourceClaim, refs ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("pod-" + name)},
		Spec: v1.PodSpec{ResourceClaims: claims}}
	for i, ref := range refs {
		claim, request, _ := strings.Cut(ref, "/")
		c := v1.Container{Name: "c" + string(rune('0'+i))}
		if claim != "" {
			c.Resources.Claims = []v1.ResourceClaim{{Name: claim, Request: request}}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	return pod
}

func newManager(t *testing.T, dir string, plugins *Plugins, client *fake.Clientset) *Manager {
	t.Helper()
	opts := Options{StateDir: dir, Plugins: plugins}
	if client != nil {
		opts.Client = kubeclienttest.FromClientset(client)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newClient(objs ...runtime.Object) *fake.Clientset { return fake.NewClientset(objs...) }

func kubeclientFor(c *fake.Clientset) kubeclient.Interface { return kubeclienttest.FromClientset(c) }
