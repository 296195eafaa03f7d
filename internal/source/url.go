package source

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podutil"
)

const (
	// urlTimeout bounds one fetch so a hung server cannot stall the source.
	urlTimeout = 10 * time.Second
	// maxManifestBytes bounds the body nodelet will read.
	maxManifestBytes = 10 << 20
)

// defaultPeriod is the re-read interval when none is configured, as the
// kubelet's fileCheckFrequency and httpCheckFrequency default to.
const defaultPeriod = 20 * time.Second

func periodOrDefault(period time.Duration) time.Duration {
	if period <= 0 {
		return defaultPeriod
	}
	return period
}

// URLSource polls a URL serving a Pod or a PodList and sends a snapshot of
// its pods whenever they change.
type URLSource struct {
	url      string
	header   http.Header
	nodeName string
	period   time.Duration
	out      snapshots
	recorder record.EventRecorder
	client   *http.Client

	pods    *staticPods
	reports *reportOnce
	failing bool // the last fetch failed; log only the first failure of a run
}

// NewURLSource returns a source fetching url with header every period.
func NewURLSource(url string, header http.Header, nodeName string, period time.Duration, out chan<- []*v1.Pod, recorder record.EventRecorder) *URLSource {
	return &URLSource{
		url:      url,
		header:   header.Clone(),
		nodeName: nodeName,
		period:   periodOrDefault(period),
		out:      snapshots{out: out},
		recorder: recorder,
		client:   &http.Client{Timeout: urlTimeout},
		pods:     newStaticPods(nodeName, podutil.HTTPSource),
		reports:  newReportOnce(),
	}
}

// Run fetches the URL now and every period until ctx is done.
func (s *URLSource) Run(ctx context.Context) error {
	ticker := time.NewTicker(s.period)
	defer ticker.Stop()
	for {
		s.sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// sync fetches once and sends the pods if they changed. On any failure the
// last snapshot stays in force until a later fetch succeeds.
func (s *URLSource) sync(ctx context.Context) {
	body, err := s.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if !s.failing {
			klog.ErrorS(err, "Cannot fetch static pods, keeping the last ones", "url", s.url)
		} else {
			klog.V(4).InfoS("Still cannot fetch static pods", "url", s.url, "err", err)
		}
		s.failing = true
		return
	}
	if s.failing {
		klog.InfoS("Fetching static pods works again", "url", s.url)
		s.failing = false
	}
	pods := []*v1.Pod{}
	// An empty body is a valid answer: the URL has no pods for this node.
	if len(bytes.TrimSpace(body)) != 0 {
		if pods, err = s.pods.fromBody(body, s.url); err != nil {
			if s.reports.first(s.url, body) {
				klog.ErrorS(err, "Ignoring bad static pod manifest, keeping the last pods", "url", s.url, "reason", errorReason(err))
				recordBadManifest(s.recorder, s.nodeName, s.url, err)
			}
			return
		}
	}
	s.reports.forget(s.url)
	s.pods.forgetOthers(pods)
	if s.out.send(ctx, pods) {
		klog.V(2).InfoS("Sent static pods from URL", "url", s.url, "pods", len(pods))
	}
}

func (s *URLSource) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header = s.header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	// Go sends req.Host, not a Host entry in the header map.
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read body of %s: %w", s.url, err)
	}
	if len(body) > maxManifestBytes {
		return nil, fmt.Errorf("body of %s is larger than %d bytes", s.url, maxManifestBytes)
	}
	return body, nil
}
