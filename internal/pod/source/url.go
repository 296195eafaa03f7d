package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
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
	url      string // fetched; may carry credentials (userinfo, a signed URL's query)
	name     string // what logs, events and errors call it: scheme, host and path
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
		name:     URLName(url),
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
			klog.ErrorS(err, "Cannot fetch static pods, keeping the last ones", "url", s.name)
		} else {
			klog.V(4).InfoS("Still cannot fetch static pods", "url", s.name, "err", err)
		}
		s.failing = true
		return
	}
	if s.failing {
		klog.InfoS("Fetching static pods works again", "url", s.name)
		s.failing = false
	}
	pods := []*v1.Pod{}
	// An empty body is a valid answer: the URL has no pods for this node.
	if len(bytes.TrimSpace(body)) != 0 {
		// The UID is derived from the whole URL, as upstream's is; only its hash is shown.
		if pods, err = s.pods.fromBody(body, s.url); err != nil {
			if s.reports.first(s.name, body) {
				klog.ErrorS(err, "Ignoring bad static pod manifest, keeping the last pods", "url", s.name, "reason", errorReason(err))
				recordBadManifest(s.recorder, s.nodeName, s.name, err)
			}
			return
		}
	}
	s.reports.forget(s.name)
	s.pods.forgetOthers(pods)
	if s.out.send(ctx, pods) {
		klog.V(2).InfoS("Sent static pods from URL", "url", s.name, "pods", len(pods))
	}
}

func (s *URLSource) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, s.nameIn(err)
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
		return nil, s.nameIn(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.name, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read body of %s: %w", s.name, s.nameIn(err))
	}
	if len(body) > maxManifestBytes {
		return nil, fmt.Errorf("body of %s is larger than %d bytes", s.name, maxManifestBytes)
	}
	return body, nil
}

// nameIn replaces the URL in a *url.Error (which net/http returns, showing the query and the
// user name) with the source's name.
func (s *URLSource) nameIn(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: s.name, Err: ue.Err}
	}
	return err
}

// URLName is how nodelet names a manifest URL wherever it shows it: its scheme, host and
// path, without the userinfo or the query (a signed URL carries its signature there) or the
// fragment. Something that does not parse is shown as "<unparsable URL>".
func URLName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	named := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return named.String()
}
