package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenTable is a TokenReview API that knows a few valid tokens and counts the calls.
type tokenTable struct {
	mu    sync.Mutex
	valid map[string]string // token → user name
	calls map[string]int
}

func (f *tokenTable) Create(_ context.Context, r *authnv1.TokenReview, _ metav1.CreateOptions) (*authnv1.TokenReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[r.Spec.Token]++
	out := r.DeepCopy()
	if name, ok := f.valid[r.Spec.Token]; ok {
		out.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: name}}
	}
	return out, nil
}

func (f *tokenTable) callsFor(token string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[token]
}

// A client sending 10,000 (or 100,000) bogus tokens must not make the node forget the valid
// identities it knows: every one of them would cost the API server a TokenReview again.
func TestBogusTokensDoNotEvictValidIdentities(t *testing.T) {
	reviews := &tokenTable{valid: map[string]string{}, calls: map[string]int{}}
	valid := make([]string, 100)
	for i := range valid {
		valid[i] = fmt.Sprintf("valid-%d", i)
		reviews.valid[valid[i]] = fmt.Sprintf("user-%d", i)
	}
	now := time.Unix(1000, 0)
	a := newTokenAuthenticator(reviews, 2*time.Minute, func() time.Time { return now })
	for _, tok := range valid {
		if u, err := a.authenticate(t.Context(), tok); err != nil || u.Name != reviews.valid[tok] {
			t.Fatalf("%s: %v, %v", tok, u, err)
		}
	}
	for i := 0; i < 100000; i++ {
		if _, err := a.authenticate(t.Context(), fmt.Sprintf("bogus-%d", i)); err == nil {
			t.Fatal("a bogus token was accepted")
		}
	}
	for _, tok := range valid {
		if _, err := a.authenticate(t.Context(), tok); err != nil {
			t.Fatalf("%s after the flood: %v", tok, err)
		}
		if n := reviews.callsFor(tok); n != 1 {
			t.Fatalf("%s: %d TokenReviews, want 1: the flood of bogus tokens evicted it", tok, n)
		}
	}
	// A repeated bogus token is still answered from the cache while it is recent.
	if _, err := a.authenticate(t.Context(), "bogus-99999"); err == nil || reviews.callsFor("bogus-99999") != 1 {
		t.Errorf("recent rejection not cached: %v, %d calls", err, reviews.callsFor("bogus-99999"))
	}
	if n := a.cache.len(); n > maxAcceptedEntries+maxRefusedEntries {
		t.Errorf("cache holds %d entries, want at most %d", n, maxAcceptedEntries+maxRefusedEntries)
	}
	// Identities expire after the TTL (authentication.webhook.cacheTTL) and are asked again.
	now = now.Add(2*time.Minute + time.Second)
	if _, err := a.authenticate(t.Context(), valid[0]); err != nil || reviews.callsFor(valid[0]) != 2 {
		t.Errorf("after the TTL: %v, %d calls, want a second TokenReview", err, reviews.callsFor(valid[0]))
	}
}
