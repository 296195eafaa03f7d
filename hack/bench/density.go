package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

const plegMetric = "kubelet_pleg_relist_duration_seconds"

// densityResult is the 250-pod run.
type densityResult struct {
	pods     int
	running  int           // pods seen Running before the timeout
	all      time.Duration // first creation → last Running
	ready    bool          // node Ready throughout and at the end
	notReady string        // the first non-Ready condition seen, if any
	plegP99  float64       // seconds, over the run; <0 when the kubelet has no such metric
	plegOver bool          // p99 lies beyond the last finite bucket: plegP99 is that bound
}

// density starts plan.densityPods pods at once and waits for all of them, watching the node's
// Ready condition and reading the kubelet's PLEG relist histogram before and after.
func (b *bench) density(ctx context.Context, subject, ns string) (*densityResult, error) {
	n := b.p.densityPods
	nw := b.watchNode(ctx)
	defer nw.stop()
	before, errBefore := b.scrapeHistogram(ctx, plegMetric)
	l, _, err := b.launch(ctx, subject, ns, "density", fmt.Sprintf("density %d pods", n), n, 10*time.Minute)
	if err != nil && !errors.Is(err, errTimeout) {
		return nil, err
	}
	after, errAfter := b.scrapeHistogram(ctx, plegMetric)
	res := &densityResult{pods: n, running: len(l.sorted), all: l.all, plegP99: -1}
	if errBefore == nil && errAfter == nil {
		res.plegP99, res.plegOver = quantile(0.99, after.minus(before))
	} else {
		progress(subject, "no %s from the kubelet (%v)", plegMetric, errors.Join(errBefore, errAfter))
	}
	node, gerr := b.kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	res.notReady = nw.firstNotReady()
	if gerr == nil && !nodeReady(node) && res.notReady == "" {
		res.notReady = "NotReady at the end"
	}
	res.ready = res.notReady == ""
	progress(subject, "density: %d/%d Running after %v, node Ready throughout: %v, PLEG relist p99 %s",
		res.running, n, ms(res.all), res.ready, plegText(res))
	return res, b.deleteRun(ctx, subject, ns, "density", n)
}

// nodeWatch remembers the first time the bench node's Ready condition was not True.
type nodeWatch struct {
	mu    sync.Mutex
	first string
	stop  context.CancelFunc
}

func (b *bench) watchNode(ctx context.Context) *nodeWatch {
	wctx, cancel := context.WithCancel(ctx)
	nw := &nodeWatch{stop: cancel}
	start := time.Now()
	sel := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", nodeName).String()}
	go func() {
		for wctx.Err() == nil {
			wi, err := b.kube.CoreV1().Nodes().Watch(wctx, sel)
			if err != nil {
				_ = sleep(wctx, 100*time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				if node, ok := ev.Object.(*v1.Node); ok && ev.Type != watch.Deleted && !nodeReady(node) {
					nw.record(fmt.Sprintf("not Ready %v into the run", time.Since(start).Round(time.Second)))
				}
			}
			wi.Stop()
		}
	}()
	return nw
}

func (nw *nodeWatch) record(s string) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.first == "" {
		nw.first = s
	}
}

func (nw *nodeWatch) firstNotReady() string {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.first
}

// histogram is a Prometheus histogram's cumulative bucket counts by upper bound.
type histogram map[float64]float64

func (h histogram) minus(o histogram) histogram {
	out := histogram{}
	for le, c := range h {
		out[le] = c - o[le]
	}
	return out
}

// quantile interpolates linearly inside the bucket holding rank q, as histogram_quantile does.
// Past the last finite bound it returns that bound and over = true.
func quantile(q float64, h histogram) (v float64, over bool) {
	bounds := make([]float64, 0, len(h))
	for le := range h {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || h[bounds[len(bounds)-1]] == 0 {
		return math.NaN(), false
	}
	rank := q * h[bounds[len(bounds)-1]]
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		if h[le] >= rank {
			if math.IsInf(le, 1) {
				return lower, true
			}
			return lower + (le-lower)*(rank-below)/(h[le]-below), false
		}
		lower, below = le, h[le]
	}
	return lower, true
}

// scrapeHistogram reads one histogram from the kubelet's /metrics, authenticating as the API
// server's kubelet client.
func (b *bench) scrapeHistogram(ctx context.Context, name string) (histogram, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(b.o.pki, "apiserver-kubelet-client.crt"),
		filepath.Join(b.o.pki, "apiserver-kubelet-client.key"))
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}} // loopback, self-signed serving cert
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", apiPort), nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseHistogram(resp.Body, name)
}

// parseHistogram picks name_bucket{...le="x"...} lines out of the text exposition format.
func parseHistogram(r io.Reader, name string) (histogram, error) {
	h := histogram{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"_bucket{") {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.LastIndexByte(line, ' ')
		if i < 0 || j < 0 {
			continue
		}
		leText := line[i+4:]
		leText = leText[:strings.IndexByte(leText, '"')]
		le, err1 := strconv.ParseFloat(leText, 64)
		count, err2 := strconv.ParseFloat(line[j+1:], 64)
		if err1 == nil && err2 == nil {
			h[le] += count
		}
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("no %s in /metrics", name)
	}
	return h, sc.Err()
}

// plegText is the PLEG p99 for the table: "n/a" without the metric, "> 10 s" past the buckets.
func plegText(d *densityResult) string {
	if d.plegOver {
		return fmt.Sprintf("> %g s", d.plegP99)
	}
	return seconds(d.plegP99)
}

func seconds(s float64) string {
	if s < 0 || math.IsNaN(s) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f s", s)
}
