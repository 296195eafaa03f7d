package source

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/testutil"
)

func apiPod(uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: types.UID(uid),
			Labels: map[string]string{"app": "x"}},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "x:1"}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

func runMerger(t *testing.T) *Merger {
	t.Helper()
	m := NewMerger()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return m
}

func send(t *testing.T, ch chan<- []*v1.Pod, pods ...*v1.Pod) {
	t.Helper()
	select {
	case ch <- pods:
	case <-time.After(waitTimeout):
		t.Fatal("timed out sending a snapshot")
	}
}

func nextUpdate(t *testing.T, m *Merger) PodUpdate {
	t.Helper()
	select {
	case u := <-m.Updates():
		return u
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for an update")
		return PodUpdate{}
	}
}

// expectUpdate checks the next update's op, source and pod UIDs (in order).
func expectUpdate(t *testing.T, m *Merger, op Op, source string, uids ...string) PodUpdate {
	t.Helper()
	u := nextUpdate(t, m)
	var got []string
	for _, p := range u.Pods {
		got = append(got, string(p.UID))
	}
	if u.Op != op || u.Source != source || !slices.Equal(got, uids) {
		t.Fatalf("update = %s %s %v, want %s %s %v", u.Op, u.Source, got, op, source, uids)
	}
	return u
}

func TestMergerOps(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.APISource)
	a, b := apiPod("a"), apiPod("b")
	b.Annotations = map[string]string{podutil.AnnotationSource: podutil.FileSource, podutil.AnnotationMirror: "x"} // a mirror pod
	send(t, ch, a, b)
	added := expectUpdate(t, m, ADD, podutil.APISource, "a", "b")
	if added.Pods[0].Annotations[podutil.AnnotationSource] != podutil.APISource || added.Pods[0].Annotations[podutil.AnnotationSeen] == "" ||
		podutil.IsStatic(added.Pods[1]) {
		t.Errorf("API pod not stamped: %v", added.Pods[0].Annotations)
	}

	cases := []struct {
		name   string
		change func(p *v1.Pod)
		op     Op
	}{
		{"spec", func(p *v1.Pod) { p.Spec.Containers[0].Image = "x:2" }, UPDATE},
		{"labels", func(p *v1.Pod) { p.Labels = map[string]string{"app": "y"} }, UPDATE},
		{"annotations", func(p *v1.Pod) { p.Annotations = map[string]string{"note": "1"} }, UPDATE},
		{"grace period", func(p *v1.Pod) { p.DeletionGracePeriodSeconds = ptr.To(int64(10)) }, UPDATE},
		{"deletion", func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, DELETE},
		{"status", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }, RECONCILE},
	}
	current := b.DeepCopy()
	for _, tc := range cases {
		next := current.DeepCopy()
		tc.change(next)
		send(t, ch, a, next)
		u := expectUpdate(t, m, tc.op, podutil.APISource, "b")
		if tc.name == "spec" && u.Pods[0].Spec.Containers[0].Image != "x:2" {
			t.Errorf("update carries the old pod")
		}
		current = next
	}

	// Only the seen time or the resource version differs: no update. The
	// following removal must be the very next update.
	quiet := current.DeepCopy()
	quiet.ResourceVersion = "42"
	quiet.Annotations[podutil.AnnotationSeen] = "2001-01-01T00:00:00Z"
	send(t, ch, a, quiet)
	send(t, ch, a)
	expectUpdate(t, m, REMOVE, podutil.APISource, "b")
}

