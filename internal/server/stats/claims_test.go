package stats

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// volumeFigures has figures for every volume it is asked about.
type volumeFigures struct{}

func (volumeFigures) VolumeStats(context.Context, *v1.Pod, string) (statsapi.FsStats, bool) {
	return statsapi.FsStats{UsedBytes: ptr.To(uint64(1))}, true
}

// A persistentVolumeClaim volume and a generic ephemeral volume (the claim <pod>-<volume>) are
// reported with their claim, as upstream; an emptyDir is not a claim's.
func TestClaimVolumeStatsNameTheClaim(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "db", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
		{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}}}
	p := NewSummaryProvider(Deps{Pods: func() []*v1.Pod { return []*v1.Pod{pod} }, Volumes: volumeFigures{}})
	got := map[string]string{}
	for _, vs := range p.ClaimVolumeStats(context.Background()) {
		got[vs.Name] = vs.PVCRef.Namespace + "/" + vs.PVCRef.Name
	}
	if len(got) != 2 || got["db"] != "ns/data" || got["scratch"] != "ns/web-scratch" {
		t.Errorf("claim volumes %v, want db ns/data and scratch ns/web-scratch", got)
	}
}
