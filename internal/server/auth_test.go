package server

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func allowAll(authzv1.SubjectAccessReviewSpec) bool { return true }

func TestClientCertificateIdentifiesUserAndGroups(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	reviews := &fakeReviews{allow: allowAll}
	_, srv := start(t, webhookOptions(t, ca, reviews.client()), Handlers{})

	got := do(t, srv.client(ca.clientCert(t, "alice", "team-a", "team-b")), "GET", srv.secureURL+"/healthz", "")
	if got.code != http.StatusOK || got.body != "ok" {
		t.Fatalf("trusted client cert: got %d %q, want 200 ok", got.code, got.body)
	}
	sar := reviews.lastSAR()
	wantGroups := []string{"team-a", "team-b", "system:authenticated"}
	if sar.User != "alice" || !slices.Equal(sar.Groups, wantGroups) {
		t.Errorf("SAR subject = %q %v, want alice %v", sar.User, sar.Groups, wantGroups)
	}

	other := newTestCA(t, "other-ca")
	got = do(t, srv.client(other.clientCert(t, "mallory", "system:masters")), "GET", srv.secureURL+"/healthz", "")
	if got.code != http.StatusUnauthorized || got.body != "Unauthorized" {
		t.Errorf("untrusted client cert: got %d %q, want 401 Unauthorized", got.code, got.body)
	}
}

func TestBearerTokenCheckedByTokenReviewAndCached(t *testing.T) {
	reviews := &fakeReviews{
		tokens: map[string]authnv1.UserInfo{"good": {Username: "bob", UID: "u-1", Groups: []string{"devs", "system:authenticated"}}},
		allow:  allowAll,
	}
	var mu sync.Mutex
	var sawAuthorization []string
	exec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sawAuthorization = append(sawAuthorization, r.Header.Get("Authorization"))
	})
	_, srv := start(t, webhookOptions(t, nil, reviews.client()), Handlers{Exec: exec})
	c := srv.client()
	url := srv.secureURL + "/exec/ns/pod/ctr?command=ls"

	for i := 0; i < 2; i++ {
		if got := do(t, c, "POST", url, "good"); got.code != http.StatusOK {
			t.Fatalf("request %d with a valid token: got %d %q", i, got.code, got.body)
		}
	}
	if tokens, _ := reviews.counts(); tokens != 1 {
		t.Errorf("TokenReviews for two requests with one token = %d, want 1 (cached)", tokens)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(sawAuthorization, func(h string) bool { return h != "" }) {
		t.Errorf("handler saw the caller's Authorization header: %q", sawAuthorization)
	}
	sar := reviews.lastSAR()
	if sar.User != "bob" || sar.UID != "u-1" || !slices.Equal(sar.Groups, []string{"devs", "system:authenticated"}) {
		t.Errorf("SAR subject = %q %q %v", sar.User, sar.UID, sar.Groups)
	}

	for i := 0; i < 2; i++ {
		if got := do(t, c, "GET", srv.secureURL+"/healthz", "bad"); got.code != http.StatusUnauthorized {
			t.Fatalf("invalid token: got %d, want 401", got.code)
		}
	}
	if tokens, _ := reviews.counts(); tokens != 2 {
		t.Errorf("TokenReviews after two requests with a bad token = %d, want 2 (rejection cached)", tokens)
	}
}

