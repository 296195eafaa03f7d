package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditLog is where hack/control-plane.sh has the API server write one audit event per
// request of the bench node's user (stage RequestReceived; its policy logs no one else).
const auditLog = "/var/log/nodelet-cp/audit.log"

// apiLoad is what a kubelet asks of the API server while its pods, each mounting a ConfigMap
// and a Secret of its own, run and nothing changes.
type apiLoad struct {
	pods     int
	window   time.Duration
	total    int            // requests received from the node's user in the window
	byVerb   map[string]int // get, list, watch, patch, ...
	perMin   float64
	measured bool // false: not measured
}

// objectPod mounts the ConfigMap and the Secret of its own index.
func objectPod(name, run string, i int) *v1.Pod {
	p := benchPod(name, run, v1.RestartPolicyAlways, "sleep")
	p.Spec.Volumes = []v1.Volume{
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: objectName("cm", i)}}}},
		{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: objectName("secret", i)}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "config", MountPath: "/config"}, {Name: "secret", MountPath: "/secret"}}
	return p
}

func objectName(kind string, i int) string { return fmt.Sprintf("%s-%03d", kind, i) }

// apiRequests runs plan.footprintPods pods with a ConfigMap and a Secret each, lets the kubelet
// settle, and counts the node's requests in the audit log over plan.apiWindow.
func (b *bench) apiRequests(ctx context.Context, subject, ns string) (apiLoad, error) {
	n := b.p.footprintPods
	progress(subject, "API requests: %d pods with a ConfigMap and a Secret each", n)
	if err := b.createObjects(ctx, ns, n); err != nil {
		return apiLoad{}, err
	}
	const run = "objects"
	build := func(i int) *v1.Pod { return objectPod(fmt.Sprintf("%s-%03d", run, i), run, i) }
	if _, _, err := b.launchPods(ctx, subject, ns, run, fmt.Sprintf("%d pods with objects", n), n, build, time.Minute+time.Duration(n)*2*time.Second); err != nil {
		return apiLoad{}, err
	}
	if err := sleep(ctx, b.p.settle); err != nil {
		return apiLoad{}, err
	}
	from, err := fileSize(auditLog)
	if err != nil {
		return apiLoad{}, fmt.Errorf("the API server's audit log (restart the control plane: hack/control-plane.sh up): %w", err)
	}
	t0 := time.Now()
	if err := sleep(ctx, b.p.apiWindow); err != nil {
		return apiLoad{}, err
	}
	load, err := countRequests(auditLog, from, "system:node:"+nodeName, t0, time.Now())
	if err != nil {
		return apiLoad{}, err
	}
	load.pods = n
	progress(subject, "API requests: %d in %v (%.1f a minute) %v", load.total, load.window.Round(time.Second), load.perMin, load.byVerb)
	return load, b.deleteRun(ctx, subject, ns, run, n)
}

// createObjects makes the ConfigMaps and Secrets the object pods mount.
func (b *bench) createObjects(ctx context.Context, ns string, n int) error {
	errs := make([]error, n)
	forEach(n, 8, func(i int) {
		meta := func(kind string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: objectName(kind, i)} }
		_, errs[i] = b.kube.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: meta("cm"), Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
		if errs[i] == nil {
			_, errs[i] = b.kube.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: meta("secret"), Data: map[string][]byte{"key": []byte("value")}}, metav1.CreateOptions{})
		}
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("create the pods' ConfigMaps and Secrets: %w", err)
	}
	return nil
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// auditEvent holds the fields of an audit.k8s.io/v1 Event that are counted.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// countRequests counts the RequestReceived events of user in [from, to) in the audit log,
// read from byte offset.
func countRequests(path string, offset int64, user string, from, to time.Time) (apiLoad, error) {
	f, err := os.Open(path)
	if err != nil {
		return apiLoad{}, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() < offset {
		return apiLoad{}, fmt.Errorf("%s was rotated during the window; run again", path)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return apiLoad{}, err
	}
	load := apiLoad{window: to.Sub(from), byVerb: map[string]int{}, measured: true}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Stage != "RequestReceived" || e.User.Username != user {
			continue
		}
		if e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) {
			continue
		}
		load.total++
		load.byVerb[e.Verb]++
	}
	if err := sc.Err(); err != nil {
		return apiLoad{}, err
	}
	load.perMin = float64(load.total) / load.window.Minutes()
	return load, nil
}

// verbs renders the breakdown, most frequent first: "watch 220, get 12".
func (l apiLoad) verbs() string {
	names := slices.Collect(maps.Keys(l.byVerb))
	slices.SortFunc(names, func(a, b string) int {
		if d := l.byVerb[b] - l.byVerb[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, v := range names {
		parts[i] = fmt.Sprintf("%s %d", v, l.byVerb[v])
	}
	return strings.Join(parts, ", ")
}

// renderAPIVerbs says what the counted requests were, per kubelet.
func renderAPIVerbs(w writer, r *results) {
	rd := r.last()
	for _, k := range []struct {
		name string
		res  *subjectResult
	}{{"nodelet", rd.nodelet}, {"upstream kubelet", rd.upstream}} {
		if k.res != nil && k.res.api.measured {
			w("\nAPI requests of the %s in %v with %d pods: %d (%s).", k.name, k.res.api.window.Round(time.Second), k.res.api.pods, k.res.api.total, k.res.api.verbs())
		}
	}
}
