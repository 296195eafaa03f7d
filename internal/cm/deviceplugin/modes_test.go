package deviceplugin

import (
	"os"
	"path/filepath"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// As upstream, the plugin directory is 0750 (its sockets are root's business) and the
// checkpoint 0600 (it holds what each plugin answered, environment included), also over a
// directory and a checkpoint left with wider modes by an older nodelet.
func TestPluginDirectoryAndCheckpointModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "device-plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CheckpointName), []byte(`{"Data":{},"Checksum":0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _ := runManager(t, dir)
	plugged(t, m, "p.sock", device("0", pluginapi.Healthy))
	if err := admit(m, podWith("a", testResource, 1)); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o750, filepath.Join(dir, CheckpointName): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %#o, want %#o", path, got, want)
		}
	}
}