func TestAnonymous(t *testing.T) {
	reviews := &fakeReviews{allow: allowAll}
	opts := webhookOptions(t, nil, reviews.client())
	_, off := start(t, opts, Handlers{})
	if got := do(t, off.client(), "GET", off.secureURL+"/pods", ""); got.code != http.StatusUnauthorized {
		t.Errorf("anonymous disabled, no credentials: got %d, want 401", got.code)
	}
	if _, sars := reviews.counts(); sars != 0 {
		t.Errorf("unauthenticated request reached the authorizer (%d SARs)", sars)
	}

	opts = webhookOptions(t, nil, reviews.client())
	opts.Authentication.Anonymous.Enabled = ptr.To(true)
	_, on := start(t, opts, Handlers{})
	if got := do(t, on.client(), "GET", on.secureURL+"/healthz", ""); got.code != http.StatusOK {
		t.Errorf("anonymous enabled: got %d %q, want 200", got.code, got.body)
	}
	sar := reviews.lastSAR()
	if sar.User != "system:anonymous" || !slices.Equal(sar.Groups, []string{"system:unauthenticated"}) {
		t.Errorf("anonymous SAR subject = %q %v", sar.User, sar.Groups)
	}
	if got := do(t, on.client(), "GET", on.secureURL+"/healthz", "not-a-token"); got.code != http.StatusUnauthorized {
		t.Errorf("anonymous enabled, bad token: got %d, want 401 (bad credentials never fall back)", got.code)
	}
}

func TestWebSocketProtocolToken(t *testing.T) {
	reviews := &fakeReviews{tokens: map[string]authnv1.UserInfo{"ws-token": {Username: "carol"}}, allow: allowAll}
	a := &authenticator{tokens: newTokenAuthenticator(reviews.client().AuthenticationV1().TokenReviews(), time.Minute, time.Now)}
	r := httptest.NewRequest("GET", "/exec/ns/p/c", nil)
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Protocol", "v5.channel.k8s.io, "+websocketTokenPrefix+base64.RawURLEncoding.EncodeToString([]byte("ws-token")))
	u, err := a.authenticate(r)
	if err != nil || u == nil || u.Name != "carol" {
		t.Fatalf("authenticate = %+v, %v; want carol", u, err)
	}
	if got := r.Header.Get("Sec-WebSocket-Protocol"); got != "v5.channel.k8s.io" {
		t.Errorf("protocols after auth = %q, want the token stripped", got)
	}
}

func TestRequestAttributes(t *testing.T) {
	cases := []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"POST", "/stats/summary", "create", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"GET", "/logs/", "get", []string{"log"}},
		{"POST", "/checkpoint/ns/p/c", "create", []string{"checkpoint"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/ui/api/stats", "get", []string{"pods", "proxy"}},
		{"GET", "/uifoo", "get", []string{"proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"HEAD", "/healthz/syncloop", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"POST", "/exec/ns/p/c", "create", []string{"proxy"}},
		// A WebSocket upgrade is a GET: acting in a container is still create.
		{"GET", "/exec/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/exec/ns/p/uid/c", "create", []string{"proxy"}},
		{"POST", "/attach/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/attach/ns/p/c", "create", []string{"proxy"}},
		{"POST", "/portForward/ns/p", "create", []string{"proxy"}},
		{"GET", "/portForward/ns/p", "create", []string{"proxy"}},
		{"HEAD", "/portForward/ns/p", "create", []string{"proxy"}},
		{"POST", "/run/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/run/ns/p/c", "create", []string{"proxy"}},
		{"OPTIONS", "/exec/ns/p/c", "", []string{"proxy"}},
		{"GET", "/execfoo", "get", []string{"proxy"}}, // a prefix is not a parent
		{"GET", "/running", "get", []string{"proxy"}},
		{"GET", "/containerLogs/ns/p/c", "get", []string{"proxy"}},
		{"GET", "/debug/pprof/", "get", []string{"proxy"}},
		{"PUT", "/debug/flags/v", "update", []string{"proxy"}},
		{"PATCH", "/spec/", "patch", []string{"proxy"}},
		{"DELETE", "/statsfoo", "delete", []string{"proxy"}}, // a prefix is not a parent
		{"OPTIONS", "/pods", "", []string{"pods", "proxy"}},
	}
	u := &userInfo{Name: "u"}
	for _, tc := range cases {
		attrs := requestAttributes(u, httptest.NewRequest(tc.method, tc.path, nil), "node-a", false)
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.subresource)
			if a.verb != tc.verb || a.name != "node-a" || a.user != u {
				t.Errorf("%s %s: attributes %+v, want verb %q on node-a", tc.method, tc.path, a, tc.verb)
			}
		}
		if !slices.Equal(subs, tc.subresources) {
			t.Errorf("%s %s: subresources %v, want %v", tc.method, tc.path, subs, tc.subresources)
		}
	}
}

