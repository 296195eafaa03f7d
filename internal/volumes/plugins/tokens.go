package plugins

import (
	"context"
	"fmt"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	defaultTokenExpiration = 3600 // seconds, the API default for projected tokens
	maxTokenAge            = 24 * time.Hour
)

type tokenKey struct {
	podUID         types.UID
	serviceAccount string
	audience       string
	expiration     int64
}

type cachedToken struct {
	token           string
	issued, refresh time.Time
}

// tokenCache keeps each pod's tokens until they are due for refresh: at 80% of their
// lifetime or after a day, as kubelet refreshes them, so every sync does not mint a new one.
type tokenCache struct {
	getter  TokenGetter // nil: no API server to ask
	mu      sync.Mutex
	entries map[tokenKey]cachedToken
	now     func() time.Time
}

func newTokenCache(g TokenGetter) *tokenCache {
	return &tokenCache{getter: g, entries: map[tokenKey]cachedToken{}, now: time.Now}
}

func (tc *tokenCache) get(ctx context.Context, pod *v1.Pod, proj *v1.ServiceAccountTokenProjection) (string, error) {
	if tc.getter == nil {
		return "", fmt.Errorf("serviceAccountToken %q: no API server to request tokens from", proj.Path)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := tokenKey{podUID: pod.UID, serviceAccount: sa, audience: proj.Audience, expiration: defaultTokenExpiration}
	if proj.ExpirationSeconds != nil {
		key.expiration = *proj.ExpirationSeconds
	}
	now := tc.now()
	tc.mu.Lock()
	cached, ok := tc.entries[key]
	tc.mu.Unlock()
	if ok && now.Before(cached.refresh) {
		return cached.token, nil
	}
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: &key.expiration,
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if proj.Audience != "" {
		req.Spec.Audiences = []string{proj.Audience}
	}
	resp, err := tc.getter.CreateServiceAccountToken(ctx, pod.Namespace, sa, req)
	if err != nil {
		return "", fmt.Errorf("request token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	expires := resp.Status.ExpirationTimestamp.Time
	if expires.IsZero() {
		expires = now.Add(time.Duration(key.expiration) * time.Second)
	}
	refresh := now.Add(min(expires.Sub(now)*8/10, maxTokenAge))
	tc.mu.Lock()
	tc.entries[key] = cachedToken{token: resp.Status.Token, refresh: refresh}
	tc.mu.Unlock()
	return resp.Status.Token, nil
}

// forget drops the tokens of a removed pod.
func (tc *tokenCache) forget(uid types.UID) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k := range tc.entries {
		if k.podUID == uid {
			delete(tc.entries, k)
		}
	}
}
