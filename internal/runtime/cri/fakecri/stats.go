package fakecri

import (
	"context"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Usage is what the fake reports for one container in ListContainerStats. CPU and memory are
// reported only while the container runs, as containerd does; the writable layer always.
type Usage struct {
	CPUCoreNanoSeconds uint64
	WorkingSetBytes    uint64
	MemoryUsageBytes   uint64
	RSSBytes           uint64
	PageFaults         uint64
	MajorPageFaults    uint64
	WritableBytes      uint64
	WritableInodes     uint64
}

// usageStore keeps usages per fake. It lives outside Fake (fake.go predates stats) and is
// keyed by the fake's pointer.
var usageStore = struct {
	sync.Mutex
	byFake map[*Fake]map[string]Usage
}{byFake: map[*Fake]map[string]Usage{}}

// SetUsage sets what ListContainerStats reports for container id.
func (f *Fake) SetUsage(id string, u Usage) {
	usageStore.Lock()
	defer usageStore.Unlock()
	if usageStore.byFake[f] == nil {
		usageStore.byFake[f] = map[string]Usage{}
	}
	usageStore.byFake[f][id] = u
}

func (f *Fake) usage(id string) Usage {
	usageStore.Lock()
	defer usageStore.Unlock()
	return usageStore.byFake[f][id]
}

// ListContainerStats reports every container matching the filter, with the usage set by
// SetUsage (zero otherwise) stamped with the fake's clock.
func (f *Fake) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	filter := req.GetFilter()
	now := f.clock.Now().UnixNano()
	resp := &runtimeapi.ListContainerStatsResponse{}
	for _, c := range f.containers {
		if filter.GetId() != "" && filter.GetId() != c.ID {
			continue
		}
		if filter.GetPodSandboxId() != "" && filter.GetPodSandboxId() != c.SandboxID {
			continue
		}
		if !labelsMatch(c.Config.Labels, filter.GetLabelSelector()) {
			continue
		}
		resp.Stats = append(resp.Stats, f.containerStats(c, now))
	}
	return resp, nil
}

func (f *Fake) containerStats(c *Container, now int64) *runtimeapi.ContainerStats {
	u := f.usage(c.ID)
	st := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id: c.ID, Metadata: c.Config.Metadata, Labels: c.Config.Labels, Annotations: c.Config.Annotations,
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp:  now,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: "/fake/snapshots"},
			UsedBytes:  &runtimeapi.UInt64Value{Value: u.WritableBytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: u.WritableInodes},
		},
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return st
	}
	st.Cpu = &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: u.CPUCoreNanoSeconds}}
	st.Memory = &runtimeapi.MemoryUsage{
		Timestamp:       now,
		WorkingSetBytes: &runtimeapi.UInt64Value{Value: u.WorkingSetBytes},
		UsageBytes:      &runtimeapi.UInt64Value{Value: u.MemoryUsageBytes},
		RssBytes:        &runtimeapi.UInt64Value{Value: u.RSSBytes},
		PageFaults:      &runtimeapi.UInt64Value{Value: u.PageFaults},
		MajorPageFaults: &runtimeapi.UInt64Value{Value: u.MajorPageFaults},
	}
	return st
}