func TestMergerGroupOrder(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.FileSource)
	send(t, ch, apiPod("gone"), apiPod("upd"), apiPod("del"), apiPod("rec"), apiPod("same"))
	expectUpdate(t, m, ADD, podutil.FileSource, "gone", "upd", "del", "rec", "same")

	upd, del, rec := apiPod("upd"), apiPod("del"), apiPod("rec")
	upd.Spec.Containers[0].Image = "x:2"
	del.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	rec.Status.Phase = v1.PodRunning
	send(t, ch, rec, del, apiPod("new"), upd, apiPod("same"))
	expectUpdate(t, m, REMOVE, podutil.FileSource, "gone")
	expectUpdate(t, m, ADD, podutil.FileSource, "new")
	expectUpdate(t, m, UPDATE, podutil.FileSource, "upd")
	expectUpdate(t, m, DELETE, podutil.FileSource, "del")
	expectUpdate(t, m, RECONCILE, podutil.FileSource, "rec")
}

func TestMergerSlowConsumerLosesNothing(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.FileSource)
	const n = 64
	var snapshot []*v1.Pod
	for i := range n {
		snapshot = append(snapshot, apiPod(fmt.Sprint(i)))
		send(t, ch, slices.Clone(snapshot)...) // nobody reads updates meanwhile
	}
	for i := range n {
		expectUpdate(t, m, ADD, podutil.FileSource, fmt.Sprint(i))
	}
}

func TestMergerSourcesAreIndependent(t *testing.T) {
	m := runMerger(t)
	file, api := m.Channel(podutil.FileSource), m.Channel(podutil.APISource)
	if m.Channel(podutil.FileSource) != file {
		t.Error("registering a source twice gave a new channel")
	}
	send(t, file, apiPod("f"))
	expectUpdate(t, m, ADD, podutil.FileSource, "f")
	send(t, api, apiPod("a"))
	expectUpdate(t, m, ADD, podutil.APISource, "a")
	send(t, api)
	expectUpdate(t, m, REMOVE, podutil.APISource, "a")

	late := m.Channel(podutil.HTTPSource) // registered while running
	send(t, late, apiPod("h"))
	expectUpdate(t, m, ADD, podutil.HTTPSource, "h")
}

func TestMergerPodsAreImmutable(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.APISource)
	sent := apiPod("a")
	send(t, ch, sent)
	got := expectUpdate(t, m, ADD, podutil.APISource, "a").Pods[0]

	// Neither the consumer's copy nor the source's object reaches the store.
	got.Spec.Containers[0].Image = "changed"
	sent.Labels["app"] = "changed"
	send(t, ch, apiPod("a"))
	send(t, ch)
	expectUpdate(t, m, REMOVE, podutil.APISource, "a")
}

func TestMergerDropsBadUIDs(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.APISource)
	noUID := apiPod("x")
	noUID.UID = ""
	send(t, ch, apiPod("a"), noUID, apiPod("a"), apiPod("b"))
	expectUpdate(t, m, ADD, podutil.APISource, "a", "b")
}

// Defence in depth: whatever the source, a pod whose UID, name or namespace could leave the
// directories named after them never reaches the sync loop.
func TestMergerDropsUnsafePathFields(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.APISource)
	badName, badNS := apiPod("n"), apiPod("s")
	badName.Name, badNS.Namespace = "../x", "a/b"
	send(t, ch, apiPod("../../etc"), badName, badNS, apiPod("b"))
	expectUpdate(t, m, ADD, podutil.APISource, "b")
}

func TestMergerKeepsSeenForAPIPods(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.APISource)
	send(t, ch, apiPod("a"))
	seen := expectUpdate(t, m, ADD, podutil.APISource, "a").Pods[0].Annotations[podutil.AnnotationSeen]
	next := apiPod("a")
	next.Spec.Containers[0].Image = "x:2"
	send(t, ch, next)
	if got := expectUpdate(t, m, UPDATE, podutil.APISource, "a").Pods[0].Annotations[podutil.AnnotationSeen]; got != seen {
		t.Errorf("seen changed from %s to %s", seen, got)
	}
}

