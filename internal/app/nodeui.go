package app

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/server/healthz"
	"github.com/nodelet/nodelet/internal/server/nodeui"
)

// nodePage is the node page (internal/server/nodeui): one handler, served on the kubelet API at /ui/
// and, with --node-ui-port, on its own listener, and the sampler behind its graphs.
type nodePage struct {
	handler http.Handler
	sampler *nodeui.Sampler
}

// newNodePage builds the page; startNodePage runs it.
func (n *agent) newNodePage(checks map[string]healthz.Check) *nodePage {
	sampler := nodeui.NewSampler(n.summaryProvider().CPUAndMemorySummary, nodeui.DefaultInterval, nodeui.DefaultWindow)
	h := nodeui.NewHandler(nodeui.Deps{
		NodeName: n.cfg.NodeName, Standalone: n.cluster == nil, Node: n.pageNode(checks),
		Pods: n.podsWithStatus, Timeline: n.timeline.Handler(), Stats: sampler, Events: n.events,
		Machine: n.machine, ResourcePolicies: resourcePolicies(n.cfg.Kubelet),
	})
	return &nodePage{handler: h, sampler: sampler}
}

// startNodePage starts the page's own listener when --node-ui-port is set, and the sampler
// when the page is served anywhere (onAPI: the kubelet API serves /ui/).
func (n *agent) startNodePage(p *nodePage, onAPI bool) {
	if port := n.cfg.NodeUIPort; port > 0 {
		addr := net.JoinHostPort(n.cfg.NodeUIAddress, strconv.Itoa(int(port)))
		if ip := net.ParseIP(n.cfg.NodeUIAddress); ip != nil && !ip.IsLoopback() {
			klog.InfoS("The node page is served without authentication beyond loopback: anyone who reaches it sees the pods and events", "address", addr)
		}
		n.comps.start("node page server", nodeui.NewServer(addr, p.handler, n.nodePageNames()...).Run)
	} else if !onAPI {
		return
	}
	n.comps.start("node page sampler", p.sampler.Run)
}

// nodePageNames are the names and IPs the node page's listener answers to besides its own
// address: the node name, the machine's host name and the node's IPs.
func (n *agent) nodePageNames() []string {
	names := []string{n.cfg.NodeName, n.cfg.HostnameOverride}
	if h, err := os.Hostname(); err == nil {
		names = append(names, h)
	}
	return append(names, node.HostIPs(n.cfg.NodeIP)...)
}

// pageNode is the node the page shows: the registered Node in cluster mode (nil until it is
// registered), otherwise what a standalone node would report, worked out on each request.
func (n *agent) pageNode(checks map[string]healthz.Check) func(context.Context) *v1.Node {
	if n.cluster != nil {
		return func(context.Context) *v1.Node { return n.node() }
	}
	kc := n.cfg.Kubelet
	deps := node.Deps{Runtime: n.runtime, Health: checksHealth(checks), Machine: n.host}
	if n.eviction != nil {
		deps.Pressure = n.eviction.Pressure
	}
	d, err := node.NewDescriber(n.localNode, node.Options{
		NodeName: n.cfg.NodeName, NodeIPs: splitNonEmpty(n.cfg.NodeIP), Port: kc.Port, MaxPods: maxPods(kc),
		KubeReserved: kc.KubeReserved, SystemReserved: kc.SystemReserved, EvictionHard: kc.EvictionHard, RootDir: n.cfg.RootDir,
	}, deps)
	if err != nil {
		// Validation parsed the same reservations, so this does not happen; show the bare node.
		klog.ErrorS(err, "Node page: the node's status cannot be worked out")
		return func(context.Context) *v1.Node { return n.localNode }
	}
	return d.Describe
}

// checksHealth is the first failing health check, named, as the Ready condition reports it.
func checksHealth(checks map[string]healthz.Check) func() error {
	return func() error {
		for _, name := range slices.Sorted(maps.Keys(checks)) {
			if err := checks[name](); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	}
}
