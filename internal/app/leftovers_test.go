package app

import (
	"os"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The temporary files of atomic writes a crash left in the root directory, its device plugin
// directory and the pod directories are removed at start; nothing else is.
func TestStartSweepsAtomicWriteLeftovers(t *testing.T) {
	cfg, fake, manifests := testConfig(t)
	root := cfg.RootDir
	leftovers := []string{
		filepath.Join(root, ".cpu_manager_state.tmp-2791304"),
		filepath.Join(root, ".allocated_pods_state.tmp-11"),
		filepath.Join(root, "device-plugins", ".kubelet_internal_checkpoint.tmp-42"),
		filepath.Join(root, "pods", "3f1c2d9e-0000-4000-8000-000000000001", ".userns.tmp-7"),
	}
	kept := []string{
		filepath.Join(root, ".hidden"),
		filepath.Join(root, "notes.tmp-1"),
		filepath.Join(root, ".cpu_manager_state.tmp-x"),
		filepath.Join(root, "pods", "3f1c2d9e-0000-4000-8000-000000000001", "etc-hosts"),
	}
	for _, p := range append(append([]string{}, leftovers...), kept...) {
		mustWrite(p, "half-written")
	}
	linkTarget := filepath.Join(t.TempDir(), "elsewhere")
	mustWrite(linkTarget, "not ours")
	if err := os.Symlink(linkTarget, filepath.Join(root, ".memory_manager_state.tmp-5")); err != nil {
		t.Fatal(err)
	}
	startNodeWith(t, cfg)
	writePod(t, manifests, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	for _, p := range leftovers {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left in place (%v)", p, err)
		}
	}
	for _, p := range append(kept, linkTarget) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// A corrupt pods/<uid>/userns file (a pod that is gone, or a node that never ran a hostUsers:
// false pod) does not stop the node: other pods, with user namespaces or without, run.
func TestStartWithACorruptUserNamespaceFile(t *testing.T) {
	cfg, fake, manifests := testConfig(t)
	fake.SetFeatures([]*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}, nil)
	mustWrite(filepath.Join(cfg.RootDir, "pods", "3f1c2d9e-0000-4000-8000-000000000002", "userns"), `{"uidMappings": [`)
	startNodeWith(t, cfg)
	writePod(t, manifests, "web", "Always")
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"isolated"},
"spec":{"hostUsers":false,"terminationGracePeriodSeconds":1,
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"]}]}}`
	if err := os.WriteFile(filepath.Join(manifests, "isolated.json"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "web and isolated running", func() bool {
		return running(fake, "web") != nil && running(fake, "isolated") != nil
	})
}