func TestMergerSeenAllSources(t *testing.T) {
	m := runMerger(t)
	file, api := m.Channel(podutil.FileSource), m.Channel(podutil.APISource)
	if m.SeenAllSources(podutil.FileSource) || !m.SeenAllSources() {
		t.Fatal("wrong answer before any snapshot")
	}
	send(t, file) // empty snapshot: seen, but no update
	testutil.Eventually(t, "the file source seen", func() bool { return m.SeenAllSources(podutil.FileSource) })
	if m.SeenAllSources(podutil.FileSource, podutil.APISource) || m.SeenAllSources(podutil.HTTPSource) {
		t.Error("a source that sent nothing counts as seen")
	}
	send(t, api, apiPod("a"))
	expectUpdate(t, m, ADD, podutil.APISource, "a") // the empty file snapshot made no update
	if !m.SeenAllSources(podutil.FileSource, podutil.APISource) {
		t.Error("both sources sent, not seen")
	}
}

// SyncedThrough names the update after which a consumer knows every source's first snapshot:
// an empty snapshot queues nothing and so adds nothing to wait for.
func TestMergerSyncedThrough(t *testing.T) {
	m := runMerger(t)
	file, api := m.Channel(podutil.FileSource), m.Channel(podutil.APISource)
	if _, ok := m.SyncedThrough(podutil.FileSource, podutil.APISource); ok {
		t.Fatal("synced before any snapshot")
	}
	send(t, api, apiPod("a"), apiPod("b"))
	add := expectUpdate(t, m, ADD, podutil.APISource, "a", "b")
	if _, ok := m.SyncedThrough(podutil.FileSource, podutil.APISource); ok {
		t.Fatal("synced before the file source sent")
	}
	send(t, file)
	testutil.Eventually(t, "the file source seen", func() bool { return m.SeenAllSources(podutil.FileSource) })
	through, ok := m.SyncedThrough(podutil.FileSource, podutil.APISource)
	if !ok || add.Seq == 0 || through != add.Seq {
		t.Errorf("synced through %d (%v), want the first snapshot's update %d", through, ok, add.Seq)
	}
	send(t, api, apiPod("a"))
	if rm := expectUpdate(t, m, REMOVE, podutil.APISource, "b"); rm.Seq != add.Seq+1 {
		t.Errorf("next update numbered %d, want %d", rm.Seq, add.Seq+1)
	}
	if again, _ := m.SyncedThrough(podutil.FileSource, podutil.APISource); again != through {
		t.Errorf("later updates moved the first sync from %d to %d", through, again)
	}
}

// An API pod at an unchanged resourceVersion is the same object: the merger keeps what it has
// without comparing (a stale copy with other content changes nothing), and a new version is
// compared as always. A file pod's version means nothing and is never trusted.
func TestMergerTrustsTheAPIResourceVersion(t *testing.T) {
	m := runMerger(t)
	ch := m.Channel(podutil.APISource)
	a, b := apiPod("a"), apiPod("b")
	a.ResourceVersion, b.ResourceVersion = "1", "1"
	send(t, ch, a, b)
	expectUpdate(t, m, ADD, podutil.APISource, "a", "b")

	sameVersion := b.DeepCopy()
	sameVersion.Spec.Containers[0].Image = "x:2"
	send(t, ch, a, sameVersion)
	newVersion := sameVersion.DeepCopy()
	newVersion.ResourceVersion = "2"
	send(t, ch, a, newVersion)
	if u := expectUpdate(t, m, UPDATE, podutil.APISource, "b"); u.Pods[0].Spec.Containers[0].Image != "x:2" || u.Pods[0].ResourceVersion != "2" {
		t.Errorf("update carries %s at version %s", u.Pods[0].Spec.Containers[0].Image, u.Pods[0].ResourceVersion)
	}

	file := m.Channel(podutil.FileSource)
	f := apiPod("f")
	f.ResourceVersion = "1"
	send(t, file, f)
	expectUpdate(t, m, ADD, podutil.FileSource, "f")
	edited := f.DeepCopy()
	edited.Spec.Containers[0].Image = "x:2"
	send(t, file, edited)
	expectUpdate(t, m, UPDATE, podutil.FileSource, "f")
}
