package source

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// Event reasons for manifests nodelet cannot use.
const (
	ReasonFailedToDecode  = "FailedToDecode"
	ReasonInvalidManifest = "InvalidManifest"
)

// manifestError says why a manifest was rejected; Reason is the event reason.
type manifestError struct {
	Reason string
	Err    error
}

func (e *manifestError) Error() string { return e.Err.Error() }
func (e *manifestError) Unwrap() error { return e.Err }

func decodeErr(format string, args ...any) error {
	return &manifestError{Reason: ReasonFailedToDecode, Err: fmt.Errorf(format, args...)}
}

func invalidErr(err error) error {
	return &manifestError{Reason: ReasonInvalidManifest, Err: err}
}

// errorReason picks the event reason for err.
func errorReason(err error) string {
	var me *manifestError
	if errors.As(err, &me) {
		return me.Reason
	}
	return ReasonFailedToDecode
}

// decodePod parses one Pod manifest, JSON or YAML.
func decodePod(data []byte) (*v1.Pod, error) {
	tm, err := decodeTypeMeta(data)
	if err != nil {
		return nil, err
	}
	if tm.Kind != "Pod" || tm.APIVersion != "v1" {
		return nil, decodeErr("kind %q apiVersion %q is not supported: want kind Pod apiVersion v1", tm.Kind, tm.APIVersion)
	}
	pod := &v1.Pod{}
	if err := yaml.Unmarshal(data, pod); err != nil {
		return nil, decodeErr("decode Pod: %v", err)
	}
	pod.TypeMeta = metav1.TypeMeta{}
	return pod, nil
}

// decodePods parses a Pod or a v1 PodList, JSON or YAML.
func decodePods(data []byte) ([]*v1.Pod, error) {
	tm, err := decodeTypeMeta(data)
	if err != nil {
		return nil, err
	}
	if tm.APIVersion == "v1" && tm.Kind == "Pod" {
		pod, err := decodePod(data)
		if err != nil {
			return nil, err
		}
		return []*v1.Pod{pod}, nil
	}
	if tm.Kind != "PodList" || tm.APIVersion != "v1" {
		return nil, decodeErr("kind %q apiVersion %q is not supported: want kind Pod or PodList apiVersion v1", tm.Kind, tm.APIVersion)
	}
	list := &v1.PodList{}
	if err := yaml.Unmarshal(data, list); err != nil {
		return nil, decodeErr("decode PodList: %v", err)
	}
	pods := make([]*v1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pod := list.Items[i]
		pod.TypeMeta = metav1.TypeMeta{}
		pods = append(pods, &pod)
	}
	return pods, nil
}

func decodeTypeMeta(data []byte) (metav1.TypeMeta, error) {
	var tm metav1.TypeMeta
	if len(bytes.TrimSpace(data)) == 0 {
		return tm, decodeErr("manifest is empty")
	}
	if n := yamlDocuments(data); n > 1 {
		return tm, decodeErr("manifest holds %d YAML documents: want exactly one", n)
	}
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return tm, decodeErr("not a JSON or YAML object: %v", err)
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return tm, decodeErr("missing kind or apiVersion: want kind Pod apiVersion v1")
	}
	return tm, nil
}

// yamlDocuments counts the non-empty documents in a YAML stream, because
// the YAML decoder silently reads only the first one.
func yamlDocuments(data []byte) int {
	docs, hasContent := 0, false
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimRight(line, " \t\r")
		if trimmed == "---" || strings.HasPrefix(trimmed, "--- ") {
			if hasContent {
				docs++
			}
			hasContent = strings.TrimSpace(strings.TrimPrefix(trimmed, "---")) != ""
			continue
		}
		text := strings.TrimSpace(trimmed)
		if text != "" && !strings.HasPrefix(text, "#") && text != "..." {
			hasContent = true
		}
	}
	if hasContent {
		docs++
	}
	return docs
}

// staticPods turns decoded manifests into the pods nodelet runs: node-local
// names, content-derived UIDs, the config annotations and the API defaults.
// It remembers when each UID was first seen so re-reads stay identical.
type staticPods struct {
	nodeName string
	source   string // podutil.FileSource or podutil.HTTPSource
	now      func() time.Time
	seen     map[types.UID]string
}

func newStaticPods(nodeName, source string) *staticPods {
	return &staticPods{nodeName: nodeName, source: source, now: time.Now, seen: map[types.UID]string{}}
}

// fromManifest decodes and prepares the single pod in data, read from location.
func (s *staticPods) fromManifest(data []byte, location string) (*v1.Pod, error) {
	pod, err := decodePod(data)
	if err != nil {
		return nil, err
	}
	return s.build(pod, location)
}

