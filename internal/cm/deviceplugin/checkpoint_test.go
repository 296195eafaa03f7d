package deviceplugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/nodelet/nodelet/internal/cm/checkpoint"
)

// runManager starts a manager on dir and returns a function that stops it, as a nodelet
// restart does.
func runManager(t *testing.T, dir string) (*Manager, func()) {
	t.Helper()
	return runManagerWith(t, dir, Options{})
}

// runManagerWith is runManager with a manager made with opts.
func runManagerWith(t *testing.T, dir string, opts Options) (*Manager, func()) {
	t.Helper()
	opts.Dir, opts.StopGracePeriod = dir, time.Hour
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return m, stop
}

// plugged registers a new fake plugin serving devices on m.
func plugged(t *testing.T, m *Manager, endpoint string, devices ...*pluginapi.Device) *fakePlugin {
	t.Helper()
	p := newFakePlugin(t, m.opts.Dir, endpoint, devices...)
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{int64(len(devices)), int64(len(devices))})
	return p
}

func TestAssignmentsSurviveARestart(t *testing.T) {
	dir := filepath.Join(shortDir(t), "device-plugins")
	first, stop := runManager(t, dir)
	plugged(t, first, "p1.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
	held := podWith("held", testResource, 1)
	if err := admit(first, held); err != nil {
		t.Fatal(err)
	}
	stop()

	second, _ := runManager(t, dir)
	want := first.ContainerDevices(held.UID, "c0")
	if got := second.ContainerDevices(held.UID, "c0"); len(got) != 1 || !slices.Equal(got[0].DeviceIds, want[0].DeviceIds) {
		t.Fatalf("restored devices %v, want %v", got, want)
	}
	// Until its plugin registers again the resource is known, at zero: a pod asking for it
	// is refused rather than admitted unchecked.
	if got := resourceCounts(second, testResource); got != (counts{0, 0}) {
		t.Errorf("restored resource counts %v, want {0 0}", got)
	}
	if err := admit(second, podWith("early", testResource, 1)); err == nil {
		t.Error("admitted before the plugin registered again")
	}
	// The container restarts with the kept answer, the plugin not asked again.
	if got := allocate(t, second, held, 0).Envs["FAKE_DEVICES"]; got != "0" {
		t.Errorf("restored setup %q, want device 0", got)
	}

	p := plugged(t, second, "p2.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
	if err := admit(second, podWith("greedy", testResource, 2)); err == nil {
		t.Error("a new pod was given the device a restored pod holds")
	}
	fresh := podWith("fresh", testResource, 1)
	if err := admit(second, fresh); err != nil {
		t.Fatal(err)
	}
	if got := allocate(t, second, fresh, 0).Envs["FAKE_DEVICES"]; got != "1" {
		t.Errorf("new pod got %q, want the free device 1", got)
	}
	allocate(t, second, held, 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.EqualFunc(p.allocated, [][]string{{"1"}}, slices.Equal) {
		t.Errorf("plugin Allocate requests %v, want only the new pod's [1]", p.allocated)
	}
}

func TestCheckpointFileIsUpstreamsFormat(t *testing.T) {
	m, _ := registeredPlugin(t, 2)
	pod := podWith("a", testResource, 1, 1)
	if err := admit(m, pod); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(m.opts.Dir, CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Data struct {
			PodDeviceEntries []struct {
				PodUID, ContainerName, ResourceName string
				DeviceIDs                           map[string][]string
				AllocResp                           []byte
			}
			RegisteredDevices map[string][]string
		}
		Checksum uint64
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	entries := file.Data.PodDeviceEntries
	if len(entries) != 2 || entries[1].PodUID != "a" || entries[1].ContainerName != "c1" || entries[1].ResourceName != testResource {
		t.Fatalf("entries %+v", entries)
	}
	if got := entries[1].DeviceIDs["-1"]; !slices.Equal(got, []string{"1"}) {
		t.Errorf("devices without topology %v, want [1] under NUMA node -1", entries[1].DeviceIDs)
	}
	resp := &pluginapi.ContainerAllocateResponse{}
	if err := resp.Unmarshal(entries[1].AllocResp); err != nil || resp.Envs["FAKE_DEVICES"] != "1" {
		t.Errorf("AllocResp decodes to %v (%v), want the plugin's answer", resp, err)
	}
	if got := file.Data.RegisteredDevices[testResource]; !slices.Equal(got, []string{"0", "1"}) {
		t.Errorf("registered devices %v", got)
	}
	data, err := readCheckpoint(filepath.Join(m.opts.Dir, CheckpointName))
	if err != nil || file.Checksum != checkpoint.Sum(*data, upstreamNames) {
		t.Errorf("checksum %d does not verify: %v", file.Checksum, err)
	}
}

func TestACorruptCheckpointStartsEmpty(t *testing.T) {
	for name, corrupt := range map[string]func(string) string{
		"checksum": func(s string) string { return strings.Replace(s, `"Checksum":`, `"Checksum":1`, 1) },
		"device":   func(s string) string { return strings.Replace(s, `["0"]`, `["1"]`, 1) },
		"json":     func(s string) string { return s[:len(s)/2] },
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(shortDir(t), "device-plugins")
			first, stop := runManager(t, dir)
			plugged(t, first, "p.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
			if err := admit(first, podWith("a", testResource, 1)); err != nil {
				t.Fatal(err)
			}
			stop()
			path := filepath.Join(dir, CheckpointName)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(corrupt(string(raw))), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := readCheckpoint(path); err == nil {
				t.Fatal("corrupt checkpoint read without an error")
			}
			second, _ := runManager(t, dir)
			if got := second.ContainerDevices(types.UID("a"), "c0"); got != nil {
				t.Errorf("devices %v restored from a corrupt checkpoint", got)
			}
		})
	}
}

// testdata/kubelet_internal_checkpoint was written by the upstream kubelet v1.33.4
// (hack/devicegolden): pod golden-uid, its init container holding one widget that its app
// container took over with a second one.
func TestUpstreamCheckpointIsRead(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	dir := shortDir(t)
	if err := os.WriteFile(filepath.Join(dir, CheckpointName), golden, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := readCheckpoint(filepath.Join(dir, CheckpointName))
	if err != nil {
		t.Fatalf("upstream's checksum does not verify: %v", err)
	}
	m, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const widget = "golden.example.com/widget"
	app, init := m.ContainerDevices("golden-uid", "app"), m.ContainerDevices("golden-uid", "init")
	if countIDs(app) != 2 || countIDs(init) != 1 || app[0].ResourceName != widget {
		t.Fatalf("restored app %v, init %v: want 2 and 1 %s", app, init, widget)
	}
	if !m.Manages(widget) {
		t.Error("the checkpoint's resource is not known after the restore")
	}
	setup, err := m.ContainerSetup(context.Background(), podWith("golden-uid", widget), &v1.Container{Name: "app"})
	if err != nil || setup == nil || setup.Envs["WIDGETS"] == "" || len(setup.Devices) != 1 || len(setup.Mounts) != 1 {
		t.Errorf("restored setup %+v (%v), want the plugin's answer", setup, err)
	}

	// Written back, the entries are byte for byte upstream's (upstream writes them in map order,
	// nodelet sorted), and in upstream's order so is their checksum.
	m.mu.Lock()
	m.writeCheckpoint()
	m.mu.Unlock()
	again, err := readCheckpoint(filepath.Join(dir, CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	order := func(e PodDevicesEntry) int {
		return slices.IndexFunc(data.PodDeviceEntries, func(u PodDevicesEntry) bool { return u.ContainerName == e.ContainerName })
	}
	slices.SortFunc(again.PodDeviceEntries, func(a, b PodDevicesEntry) int { return order(a) - order(b) })
	want, _ := json.Marshal(data.PodDeviceEntries)
	got, _ := json.Marshal(again.PodDeviceEntries)
	if string(got) != string(want) {
		t.Errorf("entries written back differ:\n got %s\nwant %s", got, want)
	}
	again.RegisteredDevices = data.RegisteredDevices
	var file checkpointFile
	if err := json.Unmarshal(golden, &file); err != nil || checkpoint.Sum(*again, upstreamNames) != file.Checksum {
		t.Errorf("nodelet's checksum of the same data differs from upstream's %d (%v)", file.Checksum, err)
	}
}

func countIDs(devices []*podresourcesv1.ContainerDevices) int {
	n := 0
	for _, d := range devices {
		n += len(d.DeviceIds)
	}
	return n
}
