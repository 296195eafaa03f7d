package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// explain reads /pods and the timeline from the kubelet API (with the token given), prints
// them, and fails once the pod has waited past --stuck-after.
func TestExplainAgainstAKubeletAPI(t *testing.T) {
	created := time.Now().Add(-10 * time.Minute)
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", CreationTimestamp: metav1.NewTime(created)},
		Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "app", Image: "x.local/app:1",
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}}}
	tl := timeline.Timeline{Namespace: "ns", Name: "web", Steps: []timeline.Step{{Name: timeline.Admitted, Start: created, End: created}}}
	var tokens []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens = append(tokens, r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/pods":
			_ = json.NewEncoder(w).Encode(v1.PodList{Items: []v1.Pod{pod}})
		case "/debug/pods/ns/web/timeline":
			_ = json.NewEncoder(w).Encode(tl)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for stuckAfter, wantErr := range map[string]bool{"1h": false, "5m": true} {
		var out, errOut bytes.Buffer
		cmd := newRootCommand(nil, &out, &errOut)
		code := execute(t.Context(), cmd, []string{"explain", "ns/web", "--server", srv.URL, "--insecure-skip-tls-verify",
			"--token", "abc", "--stuck-after", stuckAfter}, &errOut)
		if (code != 0) != wantErr {
			t.Errorf("--stuck-after %s: exit %d, want failure %v; stderr %s", stuckAfter, code, wantErr, errOut.String())
		}
		if !strings.Contains(out.String(), "admitted") || !strings.Contains(out.String(), "Now: waiting on image pull of x.local/app:1 for 10m") {
			t.Errorf("output:\n%s", out.String())
		}
	}
	if tokens[0] != "Bearer abc" {
		t.Errorf("sent %q, want the token", tokens[0])
	}
}
