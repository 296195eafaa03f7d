package dra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	resourceapi "k8s.io/api/resource/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	drav1alpha4 "k8s.io/kubelet/pkg/apis/dra/v1alpha4"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/metrics"
)

const (
	// callTimeout bounds one NodePrepareResources or NodeUnprepareResources call, as upstream's
	// default plugin client timeout.
	callTimeout = 45 * time.Second
	// wipeDelay is how long a driver that went away has to come back before its
	// ResourceSlices of this node are deleted (upstream's wiping delay).
	wipeDelay = 30 * time.Second
)

// plugin is one registered instance of a DRA driver's kubelet plugin.
type plugin struct {
	name, endpoint string
	service        string // the gRPC service chosen: drapb.DRAPluginService or drav1alpha4.NodeService
	conn           *grpc.ClientConn
	client         drapb.DRAPluginClient
}

// Plugins are the registered DRA drivers. It is the plugin watcher's handler of the DRAPlugin
// type: a driver registers through its registration socket and is called on the endpoint it
// names; several instances of one driver may register (a rolling update), the newest is used.
// When the last instance of a driver goes away, the node's ResourceSlices of that driver are
// deleted unless it registers again within wipeDelay; at start, all the node's slices are
// deleted (each driver publishes its own again once it registers), as upstream.
type Plugins struct {
	client   kubeclient.Interface // nil in standalone mode: no slices to wipe
	nodeName string
	delay    time.Duration

	mu      sync.Mutex
	byName  map[string][]*plugin
	pending map[string]context.CancelFunc // slice wipes waiting out the delay, by driver
	bg      context.Context               // Run's context, for the wipes
	stopped bool                          // Run is ending: no more wipes
	wg      sync.WaitGroup
	// wiped is closed once the first attempt to delete the node's slices left from before
	// the start is done: no driver registers before, or the wipe could take the slices it
	// just published.
	wiped chan struct{}
}

// NewPlugins makes the registry; client may be nil (standalone).
func NewPlugins(client kubeclient.Interface, nodeName string) *Plugins {
	return &Plugins{client: client, nodeName: nodeName, delay: wipeDelay, byName: map[string][]*plugin{},
		pending: map[string]context.CancelFunc{}, bg: context.Background(), wiped: make(chan struct{})}
}

// Run wipes the node's ResourceSlices of every driver (in the background, retried), waits for
// ctx to end, cancels pending wipes and closes the connections.
func (p *Plugins) Run(ctx context.Context) error {
	p.mu.Lock()
	p.bg = ctx
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.wipe(ctx, "", func() { close(p.wiped) })
	}()
	<-ctx.Done()
	p.mu.Lock()
	p.stopped = true // no wipe starts after this: wg.Add happens before Wait
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, instances := range p.byName {
		for _, pl := range instances {
			pl.conn.Close()
		}
	}
	p.byName = map[string][]*plugin{}
	return nil
}

// chooseService picks the newest gRPC service the plugin offers; a plugin that names neither
// is spoken to with v1alpha4, as upstream.
func chooseService(versions []string) (string, error) {
	if len(versions) == 0 {
		return "", errors.New("empty list of supported gRPC services (aka supported versions)")
	}
	for _, s := range []string{drapb.DRAPluginService, drav1alpha4.NodeService} {
		if slices.Contains(versions, s) {
			return s, nil
		}
	}
	return drav1alpha4.NodeService, nil
}

