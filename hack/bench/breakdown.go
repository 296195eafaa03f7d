package main

import (
	"context"
	"sort"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podTimeline splits one pod's creation → Running into four parts on one clock (the machine's:
// the bench takes its own times and containerd stamps its sandboxes and containers with it).
type podTimeline struct {
	total     time.Duration // create call → Running seen by the watch
	queue     time.Duration // create call → the runtime stamped the sandbox created
	sandbox   time.Duration // sandbox stamp → container created (sandbox start, the kubelet's preparation)
	container time.Duration // container created → started
	status    time.Duration // container started → Running seen (the status write and the API)
}

// segments names the parts of a podTimeline in order, with a getter each.
var segments = []struct {
	name string
	get  func(podTimeline) time.Duration
}{
	{"create call → sandbox created (watch, admission, the kubelet's queue, RunPodSandbox up to the runtime's stamp)", func(t podTimeline) time.Duration { return t.queue }},
	{"sandbox created → container created (rest of RunPodSandbox incl. CNI, the kubelet's preparation, CreateContainer)", func(t podTimeline) time.Duration { return t.sandbox }},
	{"container created → started (StartContainer)", func(t podTimeline) time.Duration { return t.container }},
	{"container started → Running seen by a watch (status update, API write)", func(t podTimeline) time.Duration { return t.status }},
	{"total: create call → Running seen", func(t podTimeline) time.Duration { return t.total }},
}

// timelines reads, for each pod of a run (by UID), the runtime's stamps of its sandbox and
// container and combines them with the bench's own create and Running times.
func (b *bench) timelines(ctx context.Context, rec *runRecord) ([]podTimeline, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sbs, err := b.rt.ListPodSandbox(cctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return nil, err
	}
	sandboxAt := map[string]time.Time{}
	for _, sb := range sbs.Items {
		sandboxAt[sb.Labels[labelPodUID]] = time.Unix(0, sb.CreatedAt)
	}
	ctrs, err := b.rt.ListContainers(cctx, &cri.ListContainersRequest{})
	if err != nil {
		return nil, err
	}
	var out []podTimeline
	for _, c := range ctrs.Containers {
		name, ok := rec.byUID[c.Labels[labelPodUID]]
		if !ok || c.Metadata.GetAttempt() != 0 {
			continue
		}
		st, err := b.rt.ContainerStatus(cctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil || st.Status.StartedAt == 0 {
			continue // a pod whose container went away meanwhile has no timeline
		}
		created, seen := rec.created[name], rec.seen[name]
		sb, ctr, started := sandboxAt[c.Labels[labelPodUID]], time.Unix(0, c.CreatedAt), time.Unix(0, st.Status.StartedAt)
		if sb.IsZero() || seen.IsZero() {
			continue
		}
		out = append(out, podTimeline{total: seen.Sub(created), queue: sb.Sub(created), sandbox: ctr.Sub(sb),
			container: started.Sub(ctr), status: seen.Sub(started)})
	}
	return out, nil
}

// timelineSummary is one column of the breakdown table, per segment: its median over all
// pods, and its mean over the slowest 5 % of pods (by total), which is where the tail goes.
func timelineSummary(all []podTimeline) (median, tail []time.Duration) {
	if len(all) == 0 {
		return nil, nil
	}
	sorted := append([]podTimeline(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].total < sorted[j].total })
	slow := sorted[len(sorted)-max(len(sorted)/20, 1):]
	for _, seg := range segments {
		ds := make([]time.Duration, len(all))
		for i, t := range all {
			ds[i] = seg.get(t)
		}
		var sum time.Duration
		for _, t := range slow {
			sum += seg.get(t)
		}
		median = append(median, newLatencies(ds, 0).pct(50))
		tail = append(tail, sum/time.Duration(len(slow)))
	}
	return median, tail
}
