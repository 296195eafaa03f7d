package handlerio

import (
	"context"
	"fmt"
	"io"
	"net/http"

	v1 "k8s.io/api/core/v1"
)

// HookUserAgent is what lifecycle hooks' GETs identify as, like the kubelet of the same version.
const HookUserAgent = "kube-lifecycle/1.33"

// hookClient sends every lifecycle httpGet handler's request. A 302 to another host is
// not followed: it answers the hook, which then passes as any 3xx does.
var hookClient = NewClient()

// HookGet sends a lifecycle handler's GET to host:port. Any status from 200 to 399 passes.
func HookGet(ctx context.Context, g *v1.HTTPGetAction, host string, port int) error {
	u := URL(Scheme(g), host, port, g.Path)
	req, err := NewRequest(ctx, u, g.HTTPHeaders, HookUserAgent)
	if err != nil {
		return err
	}
	resp, err := hookClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxOutput))
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return nil
}
