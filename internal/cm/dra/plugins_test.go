package dra

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	drav1alpha4 "k8s.io/kubelet/pkg/apis/dra/v1alpha4"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

func TestADriverOfferingOnlyV1alpha4IsSpokenToInIt(t *testing.T) {
	dir, driver := tempDir(t), &fakeDriver{}
	pod := claimPod("p", []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}, "gpu")
	client := newClient(allocatedClaim("gpu", pod))
	plugins := readyPlugins(client)
	endpoint := serveDriver(t, dir, "alpha", driver, true)
	if err := plugins.RegisterPlugin(context.Background(), driverName, endpoint, []string{drav1alpha4.NodeService}); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, dir, plugins, client)
	if err := m.PreparePod(context.Background(), pod); err != nil {
		t.Fatalf("PreparePod through v1alpha4: %v", err)
	}
	if prepares, _ := driver.calls(); len(prepares) != 1 {
		t.Fatalf("prepares = %q", prepares)
	}
}

func TestPluginVersionsAndMissingDrivers(t *testing.T) {
	p := readyPlugins(nil)
	if err := p.RegisterPlugin(context.Background(), "x", "/nonexistent.sock", nil); err == nil || !strings.Contains(err.Error(), "empty list of supported gRPC services") {
		t.Fatalf("RegisterPlugin without versions = %v", err)
	}
	if _, err := p.prepare(context.Background(), "absent.example.com", []*drapb.Claim{{Name: "c"}}); err == nil ||
		!strings.Contains(err.Error(), "not found in the list of registered DRA plugins") {
		t.Fatalf("prepare with an unregistered driver = %v", err)
	}
	if got, _ := chooseService([]string{"v1alpha3.NodeService", drapb.DRAPluginService}); got != drapb.DRAPluginService {
		t.Fatalf("chose %s", got)
	}
}

// deletes are the ResourceSlice DeleteCollection calls' field selectors.
func deletes(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		if dc, ok := a.(clienttesting.DeleteCollectionAction); ok && dc.GetResource().Resource == "resourceslices" {
			out = append(out, dc.GetListRestrictions().Fields.String())
		}
	}
	return out
}

func TestADriverThatGoesAwayLosesItsSlicesUnlessItComesBack(t *testing.T) {
	dir, driver := tempDir(t), &fakeDriver{}
	client := newClient()
	p := NewPlugins(nil, "node-1")
	p.client = kubeclientFor(client)
	p.delay = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	endpoint := serveDriver(t, dir, "driver", driver, false)
	<-p.wiped
	if err := p.RegisterPlugin(ctx, driverName, endpoint, []string{drapb.DRAPluginService}); err != nil {
		t.Fatal(err)
	}
	if got := deletes(client.Actions()); len(got) != 1 || got[0] != "spec.nodeName=node-1" {
		t.Fatalf("at start: slice deletions %q, want all of the node's", got)
	}
	// The driver restarts: it deregisters and registers again within the delay.
	p.DeregisterPlugin(driverName, endpoint)
	if err := p.RegisterPlugin(ctx, driverName, endpoint, []string{drapb.DRAPluginService}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * p.delay)
	if got := deletes(client.Actions()); len(got) != 1 {
		t.Fatalf("a driver back within the delay lost its slices: %q", got)
	}
	if _, err := p.get(driverName); err != nil {
		t.Fatal(err)
	}
	// It goes for good.
	p.DeregisterPlugin(driverName, endpoint)
	testutil.Eventually(t, "the driver's slices deleted", func() bool { return len(deletes(client.Actions())) == 2 })
	if got := deletes(client.Actions())[1]; got != "spec.driver=gpu.example.com,spec.nodeName=node-1" {
		t.Fatalf("deletion selector %q", got)
	}
	if names := p.Registered(); len(names) != 0 {
		t.Fatalf("still registered: %v", names)
	}
}

func TestNoDriverRegistersBeforeTheStartWipe(t *testing.T) {
	p := NewPlugins(nil, "node-1")
	if err := p.RegisterPlugin(context.Background(), driverName, "/x.sock", []string{drapb.DRAPluginService}); err == nil {
		t.Fatal("registered before the node's old slices were wiped")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testutil.Eventually(t, "registration after the wipe", func() bool {
		return p.RegisterPlugin(context.Background(), driverName, "/x.sock", []string{drapb.DRAPluginService}) == nil
	})
}

// An API server that refuses the start wipe (resource.k8s.io off) does not keep drivers out:
// they register after its first attempt while it is retried.
func TestARefusedStartWipeDoesNotKeepDriversOut(t *testing.T) {
	client := newClient()
	client.PrependReactor("delete-collection", "resourceslices", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server could not find the requested resource")
	})
	p := NewPlugins(kubeclientFor(client), "node-1")
	testutil.Start(t, p.Run)
	testutil.Eventually(t, "registration after the first wipe attempt", func() bool {
		return p.RegisterPlugin(context.Background(), driverName, "/x.sock", []string{drapb.DRAPluginService}) == nil
	})
}
