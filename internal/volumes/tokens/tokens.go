// Package tokens requests the bound service account tokens volumes carry (projected
// serviceAccountToken sources, CSI drivers' tokenRequests) and keeps each until it is due
// for refresh, so every pod sync does not mint a new one.
package tokens

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// DefaultExpiration is the API's default lifetime of a projected token, in seconds.
	DefaultExpiration = 3600
	maxTokenAge       = 24 * time.Hour
)

// Getter requests bound service account tokens.
type Getter interface {
	CreateServiceAccountToken(ctx context.Context, namespace, serviceAccount string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error)
}

// ErrNoAPIServer: standalone, there is nobody to ask for a token.
var ErrNoAPIServer = errors.New("no API server to request tokens from")

type key struct {
	podUID         types.UID
	serviceAccount string
	audience       string
	expiration     int64
}

type cached struct {
	status  authnv1.TokenRequestStatus
	refresh time.Time
}

// Cache keeps each pod's tokens until 80 % of their lifetime or a day has passed, as the
// kubelet refreshes them.
type Cache struct {
	getter  Getter // nil: no API server
	mu      sync.Mutex
	entries map[key]cached
	// Now is the clock (tests set it).
	Now func() time.Time
}

// NewCache requests through g; nil makes every Get fail with ErrNoAPIServer.
func NewCache(g Getter) *Cache {
	return &Cache{getter: g, entries: map[key]cached{}, Now: time.Now}
}

// Get returns a token of pod's service account bound to the pod, for audience (empty: the
// API server's own) and valid for expirationSeconds (nil: DefaultExpiration).
func (c *Cache) Get(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds *int64) (authnv1.TokenRequestStatus, error) {
	if c.getter == nil {
		return authnv1.TokenRequestStatus{}, ErrNoAPIServer
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	k := key{podUID: pod.UID, serviceAccount: sa, audience: audience, expiration: DefaultExpiration}
	if expirationSeconds != nil {
		k.expiration = *expirationSeconds
	}
	now := c.Now()
	c.mu.Lock()
	entry, ok := c.entries[k]
	c.mu.Unlock()
	if ok && now.Before(entry.refresh) {
		return entry.status, nil
	}
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: &k.expiration,
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	resp, err := c.getter.CreateServiceAccountToken(ctx, pod.Namespace, sa, req)
	if err != nil {
		return authnv1.TokenRequestStatus{}, fmt.Errorf("request token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	status := resp.Status
	expires := status.ExpirationTimestamp.Time
	if expires.IsZero() {
		expires = now.Add(time.Duration(k.expiration) * time.Second)
	}
	c.mu.Lock()
	c.entries[k] = cached{status: status, refresh: now.Add(min(expires.Sub(now)*8/10, maxTokenAge))}
	c.mu.Unlock()
	return status, nil
}

// Forget drops the tokens of a pod whose volume is gone.
func (c *Cache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.podUID == uid {
			delete(c.entries, k)
		}
	}
}

// Len is how many tokens are kept.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
