package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

// upstreamCheckpoint is a dra_manager_state as the upstream kubelet 1.33 writes it, built by
// hand from its documented shape (state.Checkpoint{Data, Checksum} around
// CheckpointData{TypeMeta, ClaimInfoStateList}; ClaimInfoState has no JSON tags and PodUIDs is
// a sets.Set[string], an object of empty objects), with the pod p's two claims prepared.
func upstreamCheckpoint() []byte {
	data := `{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","ClaimInfoStateList":[` +
		`{"ClaimUID":"uid-gpu-shared","ClaimName":"gpu-shared","Namespace":"default","PodUIDs":{"pod-p":{}},` +
		`"DriverState":{"gpu.example.com":{"Devices":[{"PoolName":"node-1","DeviceName":"gpu-gpu-shared","RequestNames":["gpu"],"CDIDeviceIDs":["example.com/gpu=gpu-shared"]}]}}},` +
		`{"ClaimUID":"uid-p-own","ClaimName":"p-own","Namespace":"default","PodUIDs":{"pod-p":{}},` +
		`"DriverState":{"gpu.example.com":{"Devices":[{"PoolName":"node-1","DeviceName":"gpu-p-own","RequestNames":["gpu"],"CDIDeviceIDs":["example.com/gpu=p-own"]}]}}}]}`
	return []byte(fmt.Sprintf(`{"Data":%s,"Checksum":%d}`, strconv.Quote(data), crc32.ChecksumIEEE([]byte(data))))
}

func TestAnUpstreamCheckpointIsTakenOver(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, stateFileName), upstreamCheckpoint(), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, e.dir, e.plugins, newClient(allocatedClaim("gpu-shared", e.pod), ownedBy(allocatedClaim("p-own", e.pod), e.pod)))
	hooks := podhooks.Hooks{Prepare: []podhooks.Prepare{m}, Container: []podhooks.Container{m}}
	if err := hooks.PreparePod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	if prepares, _ := e.driver.calls(); len(prepares) != 0 {
		t.Fatalf("claims the upstream kubelet prepared were prepared again: %q", prepares)
	}
	if got := cdi(t, hooks, e.pod, 0); !slices.Equal(got, []string{"example.com/gpu=gpu-shared"}) {
		t.Errorf("c0's CDI devices = %q", got)
	}
	if err := m.UnpreparePod(context.Background(), e.pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, unprepares := e.driver.calls(); !slices.EqualFunc(unprepares, [][]string{{"gpu-shared", "p-own"}}, slices.Equal) {
		t.Fatalf("NodeUnprepareResources calls = %q", unprepares)
	}
}

// upstreamShape mirrors upstream's checkpoint types field for field, to read what nodelet
// writes the way the upstream kubelet would.
type upstreamShape struct {
	Data     string
	Checksum uint32
}

type upstreamData struct {
	Kind, APIVersion   string
	ClaimInfoStateList []struct {
		ClaimUID, ClaimName, Namespace string
		PodUIDs                        map[string]struct{}
		DriverState                    map[string]struct {
			Devices []struct {
				PoolName, DeviceName       string
				RequestNames, CDIDeviceIDs []string
			}
		}
	}
}

func TestTheCheckpointWrittenIsUpstreamsFormat(t *testing.T) {
	e := newEnv(t)
	if err := e.m.PreparePod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	blob, err := os.ReadFile(filepath.Join(e.dir, stateFileName))
	if err != nil {
		t.Fatal(err)
	}
	var f upstreamShape
	if err := json.Unmarshal(blob, &f); err != nil {
		t.Fatal(err)
	}
	if crc32.ChecksumIEEE([]byte(f.Data)) != f.Checksum {
		t.Fatal("checksum is not the CRC32 of Data")
	}
	var d upstreamData
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
		t.Fatal(err)
	}
	if d.Kind != "DRACheckpoint" || d.APIVersion != "checkpoint.dra.kubelet.k8s.io/v1" || len(d.ClaimInfoStateList) != 2 {
		t.Fatalf("checkpoint data = %s", f.Data)
	}
	c := d.ClaimInfoStateList[1]
	devs := c.DriverState[driverName].Devices
	if c.ClaimName != "p-own" || c.ClaimUID != "uid-p-own" || len(c.PodUIDs) != 1 || len(devs) != 2 ||
		devs[0].CDIDeviceIDs[0] != "example.com/gpu=p-own" || devs[0].RequestNames[0] != "gpu" || devs[0].PoolName != "node-1" {
		t.Fatalf("claim state = %+v", c)
	}
	if _, ok := c.PodUIDs["pod-p"]; !ok {
		t.Fatalf("PodUIDs = %v", c.PodUIDs)
	}
}
