package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known identities, as the API server names them.
const (
	anonymousUser        = "system:anonymous"
	unauthenticatedGroup = "system:unauthenticated"
	authenticatedGroup   = "system:authenticated"
)

// websocketTokenPrefix marks a bearer token carried as a WebSocket subprotocol (browsers cannot
// set an Authorization header on a WebSocket).
const websocketTokenPrefix = "base64url.bearer.authorization.k8s.io."

var errInvalidToken = errors.New("invalid bearer token")

// userInfo is who made a request.
type userInfo struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// tokenReviewer is the part of the TokenReview client the authenticator needs.
type tokenReviewer interface {
	Create(ctx context.Context, review *authnv1.TokenReview, opts metav1.CreateOptions) (*authnv1.TokenReview, error)
}

// authenticator identifies the caller of a request as the upstream kubelet does: a client
// certificate signed by the client CA, else a bearer token checked with TokenReview, else (when
// allowed) anonymous. Credentials that are present but bad fail the request; they never fall
// back to anonymous.
type authenticator struct {
	clientCAs *clientCA           // nil: client certificates are not accepted
	tokens    *tokenAuthenticator // nil: bearer tokens are not accepted
	anonymous bool
}

// authenticate returns the caller, or nil (and why, when credentials were rejected) for 401.
func (a *authenticator) authenticate(r *http.Request) (*userInfo, error) {
	var errs []error
	if a.clientCAs != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		u, err := verifyClientCert(a.clientCAs.current(), r.TLS.PeerCertificates)
		if err == nil {
			return withAuthenticatedGroup(u), nil
		}
		errs = append(errs, err)
	}
	if a.tokens != nil {
		if token, strip, ok := requestToken(r); ok {
			u, err := a.tokens.authenticate(r.Context(), token)
			if err == nil {
				strip() // handlers never see the caller's token
				return withAuthenticatedGroup(u), nil
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if a.anonymous {
		return &userInfo{Name: anonymousUser, Groups: []string{unauthenticatedGroup}}, nil
	}
	return nil, nil
}

// verifyClientCert checks the presented chain against the client CAs; the user is the
// certificate's common name and its organizations are the groups.
func verifyClientCert(roots *x509.CertPool, chain []*x509.Certificate) (*userInfo, error) {
	leaf := chain[0]
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, errors.New("client certificate has an empty common name")
	}
	return &userInfo{Name: leaf.Subject.CommonName, Groups: slices.Clone(leaf.Subject.Organization)}, nil
}

// requestToken finds a bearer token in the Authorization header or, on a WebSocket upgrade, in a
// subprotocol; strip removes it from the request once it has been accepted.
func requestToken(r *http.Request) (token string, strip func(), ok bool) {
	if parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3); len(parts) >= 2 &&
		strings.EqualFold(parts[0], "bearer") && parts[1] != "" {
		return parts[1], func() { r.Header.Del("Authorization") }, true
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return "", nil, false
	}
	var kept []string
	for _, header := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, proto := range strings.Split(header, ",") {
			proto = strings.TrimSpace(proto)
			if rest, found := strings.CutPrefix(proto, websocketTokenPrefix); found && token == "" {
				if raw, err := base64.RawURLEncoding.DecodeString(rest); err == nil && len(raw) > 0 {
					token = string(raw)
					continue
				}
			}
			if proto != "" {
				kept = append(kept, proto)
			}
		}
	}
	if token == "" {
		return "", nil, false
	}
	return token, func() {
		r.Header.Del("Sec-WebSocket-Protocol")
		if len(kept) > 0 {
			r.Header.Set("Sec-WebSocket-Protocol", strings.Join(kept, ","))
		}
	}, true
}

// withAuthenticatedGroup adds system:authenticated unless the user already carries it.
func withAuthenticatedGroup(u *userInfo) *userInfo {
	if slices.Contains(u.Groups, authenticatedGroup) || slices.Contains(u.Groups, unauthenticatedGroup) {
		return u
	}
	out := *u
	out.Groups = append(slices.Clone(u.Groups), authenticatedGroup)
	return &out
}

// tokenAuthenticator asks the API server about bearer tokens and remembers each answer (yes or
// no) for ttl (authentication.webhook.cacheTTL, upstream's 2m by default), keyed by a hash of the
// token; refusals are cached apart so that bogus tokens never evict known identities.
type tokenAuthenticator struct {
	reviews tokenReviewer
	ttl     time.Duration
	cache   *answerCache[*userInfo]
	retry   retryPolicy
}

func newTokenAuthenticator(reviews tokenReviewer, ttl time.Duration, now func() time.Time) *tokenAuthenticator {
	return &tokenAuthenticator{reviews: reviews, ttl: ttl, cache: newAnswerCache[*userInfo](now), retry: defaultRetry}
}

func (t *tokenAuthenticator) authenticate(ctx context.Context, token string) (*userInfo, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if u, refused, ok := t.cache.get(key); ok {
		if refused {
			return nil, errInvalidToken
		}
		return u, nil
	}
	var status authnv1.TokenReviewStatus
	err := t.retry.do(ctx, func(ctx context.Context) error {
		out, err := t.reviews.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err == nil {
			status = out.Status
		}
		return err
	})
	if err != nil {
		// Not cached: a failed call says nothing about the token.
		return nil, fmt.Errorf("token review: %w", err)
	}
	if !status.Authenticated {
		t.cache.refuse(key, t.ttl)
		if status.Error != "" {
			return nil, fmt.Errorf("%w: %s", errInvalidToken, status.Error)
		}
		return nil, errInvalidToken
	}
	u := &userInfo{Name: status.User.Username, UID: status.User.UID, Groups: status.User.Groups}
	if len(status.User.Extra) > 0 {
		u.Extra = make(map[string][]string, len(status.User.Extra))
		for k, v := range status.User.Extra {
			u.Extra[k] = slices.Clone(v)
		}
	}
	t.cache.accept(key, u, t.ttl)
	return u, nil
}
