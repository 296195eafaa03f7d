package server

import (
	"net/http"
	"slices"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
)

// The node page is authorized as /pods (nodes/pods, else nodes/proxy), served whatever the
// debugging handlers say, and never on the unauthenticated read-only port.
func TestNodeUIIsAuthorizedAsPods(t *testing.T) {
	reviews := &fakeReviews{
		tokens: map[string]authnv1.UserInfo{"viewer": {Username: "viewer"}, "proxier": {Username: "proxier"}, "stats": {Username: "stats"}},
		allow: func(s authzv1.SubjectAccessReviewSpec) bool {
			sub := s.ResourceAttributes.Subresource
			return s.ResourceAttributes.Verb == "get" &&
				(s.User == "viewer" && sub == "pods" || s.User == "proxier" && sub == "proxy" || s.User == "stats" && sub == "stats")
		},
	}
	opts := webhookOptions(t, nil, reviews.client())
	opts.EnableDebuggingHandlers = false
	opts.ReadOnlyPort = 1
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("page " + r.URL.Path)) })
	_, srv := start(t, opts, Handlers{NodeUI: page})
	c := srv.client()

	for _, token := range []string{"viewer", "proxier"} {
		for _, path := range []string{"/ui", "/ui/", "/ui/api/stats"} {
			if got := do(t, c, "GET", srv.secureURL+path, token); got.code != http.StatusOK || got.body != "page "+path {
				t.Errorf("%s GET %s: %d %q", token, path, got.code, got.body)
			}
		}
	}
	var subs []string
	reviews.mu.Lock()
	for _, sar := range reviews.sars {
		if sar.User == "viewer" {
			subs = append(subs, sar.ResourceAttributes.Subresource)
		}
	}
	reviews.mu.Unlock()
	if !slices.Equal(subs, []string{"pods"}) {
		t.Errorf("SARs for viewer: %v, want one nodes/pods question (then cached)", subs)
	}
	want := "Forbidden (user=stats, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
	if got := do(t, c, "GET", srv.secureURL+"/ui/", "stats"); got.code != http.StatusForbidden || got.body != want {
		t.Errorf("a user allowed only nodes/stats: %d %q, want 403 %q", got.code, got.body, want)
	}
	if got := do(t, c, "GET", srv.secureURL+"/ui/", ""); got.code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", got.code)
	}
	if got := do(t, http.DefaultClient, "GET", srv.readOnlyURL+"/ui/", ""); got.code != http.StatusNotFound {
		t.Errorf("read-only port /ui/: %d, want 404", got.code)
	}
}