// fromBody decodes and prepares a Pod or PodList read from location.
// Any bad item rejects the whole body, like a bad file rejects its pod.
func (s *staticPods) fromBody(data []byte, location string) ([]*v1.Pod, error) {
	decoded, err := decodePods(data)
	if err != nil {
		return nil, err
	}
	pods := make([]*v1.Pod, 0, len(decoded))
	dups := newDuplicates()
	for i, raw := range decoded {
		pod, err := s.build(raw, location)
		if err != nil {
			if len(decoded) == 1 {
				return nil, err
			}
			return nil, &manifestError{Reason: errorReason(err), Err: fmt.Errorf("items[%d]: %w", i, err)}
		}
		if dup := dups.check(pod); dup != "" {
			return nil, invalidErr(fmt.Errorf("items[%d]: %s", i, dup))
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

// build applies the static pod rules to a freshly decoded pod and validates it.
func (s *staticPods) build(pod *v1.Pod, location string) (*v1.Pod, error) {
	if pod.Name == "" {
		return nil, invalidErr(field.Required(field.NewPath("metadata", "name"), ""))
	}
	// The API defaults come first: upstream's UID hashes the pod as decoded, defaults and all.
	SetPodDefaults(pod)
	if pod.UID == "" {
		uid, err := kubehash.StaticPodUID(pod, s.nodeName, location, s.source == podutil.FileSource)
		if err != nil {
			return nil, decodeErr("hash manifest: %v", err)
		}
		pod.UID = uid
	}
	pod.Name = pod.Name + "-" + strings.ToLower(s.nodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = s.nodeName
	tolerateNoExecute(pod)
	// A manifest's status means nothing: nodelet reports status itself.
	pod.Status = v1.PodStatus{Phase: v1.PodPending}
	if err := ValidatePod(pod); err != nil {
		return nil, invalidErr(err)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podutil.AnnotationHash] = string(pod.UID)
	pod.Annotations[podutil.AnnotationSource] = s.source
	pod.Annotations[podutil.AnnotationSeen] = s.seenTime(pod.UID)
	return pod, nil
}

func (s *staticPods) seenTime(uid types.UID) string {
	if t, ok := s.seen[uid]; ok {
		return t
	}
	t := s.now().UTC().Format(time.RFC3339Nano)
	s.seen[uid] = t
	return t
}

// forgetOthers drops first-seen times of UIDs not in pods.
func (s *staticPods) forgetOthers(pods []*v1.Pod) {
	keep := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		keep[p.UID] = true
	}
	for uid := range s.seen {
		if !keep[uid] {
			delete(s.seen, uid)
		}
	}
}

// tolerateNoExecute lets static pods survive NoExecute taints: nothing could
// reschedule them anyway.
func tolerateNoExecute(pod *v1.Pod) {
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for _, t := range pod.Spec.Tolerations {
		if t.Key == "" && t.Operator == want.Operator && t.Effect == want.Effect && t.TolerationSeconds == nil {
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, want)
}

// duplicates finds pods that clash with earlier ones in the same snapshot.
type duplicates struct {
	names map[string]bool
	uids  map[types.UID]bool
}

func newDuplicates() *duplicates {
	return &duplicates{names: map[string]bool{}, uids: map[types.UID]bool{}}
}

// check records pod and returns why it clashes, or "".
func (d *duplicates) check(pod *v1.Pod) string {
	name := pod.Namespace + "/" + pod.Name
	switch {
	case d.names[name]:
		return fmt.Sprintf("duplicate pod name %q", name)
	case d.uids[pod.UID]:
		return fmt.Sprintf("duplicate pod UID %q", pod.UID)
	}
	d.names[name], d.uids[pod.UID] = true, true
	return ""
}

// reportOnce remembers which bad content was already reported per key (a file
// path or URL) so periodic re-reads don't repeat the same log and event.
type reportOnce struct {
	reported map[string]string
}

func newReportOnce() *reportOnce { return &reportOnce{reported: map[string]string{}} }

// first reports whether content for key is new bad content, and remembers it.
func (r *reportOnce) first(key string, content []byte) bool {
	sum := sha256.Sum256(content)
	h := hex.EncodeToString(sum[:])
	if r.reported[key] == h {
		return false
	}
	r.reported[key] = h
	return true
}

func (r *reportOnce) forget(key string) { delete(r.reported, key) }

// nodeRef is the object events about manifests are attached to.
func nodeRef(nodeName string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
}

func recordBadManifest(recorder record.EventRecorder, nodeName, location string, err error) {
	if recorder == nil {
		return
	}
	reason := errorReason(err)
	verb := "decode"
	if reason == ReasonInvalidManifest {
		verb = "use invalid"
	}
	recorder.Eventf(nodeRef(nodeName), v1.EventTypeWarning, reason,
		"Could not %s static pod manifest %s: %v", verb, location, err)
}
