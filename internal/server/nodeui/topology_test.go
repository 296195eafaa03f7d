package nodeui

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/topology"
)

func TestNodeTopology(t *testing.T) {
	policies := []Setting{{"cpuManagerPolicy", "static"}, {"topologyManagerPolicy", "single-numa-node"}, {"topologyManagerScope", "pod"}}
	h := NewHandler(Deps{
		NodeName: "node-a", Standalone: true, Node: func(context.Context) *v1.Node { return testNode() },
		Pods: testPods, Stats: NewSampler(nil, 15*time.Second, time.Hour), Events: NewEvents(1),
		Machine: topology.Synthetic(2, 1, 4, 2, 8<<30), ResourcePolicies: policies,
	})
	got := decode[nodeView](t, get(t, h, "GET", "/ui/api/node")).Topology
	if got == nil {
		t.Fatal("no topology in api/node")
	}
	want := topologyView{Sockets: 2, Cores: 8, CPUs: 16, CPUsPerCore: 2, Policies: policies, NUMANodes: []numaNodeView{
		{ID: 0, CPUs: "0-3,8-11", MemoryBytes: 8 << 30, Distances: []int{10, 21}},
		{ID: 1, CPUs: "4-7,12-15", MemoryBytes: 8 << 30, Distances: []int{21, 10}},
	}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("topology\n%+v\nwant\n%+v", *got, want)
	}
	// Without a machine the page says nothing about it.
	if got := decode[nodeView](t, get(t, testHandler(t, testNode()), "GET", "/ui/api/node")); got.Topology != nil {
		t.Errorf("topology without a machine: %+v", got.Topology)
	}
	page := get(t, h, "GET", "/ui/").Body.String()
	if !strings.Contains(page, `id="topology"`) {
		t.Error("the page has no topology section")
	}
}
