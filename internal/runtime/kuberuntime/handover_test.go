package kuberuntime

import (
	"strconv"
	"testing"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// A node handed over keeps its containers: one the upstream kubelet made (its labels and
// annotations only) and one an older nodelet made (its own keys and hash) are adopted as they
// run, with their restart counts, and a later restart counts on from there.
func TestAdoptsContainersOfUpstreamAndOlderNodelet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels func(pod, uid, ctr string) map[string]string
		annot  func(hash uint64, legacy uint64) map[string]string
	}{{
		name: "upstream kubelet",
		labels: func(pod, uid, ctr string) map[string]string {
			return map[string]string{container.LabelPodName: pod, container.LabelPodNamespace: "default",
				container.LabelPodUID: uid, "io.kubernetes.container.name": ctr}
		},
		annot: func(hash, _ uint64) map[string]string {
			return map[string]string{"io.kubernetes.container.hash": kubehash.FormatHash(hash),
				"io.kubernetes.container.restartCount": "4", "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
				"io.kubernetes.container.terminationMessagePolicy": "File", "io.kubernetes.pod.terminationGracePeriod": "30"}
		},
	}, {
		name: "older nodelet",
		labels: func(pod, uid, ctr string) map[string]string {
			return map[string]string{container.LabelPodName: pod, container.LabelPodNamespace: "default",
				container.LabelPodUID: uid, "io.kubernetes.name": ctr, container.LabelManagedBy: "nodelet"}
		},
		annot: func(_, legacy uint64) map[string]string {
			return map[string]string{"io.kubernetes.hash": strconv.FormatUint(legacy, 16), "io.kubernetes.restartCount": "4",
				"io.kubernetes.terminationMessagePath": "/dev/termination-log", "io.kubernetes.terminationMessagePolicy": "File",
				container.AnnotationImage: testImage}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			pod := newPod("adopt", ctr("app", "sleep", "1d"))
			e.sync(pod)
			running := e.running("app")
			spec := &pod.Spec.Containers[0]
			err := e.fake.RelabelContainer(running.ID, tc.labels(pod.Name, string(pod.UID), "app"),
				tc.annot(kubehash.ContainerHash(spec), legacyHash(spec)))
			if err != nil {
				t.Fatal(err)
			}
			if res := e.sync(pod); res.Err != nil {
				t.Fatal(res.Err)
			}
			if now := e.running("app"); now.ID != running.ID {
				t.Fatalf("container %s replaced by %s: not adopted", running.ID, now.ID)
			}
			st := e.status(pod).FindContainer("app")
			if st == nil || st.RestartCount != 4 || st.Image != testImage {
				t.Fatalf("adopted container status %+v: want restart count 4 and image %s", st, testImage)
			}
			if err := e.fake.ExitContainer(running.ID, 1); err != nil {
				t.Fatal(err)
			}
			e.sync(pod)
			if next := e.running("app"); next.Config.Annotations[container.AnnotationRestarts] != "5" {
				t.Errorf("restart after adoption annotated %q, want 5", next.Config.Annotations[container.AnnotationRestarts])
			}
		})
	}
}
