package plugins

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/volumes/tokens"
)

// serviceAccountToken is a projected serviceAccountToken source's token, from the cache.
func serviceAccountToken(ctx context.Context, c *tokens.Cache, pod *v1.Pod, proj *v1.ServiceAccountTokenProjection) (string, error) {
	status, err := c.Get(ctx, pod, proj.Audience, proj.ExpirationSeconds)
	if errors.Is(err, tokens.ErrNoAPIServer) {
		return "", fmt.Errorf("serviceAccountToken %q: %w", proj.Path, err)
	}
	return status.Token, err
}
