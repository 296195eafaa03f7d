package main

import (
	"strconv"
	"strings"
)

func renderMethod(w writer, r *results) {
	p := r.plan
	w("- Rounds: %d; in each, the floor, nodelet and the upstream kubelet run one after the other, the order", p.rounds)
	w("  rotated so each subject runs first, second and last once. Density and the upstream kubelet with")
	w("  PodAndContainerStatsFromCRI and serializeImagePulls=false run in the last round only (marked \"last round\" / \"1 run\"); so does nodelet")
	w("  with `--pod-timeline=false`, against which the last round's nodelet figures show what recording the pod")
	w("  timelines costs. These second configurations go through the same one-pod, restart, burst, CSI, DRA and pull")
	w("  runs before their loaded footprint as the first ones (only their footprint and pull rows are shown), so")
	w("  the footprints compared start from the same history.")
	w("- Guards, the same for every subject: before it starts, the machine's idle CPU is sampled (/proc/stat) and")
	w("  the load average read; while it runs, the runtime's sandboxes are listed every 500 ms and any the bench")
	w("  did not create flags the run (and kills the upstream kubelet before it removes them).")
	w("- Each kubelet runs alone on the project containerd; pods, sandboxes and the Node object are removed")
	w("  between measurements, and the Node registers afresh for each run (both as `%s`, API on :%d).", nodeName, apiPort)
	w("- Pods: one container `%s` (`sleep`), `spec.nodeName` set, no service-account token volume,", image)
	w("  grace period 1 s, created 8 at a time. Latency = the pod's own create request → first watch event with")
	w("  phase Running; \"all\" = the run's first create request → the last pod Running.")
	w("- Floor: the same pods through CRI by this driver (RunPodSandbox, CreateContainer, StartContainer). Latency")
	w("  = the pod's own first CRI call → StartContainer returned; \"all\" = the run's start → the last pod started.")
	w("  Each burst runs at %s CRI pods at once and the fastest \"all\" is reported, with its per-pod figures.", joinInts(p.floorParallels))
	if p.csiPods > 0 {
		w("- CSI: %d pods at once, each with a claim of its own on test/csidriver (bound beforehand; its CSIDriver says", p.csiPods)
		w("  attachRequired, so the attach/detach controller makes a VolumeAttachment the driver marks attached). Both")
		w("  kubelets stage and publish such a volume only once a node status update has listed it in the Node's")
		w("  volumesInUse (the controller's guard against detaching a volume being mounted): the upstream kubelet at its")
		w("  next periodic update (nodeStatusUpdateFrequency, 10 s), nodelet with an update it asks for at once.")
	}
	if p.draPods > 0 {
		w("- DRA: %d pods at once, each with a claim from one ResourceClaimTemplate of a DeviceClass of upstream's DRA", p.draPods)
		w("  test driver (k8s.io/kubernetes v1.33.4 test/e2e/dra/test-driver), run as the kubelet's node plugin with one")
		w("  device per pod; the bench waits for its registration and ResourceSlice first. The pods select the node by")
		w("  label rather than spec.nodeName, so the controller manager makes each claim and the scheduler allocates it;")
		w("  the kubelet then calls NodePrepareResources and hands the CDI device to the runtime. Both kubelets run the")
		w("  whole bench with the DynamicResourceAllocation gate on (beta, off by default in 1.33). A pod whose claims")
		w("  the kubelet failed to prepare at first (its %s event, e.g. a claim read the API server's", draPrepareFailed)
		w("  node authorizer refused before it had linked the claim to the node) is counted in a row of its own; its")
		w("  time includes the kubelet's wait before it tried again.")
	}
	w("- First restart: a container exiting 1 after 3 s (restartPolicy Always), median of %d per round. The runtime", p.restarts)
	w("  row uses the runtime's nanosecond timestamps of the dead and the new container; the API row the same")
	w("  fields as the pod status reports them (whole seconds).")
	w("- Where the CPU goes (bursts and pulls): /proc/stat's busy time of all CPUs and each process's utime+stime")
	w("  (with cutime+cstime: the children it waited for) from the first create call to the last pod Running, grouped")
	w("  by command name; a process born meanwhile counts whole. runc is reaped by the shims and the CNI plugins by")
	w("  containerd, so they count there; the pods' own processes and the kernel's work are in \"the rest\".")
	w("- Footprint: VmRSS sampled every second and utime+stime from /proc/<pid>/stat over %v, after %v of quiet.", p.footprintWindow, p.settle)
	if p.apiWindow > 0 {
		w("- API requests (last round): %d pods, each mounting a ConfigMap and a Secret of its own, run for %v after", p.footprintPods, p.apiWindow+p.settle)
		w("  %v of quiet; the API server's audit log (one event per request of `system:node:%s`, stage", p.settle, nodeName)
		w("  RequestReceived) is counted over the last %v. A watch counts once, when it is opened.", p.apiWindow)
	}
	if p.pullPods > 0 {
		w("- Pulls: %d pods at once, each with an image of its own (busybox plus %d MiB of random bytes, no layer", p.pullPods, pullLayerMiB)
		w("  shared) that the runtime does not hold: it is removed before each run and pulled over HTTP from the local")
		w("  registry (the distribution registry on %s, which the bench pushes them to with gzip-compressed layers, as", registryAddr)
		w("  registries serve them; the project containerd's mirror of registry.k8s.io). Both kubelets keep")
		w("  registryPullQPS 5. nodelet runs with serializeImagePulls=false (no limit on parallel pulls) and registryBurst")
		w("  %d (at the default 10, both kubelets refuse the pulls over it with \"pull QPS exceeded\" and back off 10 s);", pullBurstLimit)
		w("  the upstream kubelet with its defaults (one pull at a time, burst 10: when its pulls end faster than 5 a second,")
		w("  it refuses those past the burst the same way) and, in the last round, with serializeImagePulls=false and")
		w("  registryBurst %d as nodelet. The pods refused are counted from the kubelets' events (a row of their own), and", pullBurstLimit)
		w("  the pull goal leaves out the upstream rounds that had any: a 10 s back-off is not pull speed.")
		w("  The floor pulls through CRI (PullImage side by side with RunPodSandbox, then CreateContainer and")
		w("  StartContainer) at the same parallelisms as its bursts and all %d at once, and reports the fastest \"all\".", p.pullPods)
	}
	if p.densityPods > 0 {
		w("- Density: %d pods at once (maxPods 260); a watch on the Node flags any non-Ready condition; the relist", p.densityPods)
		w("  p99 is interpolated from the kubelet's own histogram, the difference between scrapes before and after.")
	}
	w("- What each kubelet runs while it is measured. nodelet: pod and QoS cgroups with node allocatable enforced")
	w("  on them, the eviction manager (a /stats/summary read every 10 s, CRI ListContainerStats included), container")
	w("  GC every minute, image GC every 5 min, the kernel-log OOM watcher, PLEG relist every second. The upstream")
	w("  kubelet: the same managers, plus cAdvisor's per-container housekeeping (every 10–15 s), which nodelet does")
	w("  not run (it reads cgroup files when asked); with PodAndContainerStatsFromCRI its pod and container stats")
	w("  come from the runtime, as nodelet's do, while cAdvisor still watches the cgroups.")
	w("- Upstream kubelet: `--config` with containerRuntimeEndpoint = the project socket, cgroupDriver cgroupfs,")
	w("  failSwapOn false, maxPods 260, x509 + webhook authentication, Webhook authorization, readOnlyPort 0;")
	w("  both kubelets run with imageGCHighThresholdPercent 100 / low 99 (they never delete the shared test")
	w("  images). The upstream kubelet's sysctl changes are undone afterwards.")
}

func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}
