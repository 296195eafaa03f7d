package prober

import (
	"context"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/handlerio"
)

// httpProbe GETs the handler's URL: 2xx passes, a 3xx that was not followed passes with a
// warning, anything else (or no answer in time) fails.
func (m *Manager) httpProbe(ctx context.Context, g *v1.HTTPGetAction, host string, port int) (outcome, error) {
	u := handlerio.URL(handlerio.Scheme(g), host, port, g.Path)
	req, err := handlerio.NewRequest(ctx, u, g.HTTPHeaders, UserAgent)
	if err != nil {
		return outcome{}, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return outcome{res: failure, output: err.Error()}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, handlerio.MaxOutput))
	if err != nil {
		return outcome{res: failure, output: err.Error()}, nil
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return outcome{res: success, output: string(body)}, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return outcome{res: success, warning: true, output: "Probe terminated redirects, Response body: " + string(body)}, nil
	}
	return outcome{res: failure, output: fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)}, nil
}
