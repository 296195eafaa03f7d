package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// attributes is one authorization question: may user do verb on nodes/<subresource> of name?
type attributes struct {
	user        *userInfo
	verb        string
	subresource string
	name        string
}

// requestAttributes maps a request to the questions the upstream kubelet asks (fine-grained
// kubelet authorization, on by default since 1.33): the verb follows the HTTP method and the
// subresource the path. /pods, /runningpods, /healthz and /configz ask for their own
// subresource first and fall back to proxy; the request is allowed when any answer is yes.
// The pod timelines (/debug/pods) and the node page (/ui) are authorized as /pods.
//
// exec, attach, portForward and run are asked as create whatever the method: they start a
// process or a connection in a container, and a WebSocket upgrade arrives as GET, so the
// method's verb would let whoever may only get nodes/proxy run commands. verbFromMethod
// restores upstream's mapping (GET → get) for clusters whose policy relies on it.
func requestAttributes(u *userInfo, r *http.Request, nodeName string, verbFromMethod bool) []attributes {
	path := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/runningpods"), isSubpath(path, "/debug/pods"), isSubpath(path, "/ui"):
		subresources = append(subresources, "pods")
	case isSubpath(path, "/healthz"):
		subresources = append(subresources, "healthz")
	case isSubpath(path, "/configz"):
		subresources = append(subresources, "configz")
	}
	switch {
	case isSubpath(path, "/stats"):
		subresources = append(subresources, "stats")
	case isSubpath(path, "/metrics"):
		subresources = append(subresources, "metrics")
	case isSubpath(path, "/logs"):
		subresources = append(subresources, "log") // as pods/log
	case isSubpath(path, "/checkpoint"):
		subresources = append(subresources, "checkpoint")
	default:
		subresources = append(subresources, "proxy")
	}
	verb := methodVerb(r.Method)
	if !verbFromMethod && isStreaming(path) && verb != "" {
		verb = "create"
	}
	attrs := make([]attributes, 0, len(subresources))
	for _, sub := range subresources {
		attrs = append(attrs, attributes{user: u, verb: verb, subresource: sub, name: nodeName})
	}
	return attrs
}

// methodVerb is the API verb of an HTTP method. HEAD reads like GET; methods with no API
// meaning get no verb, which no policy grants.
func methodVerb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// isStreaming reports the paths that act in a container: exec, attach, port-forward, run.
func isStreaming(path string) bool {
	for _, p := range []string{"/exec", "/attach", "/portForward", "/run"} {
		if isSubpath(path, p) {
			return true
		}
	}
	return false
}

// isSubpath reports whether path is prefix itself or below it.
func isSubpath(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || (strings.HasPrefix(path, prefix) && path[len(prefix)] == '/')
}

// authorizer answers one question: allowed or not.
type authorizer interface {
	authorize(ctx context.Context, a attributes) (bool, error)
}

// alwaysAllow is authorization mode AlwaysAllow.
type alwaysAllow struct{}

func (alwaysAllow) authorize(context.Context, attributes) (bool, error) { return true, nil }

// accessReviewer is the part of the SubjectAccessReview client the authorizer needs.
type accessReviewer interface {
	Create(ctx context.Context, review *authzv1.SubjectAccessReview, opts metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)
}

// webhookAuthorizer asks the API server with SubjectAccessReview and remembers yes answers for
// allowTTL and no answers for denyTTL.
type webhookAuthorizer struct {
	reviews  accessReviewer
	allowTTL time.Duration
	denyTTL  time.Duration
	cache    *answerCache[struct{}]
	retry    retryPolicy
}

func newWebhookAuthorizer(reviews accessReviewer, allowTTL, denyTTL time.Duration, now func() time.Time) *webhookAuthorizer {
	return &webhookAuthorizer{reviews: reviews, allowTTL: allowTTL, denyTTL: denyTTL, cache: newAnswerCache[struct{}](now), retry: defaultRetry}
}

func (w *webhookAuthorizer) authorize(ctx context.Context, a attributes) (bool, error) {
	spec := accessReviewSpec(a)
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return false, err
	}
	key := string(keyBytes)
	if _, denied, ok := w.cache.get(key); ok {
		return !denied, nil
	}
	var status authzv1.SubjectAccessReviewStatus
	err = w.retry.do(ctx, func(ctx context.Context) error {
		out, err := w.reviews.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err == nil {
			status = out.Status
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	allowed := status.Allowed && !status.Denied
	if allowed {
		w.cache.accept(key, struct{}{}, w.allowTTL)
	} else {
		w.cache.refuse(key, w.denyTTL)
	}
	return allowed, nil
}

func accessReviewSpec(a attributes) authzv1.SubjectAccessReviewSpec {
	spec := authzv1.SubjectAccessReviewSpec{
		User:   a.user.Name,
		UID:    a.user.UID,
		Groups: a.user.Groups,
		ResourceAttributes: &authzv1.ResourceAttributes{
			Verb: a.verb, Version: "v1", Resource: "nodes", Subresource: a.subresource, Name: a.name,
		},
	}
	if len(a.user.Extra) > 0 {
		spec.Extra = make(map[string]authzv1.ExtraValue, len(a.user.Extra))
		for k, v := range a.user.Extra {
			spec.Extra[k] = v
		}
	}
	return spec
}

// retryPolicy retries webhook calls that failed for a passing reason (the API server was
// unreachable, overloaded or erring), with growing pauses, as upstream's webhook back-off.
type retryPolicy struct {
	backoff wait.Backoff  // Steps is the number of calls
	timeout time.Duration // per call
}

var defaultRetry = retryPolicy{backoff: wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Steps: 5}, timeout: 10 * time.Second}

// do calls until a call succeeds or fails for good, the attempts run out or ctx ends, and
// returns the last call's error.
func (p retryPolicy) do(ctx context.Context, call func(context.Context) error) error {
	var err error
	settled := func(ctx context.Context) (bool, error) {
		callCtx, cancel := context.WithTimeout(ctx, p.timeout)
		defer cancel()
		err = call(callCtx)
		return err == nil || !retryable(err), nil
	}
	if werr := wait.ExponentialBackoffWithContext(ctx, p.backoff, settled); err == nil && werr != nil {
		return werr // ctx ended before the first call
	}
	return err
}

// retryable: transport failures, throttling and server errors may pass; any other API answer
// (forbidden, invalid, ...) will not.
func retryable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
}
