package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
	"github.com/nodelet/nodelet/internal/testutil"
)

// The whole node on a runtime reporting user namespaces: hostUsers: false static pods get
// disjoint ranges in CRI, and a removed pod's range is freed for the next pod.
func TestUserNamespaceRangesFollowThePods(t *testing.T) {
	cfg, fake, dir := testConfig(t)
	fake.SetFeatures([]*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	write := func(name string) {
		pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},
"spec":{"hostUsers":false,"terminationGracePeriodSeconds":1,
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"]}]}}`, name)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(pod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// hostID is the first host ID of the pod's ready sandbox, 0 while it has none.
	hostID := func(name string) uint32 {
		for _, sb := range fake.Sandboxes() {
			if sb.Config.Metadata.Name == name+"-node1" && sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				ns := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
				if ns.GetMode() != runtimeapi.NamespaceMode_POD || len(ns.GetUids()) != 1 {
					t.Fatalf("%s: user namespace %v, want the pod's own", name, ns)
				}
				return ns.GetUids()[0].HostId
			}
		}
		return 0
	}
	write("a")
	write("b")
	testutil.Eventually(t, "a and b running", func() bool { return running(fake, "a") != nil && running(fake, "b") != nil })
	a, b := hostID("a"), hostID("b")
	if a == 0 || b == 0 || a == b {
		t.Fatalf("host IDs a=%d b=%d, want two distinct ranges", a, b)
	}
	if err := os.Remove(filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "a removed", func() bool { return len(podContainers(fake, "a")) == 0 && !hasSandbox(fake, "a") })
	write("c")
	testutil.Eventually(t, "c running", func() bool { return running(fake, "c") != nil })
	if c := hostID("c"); c != a {
		t.Fatalf("c got host ID %d, want a's freed range %d", c, a)
	}
}

func hasSandbox(fake *fakecri.Fake, pod string) bool {
	for _, sb := range fake.Sandboxes() {
		if sb.Config.Metadata.Name == pod+"-node1" {
			return true
		}
	}
	return false
}
