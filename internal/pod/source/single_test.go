package source

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// Through the merger the single pod is an ADD, then a DELETE carrying its grace period (the
// pod stays known), then a REMOVE.
func TestSinglePodAddDeleteRemove(t *testing.T) {
	pod, err := ReadManifest([]byte(manifest("job", "busybox:1")), "/tmp/job.yaml", testNode)
	if err != nil {
		t.Fatal(err)
	}
	m := runMerger(t)
	src := NewSinglePod(pod, m.Channel(podutil.FileSource))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	add := nextUpdate(t, m)
	if add.Op != ADD || len(add.Pods) != 1 || add.Pods[0].Name != "job-node1" || add.Pods[0].UID != pod.UID {
		t.Fatalf("first update %v %v, want ADD of job-node1", add.Op, names(add.Pods))
	}
	if !m.SeenAllSources(podutil.FileSource) {
		t.Error("the single pod source has not counted as reported")
	}

	at := time.Now()
	src.Delete(at)
	del := nextUpdate(t, m)
	if del.Op != DELETE || len(del.Pods) != 1 {
		t.Fatalf("after Delete: %v %v, want DELETE", del.Op, names(del.Pods))
	}
	got := del.Pods[0]
	if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Time.Equal(at) ||
		got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != v1.DefaultTerminationGracePeriodSeconds {
		t.Errorf("deleted pod: timestamp %v grace %v, want %v and the default 30s", got.DeletionTimestamp, got.DeletionGracePeriodSeconds, at)
	}
	if pod.DeletionTimestamp != nil {
		t.Error("Delete changed the pod the source was given")
	}

	src.Remove()
	if rm := nextUpdate(t, m); rm.Op != REMOVE || len(rm.Pods) != 1 || rm.Pods[0].UID != pod.UID {
		t.Fatalf("after Remove: %v %v, want REMOVE of the pod", rm.Op, names(rm.Pods))
	}
}

// A Remove asked for before the source ran still follows the pod's ADD.
func TestSinglePodRemoveBeforeRun(t *testing.T) {
	pod, err := ReadManifest([]byte(manifest("early", "busybox:1")), "/tmp/early.yaml", testNode)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []*v1.Pod, 2)
	src := NewSinglePod(pod, out)
	src.Delete(time.Now())
	src.Remove() // replaces the Delete not sent yet
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx)
	}()
	if first := receive(t, out); len(first) != 1 {
		t.Fatalf("first snapshot %v, want the pod", names(first))
	}
	if second := receive(t, out); len(second) != 0 {
		t.Fatalf("second snapshot %v, want none", names(second))
	}
	cancel()
	<-done
}

// ReadManifest gives the very pod (UID included) the directory source makes of the same file,
// and the same errors.
func TestReadManifestMatchesTheFileSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeFile(t, path, manifest("web", "nginx:1"))
	out, _ := runFileSource(t, dir, time.Hour)
	fromDir := receiveNames(t, out, "web-node1")[0]

	pod, err := ReadManifest([]byte(manifest("web", "nginx:1")), path, testNode)
	if err != nil {
		t.Fatal(err)
	}
	if pod.UID != fromDir.UID || pod.Name != fromDir.Name || pod.Namespace != fromDir.Namespace ||
		pod.Spec.RestartPolicy != fromDir.Spec.RestartPolicy || pod.Annotations[podutil.AnnotationSource] != podutil.FileSource {
		t.Errorf("ReadManifest gave %s/%s uid %s, the directory %s/%s uid %s", pod.Namespace, pod.Name, pod.UID,
			fromDir.Namespace, fromDir.Name, fromDir.UID)
	}
	for content, want := range map[string]string{
		"apiVersion: v1\nkind: Pod\nmetadata: [oops\n": "not a JSON or YAML object",
		manifest("Bad_Name", "nginx:1"):                "metadata.name",
		"apiVersion: apps/v1\nkind: Deployment\n":      `kind "Deployment" apiVersion "apps/v1" is not supported`,
	} {
		if _, err := ReadManifest([]byte(content), path, testNode); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadManifest(%q) = %v, want an error with %q", content, err, want)
		}
	}
}
