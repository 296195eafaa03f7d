package deviceplugin

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/cm/checkpoint"
)

// CheckpointName is the state file, inside the plugin directory, that holds which containers
// hold which devices: upstream's name and format, so a node can switch kubelets with its pods'
// devices intact.
const CheckpointName = "kubelet_internal_checkpoint"

// noNUMANode is the NUMA key upstream files devices under when their plugin reports no topology.
const noNUMANode int64 = -1

// The types below mirror upstream's checkpoint types field for field: their JSON is the file,
// and their spew-printed form (with upstream's type names) is what the checksum covers.

// DevicesPerNUMA lists a container's device IDs of one resource under each device's NUMA node.
type DevicesPerNUMA map[int64][]string

// PodDevicesEntry is one container's devices of one resource and the plugin's Allocate answer
// for them (protobuf-encoded ContainerAllocateResponse).
type PodDevicesEntry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     DevicesPerNUMA
	AllocResp     []byte
}

// checkpointData is what the checksum covers.
type checkpointData struct {
	PodDeviceEntries []PodDevicesEntry
	// RegisteredDevices lists every device of every resource (healthy or not) when written.
	RegisteredDevices map[string][]string
}

// checkpointFile is the file: the data and its checksum.
type checkpointFile struct {
	Data     checkpointData
	Checksum uint64
}

// upstreamNames maps this package's checkpoint types to upstream's, which its checksum prints.
var upstreamNames = map[string]string{
	"deviceplugin.checkpointData":  "checkpoint.checkpointData",
	"deviceplugin.PodDevicesEntry": "checkpoint.PodDevicesEntry",
	"deviceplugin.DevicesPerNUMA":  "checkpoint.DevicesPerNUMA",
}

// IDs returns the device IDs, each once, sorted.
func (d DevicesPerNUMA) IDs() []string {
	var ids []string
	for _, list := range d {
		ids = append(ids, list...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func (m *Manager) checkpointPath() string { return filepath.Join(m.opts.Dir, CheckpointName) }

// snapshot builds the checkpoint of the current state. Called with m.mu held.
func (m *Manager) snapshot() checkpointData {
	data := checkpointData{PodDeviceEntries: []PodDevicesEntry{}, RegisteredDevices: map[string][]string{}}
	for _, uid := range slices.Sorted(maps.Keys(m.pods)) {
		containers := m.pods[uid]
		for _, name := range slices.Sorted(maps.Keys(containers)) {
			cd := containers[name]
			for _, res := range slices.Sorted(maps.Keys(cd.devices)) {
				var resp []byte
				if r := cd.responses[res]; r != nil {
					var err error
					if resp, err = r.Marshal(); err != nil {
						klog.ErrorS(err, "Encoding a device plugin's Allocate answer for the checkpoint", "resource", res)
					}
				}
				data.PodDeviceEntries = append(data.PodDeviceEntries, PodDevicesEntry{
					PodUID: string(uid), ContainerName: name, ResourceName: res,
					DeviceIDs: cd.devices[res], AllocResp: resp,
				})
			}
		}
	}
	for name, r := range m.resources {
		ids := slices.Sorted(maps.Keys(r.devices))
		if ids == nil {
			ids = []string{}
		}
		data.RegisteredDevices[name] = ids
	}
	return data
}

// writeCheckpoint stores the current state. A failure is logged: the allocation in memory
// stands, and the next change writes the file again. Called with m.mu held.
func (m *Manager) writeCheckpoint() {
	data := m.snapshot()
	file := checkpointFile{Data: data, Checksum: checkpoint.Sum(data, upstreamNames)}
	if err := checkpoint.Write(m.checkpointPath(), file); err != nil {
		klog.ErrorS(err, "Writing the device checkpoint")
	}
}

// readCheckpoint returns the state a previous nodelet (or kubelet) left, if any.
func readCheckpoint(path string) (*checkpointData, error) {
	var file checkpointFile
	found, err := checkpoint.Read(path, &file)
	if err != nil || !found {
		return nil, err
	}
	if err := checkpoint.Verify(path, file.Checksum, checkpoint.Sum(file.Data, upstreamNames)); err != nil {
		return nil, err
	}
	return &file.Data, nil
}

// restore loads the checkpoint into an empty manager: the containers keep their devices and
// the plugins' answers, and every resource listed is known (at zero devices until its plugin
// registers again), so pods requesting it wait for the plugin rather than pass unchecked. A
// file that cannot be read is logged and left to be overwritten, as upstream does.
func (m *Manager) restore() {
	data, err := readCheckpoint(m.checkpointPath())
	if err != nil {
		var corrupt *checkpoint.CorruptError
		if errors.As(err, &corrupt) {
			klog.ErrorS(err, "Device checkpoint ignored: device assignments of running pods are lost")
		} else {
			klog.ErrorS(err, "Reading the device checkpoint")
		}
		return
	}
	if data == nil {
		return
	}
	for name := range data.RegisteredDevices {
		m.resources[name] = &pluginResource{devices: map[string]deviceInfo{}, stopped: true}
	}
	entries := 0
	for _, e := range data.PodDeviceEntries {
		resp := &pluginapi.ContainerAllocateResponse{}
		if err := resp.Unmarshal(e.AllocResp); err != nil {
			klog.ErrorS(err, "Device checkpoint entry skipped: its Allocate answer does not decode",
				"podUID", e.PodUID, "container", e.ContainerName, "resource", e.ResourceName)
			continue
		}
		if m.resources[e.ResourceName] == nil {
			m.resources[e.ResourceName] = &pluginResource{devices: map[string]deviceInfo{}, stopped: true}
		}
		cd := m.container(types.UID(e.PodUID), e.ContainerName)
		cd.devices[e.ResourceName] = e.DeviceIDs
		cd.responses[e.ResourceName] = resp
		entries++
	}
	klog.InfoS("Restored device assignments from the checkpoint", "pods", len(m.pods), "entries", entries, "resources", len(data.RegisteredDevices))
}