// With the upstream option the streaming paths' verb follows the method again.
func TestRequestAttributesStreamingVerbFromMethod(t *testing.T) {
	cases := []struct{ method, path, verb string }{
		{"GET", "/exec/ns/p/c", "get"},
		{"POST", "/exec/ns/p/c", "create"},
		{"GET", "/attach/ns/p/c", "get"},
		{"GET", "/portForward/ns/p", "get"},
		{"POST", "/run/ns/p/c", "create"},
		{"GET", "/pods", "get"},
	}
	u := &userInfo{Name: "u"}
	for _, tc := range cases {
		for _, a := range requestAttributes(u, httptest.NewRequest(tc.method, tc.path, nil), "node-a", true) {
			if a.verb != tc.verb {
				t.Errorf("%s %s with verb from method: verb %q, want %q", tc.method, tc.path, a.verb, tc.verb)
			}
		}
	}
}

// A WebSocket exec (a GET upgrade) by a user who may only get nodes/proxy is refused before
// it reaches the handler; the SubjectAccessReview asks create. One who may create gets in.
func TestWebSocketExecNeedsCreate(t *testing.T) {
	reviews := &fakeReviews{
		tokens: map[string]authnv1.UserInfo{"reader": {Username: "reader"}, "operator": {Username: "operator"}},
		allow: func(s authzv1.SubjectAccessReviewSpec) bool {
			ra := s.ResourceAttributes
			if ra.Subresource != "proxy" {
				return false
			}
			return ra.Verb == "get" || (s.User == "operator" && ra.Verb == "create")
		},
	}
	reached := 0
	exec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ })
	for _, fromMethod := range []bool{false, true} {
		reached = 0
		opts := webhookOptions(t, nil, reviews.client())
		opts.StreamingVerbFromMethod = fromMethod
		_, srv := start(t, opts, Handlers{Exec: exec})
		upgrade := func(token string) response {
			req, _ := http.NewRequest("GET", srv.secureURL+"/exec/ns/p/c?command=sh&stdout=1", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Protocol", "v5.channel.k8s.io")
			resp, err := srv.client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return response{code: resp.StatusCode, body: string(body)}
		}
		got := upgrade("reader")
		if !fromMethod {
			want := "Forbidden (user=reader, verb=create, resource=nodes, subresource(s)=[proxy])\n"
			if got.code != http.StatusForbidden || got.body != want || reached != 0 {
				t.Fatalf("reader's WebSocket exec: %d %q (handler reached %d times), want 403 %q", got.code, got.body, reached, want)
			}
			if v := reviews.lastSAR().ResourceAttributes.Verb; v != "create" {
				t.Errorf("SAR verb %q, want create", v)
			}
			if got := upgrade("operator"); got.code != http.StatusOK || reached != 1 {
				t.Errorf("operator's WebSocket exec: %d %q (handler reached %d times), want it served", got.code, got.body, reached)
			}
			continue
		}
		// Upstream's mapping: the GET asks get, which the reader has.
		if got.code != http.StatusOK || reached != 1 {
			t.Errorf("reader's WebSocket exec with verb from method: %d %q, want served as upstream", got.code, got.body)
		}
	}
}