// RegisterPlugin adds an instance of driver name serving on endpoint.
func (p *Plugins) RegisterPlugin(_ context.Context, name, endpoint string, versions []string) error {
	service, err := chooseService(versions)
	if err != nil {
		return fmt.Errorf("version check of plugin %s failed: %w", name, err)
	}
	select {
	case <-p.wiped:
	default:
		// Not waited for: the watcher registers CSI drivers on the same loop. It tries
		// again shortly.
		return fmt.Errorf("DRA plugin %s: the node's ResourceSlices from before the start are not deleted yet", name)
	}
	conn, err := grpc.NewClient("unix:"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(callMetrics(name)))
	if err != nil {
		return fmt.Errorf("connecting to DRA plugin %s at %s: %w", name, endpoint, err)
	}
	pl := &plugin{name: name, endpoint: endpoint, service: service, conn: conn}
	if service == drapb.DRAPluginService {
		pl.client = drapb.NewDRAPluginClient(conn)
	} else {
		pl.client = drav1alpha4.V1Alpha4ClientWrapper{NodeClient: drav1alpha4.NewNodeClient(conn)}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A re-registration on the same endpoint (the driver restarted) replaces the old instance.
	p.byName[name] = slices.DeleteFunc(p.byName[name], func(old *plugin) bool {
		if old.endpoint == endpoint {
			old.conn.Close()
			return true
		}
		return false
	})
	p.byName[name] = append(p.byName[name], pl)
	if cancel := p.pending[name]; cancel != nil {
		cancel()
		delete(p.pending, name)
	}
	klog.InfoS("Registered DRA plugin", "name", name, "endpoint", endpoint, "service", service)
	return nil
}

// DeregisterPlugin removes the instance of name on endpoint; once none is left, the node's
// slices of the driver are wiped after the delay.
func (p *Plugins) DeregisterPlugin(name, endpoint string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	instances := p.byName[name]
	i := slices.IndexFunc(instances, func(pl *plugin) bool { return pl.endpoint == endpoint })
	if i < 0 {
		return
	}
	instances[i].conn.Close()
	instances = slices.Delete(instances, i, i+1)
	if len(instances) > 0 {
		p.byName[name] = instances
		return
	}
	delete(p.byName, name)
	if p.stopped {
		return
	}
	klog.InfoS("DRA plugin went away; its ResourceSlices of this node go unless it registers again", "name", name, "delay", p.delay)
	if cancel := p.pending[name]; cancel != nil {
		cancel()
	}
	ctx, cancel := context.WithCancel(p.bg)
	p.pending[name] = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.delay):
		}
		p.wipe(ctx, name, nil)
		p.mu.Lock()
		if p.pending[name] != nil && ctx.Err() == nil {
			delete(p.pending, name)
		}
		p.mu.Unlock()
		cancel()
	}()
}

// wipe deletes this node's ResourceSlices of driver (all drivers when ""), retrying with
// upstream's backoff until it works or ctx ends. tried, when set, is called after the first
// attempt, whatever its outcome: drivers may register from then on, so an API server that
// refuses (resource.k8s.io off) does not keep them out.
func (p *Plugins) wipe(ctx context.Context, driver string, tried func()) {
	first := sync.OnceFunc(func() {
		if tried != nil {
			tried()
		}
	})
	defer first()
	if p.client == nil || p.nodeName == "" {
		return
	}
	selector := fields.Set{resourceapi.ResourceSliceSelectorNodeName: p.nodeName}
	if driver != "" {
		selector[resourceapi.ResourceSliceSelectorDriver] = driver
	}
	opts := metav1.ListOptions{FieldSelector: selector.String()}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Cap: 5 * time.Minute, Steps: 100}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := p.client.ResourceV1beta1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, opts)
		defer first()
		if err != nil {
			klog.V(3).InfoS("Deleting ResourceSlices failed; retrying", "fieldSelector", opts.FieldSelector, "err", err)
			return false, nil
		}
		klog.V(3).InfoS("Deleted ResourceSlices", "fieldSelector", opts.FieldSelector)
		return true, nil
	})
}

// get is the newest registered instance of driver name.
func (p *Plugins) get(name string) (*plugin, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	instances := p.byName[name]
	if len(instances) == 0 {
		return nil, fmt.Errorf("plugin name %s not found in the list of registered DRA plugins", name)
	}
	return instances[len(instances)-1], nil
}

// Registered lists the drivers that have a plugin registered.
func (p *Plugins) Registered() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for name := range p.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// prepare calls NodePrepareResources of driver for claims.
func (p *Plugins) prepare(ctx context.Context, driver string, claims []*drapb.Claim) (*drapb.NodePrepareResourcesResponse, error) {
	pl, err := p.get(driver)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return pl.client.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: claims})
}

// unprepare calls NodeUnprepareResources of driver for claims.
func (p *Plugins) unprepare(ctx context.Context, driver string, claims []*drapb.Claim) (*drapb.NodeUnprepareResourcesResponse, error) {
	pl, err := p.get(driver)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return pl.client.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims})
}

// callMetrics times every call to driver's plugin by method and gRPC status code.
func callMetrics(driver string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		metrics.ObserveDRACall(driver, method, status.Code(err).String(), time.Since(start))
		return err
	}
}
