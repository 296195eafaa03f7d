package deviceplugin

import (
	"errors"
	"slices"
	"strings"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// lastOf prefers the devices it must include and the last others offered.
func lastOf(available, must []string, size int) ([]string, error) {
	rest := slices.DeleteFunc(slices.Clone(available), func(id string) bool { return slices.Contains(must, id) })
	return append(slices.Clone(must), rest[len(rest)-(size-len(must)):]...), nil
}

func TestChooseOrder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cs        candidates
		preferred preferFunc
		want      []string
	}{
		{"reused first", candidates{required: 2, reused: []string{"r"}, unplaced: []string{"a", "b"}}, nil, []string{"r", "a"}},
		{"aligned before others", candidates{required: 2, aligned: []string{"x", "y"}, unaligned: []string{"a"}, unplaced: []string{"b"}}, nil, []string{"x", "y"}},
		{"preference within aligned", candidates{required: 1, aligned: []string{"x", "y"}, unaligned: []string{"a"}}, lastOf, []string{"y"}},
		{"alignment beats preference", candidates{required: 3, aligned: []string{"x"}, unaligned: []string{"a", "b", "c"}}, lastOf, []string{"x", "b", "c"}},
		{"unaligned before unplaced", candidates{required: 2, aligned: []string{"x"}, unaligned: []string{"a"}, unplaced: []string{"b"}}, nil, []string{"x", "a"}},
		{"preference outside the pool ignored", candidates{required: 1, unplaced: []string{"a", "b"}},
			func([]string, []string, int) ([]string, error) { return []string{"zz"}, nil }, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cs.choose(tc.preferred)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("chose %v (%v), want %v", got, err, tc.want)
			}
		})
	}
	_, err := (&candidates{required: 1, unplaced: []string{"a", "b"}}).choose(func([]string, []string, int) ([]string, error) {
		return nil, errors.New("plugin down")
	})
	if err == nil {
		t.Error("a failing GetPreferredAllocation did not fail the allocation")
	}
}

func TestPreferredAllocationIsAskedWhenOffered(t *testing.T) {
	m, dir := startManager(t, 0)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy), device("2", pluginapi.Healthy))
	p.options.GetPreferredAllocationAvailable = true
	var asked []*pluginapi.ContainerPreferredAllocationRequest
	p.prefer = func(req *pluginapi.ContainerPreferredAllocationRequest) []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		asked = append(asked, req)
		return []string{"2", "1"}
	}
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{3, 3})
	pod := podWith("a", testResource, 2)
	if err := m.Allocate(pod, &pod.Spec.Containers[0], topology.Hint{}); err != nil {
		t.Fatal(err)
	}
	if got := allocate(t, m, pod, 0).Envs["FAKE_DEVICES"]; got != "1,2" {
		t.Errorf("devices %q, want the plugin's preference 1,2", got)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(asked) != 1 || asked[0].AllocationSize != 2 || len(asked[0].MustIncludeDeviceIDs) != 0 ||
		strings.Join(asked[0].AvailableDeviceIDs, ",") != "0,1,2" {
		t.Errorf("GetPreferredAllocation requests %v", asked)
	}
}

func TestPreferredAllocationIsNotAskedUnlessOffered(t *testing.T) {
	m, p := registeredPlugin(t, 2)
	pod := podWith("a", testResource, 1)
	if err := admit(m, pod); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Calls(), "GetPreferredAllocation") {
		t.Errorf("plugin calls %v: asked for a preference it does not offer", p.Calls())
	}
}