func TestForbiddenMessageAndDecisionCache(t *testing.T) {
	reviews := &fakeReviews{
		tokens: map[string]authnv1.UserInfo{"t": {Username: "dave"}},
		allow: func(s authzv1.SubjectAccessReviewSpec) bool {
			return s.ResourceAttributes.Subresource == "stats"
		},
	}
	_, srv := start(t, webhookOptions(t, nil, reviews.client()), Handlers{})
	c := srv.client()

	got := do(t, c, "GET", srv.secureURL+"/pods", "t")
	want := "Forbidden (user=dave, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
	if got.code != http.StatusForbidden || got.body != want {
		t.Fatalf("got %d %q, want 403 %q", got.code, got.body, want)
	}
	sar := reviews.lastSAR()
	ra := sar.ResourceAttributes
	if ra.Resource != "nodes" || ra.Name != "node-a" || ra.Version != "v1" || ra.Group != "" || ra.Namespace != "" || ra.Verb != "get" {
		t.Errorf("SAR resource attributes = %+v", ra)
	}
	_, before := reviews.counts()
	if before != 2 {
		t.Errorf("SARs for /pods = %d, want 2 (pods, then proxy)", before)
	}
	do(t, c, "GET", srv.secureURL+"/pods", "t")
	if _, after := reviews.counts(); after != before {
		t.Errorf("denied answers not cached: %d SARs after a repeat, want %d", after, before)
	}

	// Allowed answers are cached too; the handler is absent, so the answer is a 404.
	do(t, c, "GET", srv.secureURL+"/stats/summary", "t")
	_, n := reviews.counts()
	if got := do(t, c, "GET", srv.secureURL+"/stats/summary", "t"); got.code != http.StatusNotFound {
		t.Errorf("allowed /stats/summary without a handler: got %d, want 404", got.code)
	}
	if _, m := reviews.counts(); m != n {
		t.Errorf("allowed answers not cached: %d SARs, want %d", m, n)
	}
}

func TestDecisionCacheExpires(t *testing.T) {
	now := time.Unix(1000, 0)
	reviews := &fakeReviews{}
	w := newWebhookAuthorizer(reviews.client().AuthorizationV1().SubjectAccessReviews(), 5*time.Minute, 30*time.Second, func() time.Time { return now })
	a := attributes{user: &userInfo{Name: "eve"}, verb: "get", subresource: "proxy", name: "n"}
	for i := 0; i < 2; i++ {
		if ok, err := w.authorize(t.Context(), a); ok || err != nil {
			t.Fatalf("authorize = %v, %v; want denied", ok, err)
		}
	}
	reviews.allow = allowAll
	now = now.Add(31 * time.Second)
	if ok, _ := w.authorize(t.Context(), a); !ok {
		t.Errorf("after the deny TTL the new answer (allowed) should be asked for")
	}
	if _, sars := reviews.counts(); sars != 2 {
		t.Errorf("SARs = %d, want 2 (one cached repeat)", sars)
	}
}

func TestAlwaysAllowAsksNobody(t *testing.T) {
	reviews := &fakeReviews{tokens: map[string]authnv1.UserInfo{"t": {Username: "frank"}}}
	opts := webhookOptions(t, nil, reviews.client())
	opts.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	_, srv := start(t, opts, Handlers{})
	if got := do(t, srv.client(), "GET", srv.secureURL+"/healthz", "t"); got.code != http.StatusOK {
		t.Errorf("AlwaysAllow: got %d %q", got.code, got.body)
	}
	if got := do(t, srv.client(), "GET", srv.secureURL+"/healthz", ""); got.code != http.StatusUnauthorized {
		t.Errorf("AlwaysAllow still authenticates: got %d, want 401", got.code)
	}
	if _, sars := reviews.counts(); sars != 0 {
		t.Errorf("AlwaysAllow sent %d SARs", sars)
	}
}

func TestWebhookNeedsAClient(t *testing.T) {
	opts := webhookOptions(t, nil, nil)
	opts.Client = nil
	if _, err := New(opts, Handlers{}); err == nil || !strings.Contains(err.Error(), "authentication.webhook") {
		t.Errorf("webhook authentication without a client: err = %v", err)
	}
	opts.Authentication.Webhook.Enabled = ptr.To(false)
	if _, err := New(opts, Handlers{}); err == nil || !strings.Contains(err.Error(), "Webhook") {
		t.Errorf("webhook authorization without a client: err = %v", err)
	}
	opts.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	if _, err := New(opts, Handlers{}); err != nil {
		t.Errorf("standalone with AlwaysAllow and no token webhook: %v", err)
	}
}
