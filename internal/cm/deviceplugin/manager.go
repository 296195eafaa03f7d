// Package deviceplugin is the node side of the device plugin API (v1beta1). Plugins register on
// a unix socket, report their devices over a ListAndWatch stream, and are asked to prepare the
// devices handed to the containers that request them. The node status advertises the devices
// (capacity: all of them, allocatable: the healthy ones) so the scheduler can place pods.
package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/lib/unixsock"
)

const (
	// SocketName is the registration socket's name inside the plugin directory.
	SocketName = "kubelet.sock"
	// DefaultStopGracePeriod is how long the devices of a plugin whose stream ended stay in the
	// node's capacity (unhealthy) before the resource drops to zero, as upstream.
	DefaultStopGracePeriod = 5 * time.Minute
	// DefaultCallTimeout bounds every plugin call except the ListAndWatch stream.
	DefaultCallTimeout = 10 * time.Second
	// preStartTimeout bounds PreStartContainer, which may do real work (the API's own limit).
	preStartTimeout = pluginapi.KubeletPreStartContainerRPCTimeoutInSecs * time.Second
)

// Options configure a Manager.
type Options struct {
	// Dir holds the registration socket and the plugins' sockets: <root-dir>/device-plugins.
	Dir string
	// StopGracePeriod: DefaultStopGracePeriod when zero.
	StopGracePeriod time.Duration
	// CallTimeout: DefaultCallTimeout when zero.
	CallTimeout time.Duration
	// Clock times the grace period; the real clock when nil (tests step a fake one).
	Clock clock.WithDelayedExecution
	// NUMANodes are the machine's NUMA node IDs, which topology hints combine; [0] when empty.
	NUMANodes []int
	// InUse lists the pods that may hold devices: the active pods, and any pod whose
	// containers still run. SourcesReady says whether every pod source has been handled. Once
	// it has, the devices of the pods not in use are freed when a pod is admitted; before that
	// (just after a restart), or when either is nil, every assignment restored from the
	// checkpoint stands.
	InUse        func() []types.UID
	SourcesReady func() bool
	// RunningAtStart are the containers (pod UID → container names) the runtime was running
	// when nodelet started. Until every pod source has been handled, such a container keeps
	// the devices it holds even if their plugin has not registered again since the restart.
	RunningAtStart map[types.UID][]string
}

// Manager serves the Registration service and tracks every registered plugin's devices and
// which pod containers hold them. The zero value is not usable; call New.
type Manager struct {
	opts    Options
	changes chan struct{}

	// allocating serializes allocations, which call plugins between reading and changing state.
	allocating sync.Mutex

	mu        sync.Mutex
	resources map[string]*pluginResource
	pods      map[types.UID]map[string]*containerDevices // pod → container name → devices
	admission admission                                  // the pod being admitted
	server    *grpc.Server
	listener  net.Listener
	// runCtx is Run's context: the plugins' streams and admission's calls to them end with it.
	// nil before Run, when no plugin can have registered.
	runCtx  context.Context
	streams sync.WaitGroup // the plugins' ListAndWatch streams (follow)
}

// pluginResource is one extended resource and the plugin serving it. Entries are never deleted:
// once registered, a resource stays in the node status, at zero after its plugin went away.
type pluginResource struct {
	plugin  *plugin               // latest registration; nil once the grace period expired
	stopped bool                  // the plugin's stream ended; its devices are unhealthy
	devices map[string]deviceInfo // device ID → as last reported
	expiry  clock.Timer
}

// deviceInfo is what a plugin last reported of one device.
type deviceInfo struct {
	health string
	numa   []int64 // the NUMA nodes it is attached to; empty: the plugin did not say
}

func (d deviceInfo) equal(o deviceInfo) bool {
	return d.health == o.health && slices.Equal(d.numa, o.numa)
}

var _ pluginapi.RegistrationServer = (*Manager)(nil)

// New returns a Manager; Start opens the socket.
func New(opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, errors.New("deviceplugin: Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if opts.StopGracePeriod <= 0 {
		opts.StopGracePeriod = DefaultStopGracePeriod
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if len(opts.NUMANodes) == 0 {
		opts.NUMANodes = []int{0}
	}
	m := &Manager{
		opts:      opts,
		changes:   make(chan struct{}, 1),
		resources: map[string]*pluginResource{},
		pods:      map[types.UID]map[string]*containerDevices{},
	}
	m.restore()
	return m, nil
}

// SocketPath is where plugins register.
func (m *Manager) SocketPath() string { return filepath.Join(m.opts.Dir, SocketName) }

// Listen creates the plugin directory, removes the sockets left in it (plugins watch theirs
// and register again with the new nodelet, as with upstream) and opens the registration
// socket, so a failure shows at start; Run serves it.
func (m *Manager) Listen() error {
	// 0750 as upstream; an older, wider directory is narrowed too.
	if err := os.MkdirAll(m.opts.Dir, 0o750); err != nil {
		return fmt.Errorf("creating device plugin directory: %w", err)
	}
	if err := os.Chmod(m.opts.Dir, 0o750); err != nil {
		return fmt.Errorf("device plugin directory: %w", err)
	}
	if err := removeSockets(m.opts.Dir); err != nil {
		return err
	}
	lis, err := unixsock.Listen(m.SocketPath())
	if err != nil {
		return fmt.Errorf("listening on the device plugin socket: %w", err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, m)
	m.mu.Lock()
	m.server, m.listener = srv, lis
	m.mu.Unlock()
	return nil
}

// Run serves registrations on Listen's socket until ctx ends, then stops (see Stop) and waits
// for the server and every plugin's stream to return.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	srv, lis := m.server, m.listener
	m.runCtx = ctx // before serving: every registration comes after
	m.mu.Unlock()
	if srv == nil {
		return errors.New("device plugin manager is not listening")
	}
	klog.InfoS("Serving device plugin registrations", "socket", m.SocketPath())
	if err := unixsock.ServeGRPC(ctx, srv, lis); err != nil {
		klog.ErrorS(err, "Device plugin registration server stopped", "socket", m.SocketPath())
	}
	<-ctx.Done()
	m.Stop()
	m.streams.Wait()
	return nil
}

// Stop closes the registration socket and every plugin connection. Devices and assignments are
// kept as they are.
func (m *Manager) Stop() {
	m.mu.Lock()
	srv := m.server
	m.server = nil
	var plugins []*plugin
	for _, r := range m.resources {
		if r.expiry != nil {
			r.expiry.Stop()
		}
		if r.plugin != nil {
			plugins = append(plugins, r.plugin)
		}
	}
	m.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Stop()
	for _, p := range plugins {
		p.close()
	}
	if err := os.Remove(m.SocketPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "Removing the device plugin socket")
	}
}

// Changes receives a value whenever a resource's devices or their health changed, so the node
// status can be posted without waiting for its period. Values coalesce: one consumer.
func (m *Manager) Changes() <-chan struct{} { return m.changes }

func (m *Manager) notify() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Resources returns, per registered resource, the number of devices (capacity) and of healthy
// devices (allocatable).
func (m *Manager) Resources() (capacity, allocatable v1.ResourceList) {
	m.mu.Lock()
	defer m.mu.Unlock()
	capacity, allocatable = v1.ResourceList{}, v1.ResourceList{}
	for name, r := range m.resources {
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(int64(len(r.devices)), resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(int64(len(r.healthy())), resource.DecimalSI)
	}
	return capacity, allocatable
}

// Manages says whether a plugin ever registered the resource since nodelet started.
func (m *Manager) Manages(name v1.ResourceName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.resources[string(name)]
	return ok
}

// Register is the Registration service: it checks the request, asks the plugin for its options
// and starts following its devices. A plugin that fails the options call is not used.
func (m *Manager) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	klog.InfoS("Device plugin registering", "resource", req.ResourceName, "endpoint", req.Endpoint, "version", req.Version)
	path, err := m.checkRequest(req)
	if err != nil {
		klog.ErrorS(err, "Device plugin registration refused", "resource", req.ResourceName, "endpoint", req.Endpoint)
		return nil, err
	}
	p, err := connect(ctx, req.ResourceName, path, m.opts.CallTimeout)
	if err != nil {
		klog.ErrorS(err, "Device plugin not used", "resource", req.ResourceName, "endpoint", req.Endpoint)
		return nil, err
	}
	if err := m.install(p); err != nil {
		p.close()
		return nil, err
	}
	klog.InfoS("Device plugin registered", "resource", req.ResourceName, "endpoint", req.Endpoint,
		"preStartRequired", p.options.PreStartRequired)
	return &pluginapi.Empty{}, nil
}

// checkRequest validates a registration and returns the plugin's socket path.
func (m *Manager) checkRequest(req *pluginapi.RegisterRequest) (string, error) {
	supported := false
	for _, v := range pluginapi.SupportedVersions {
		supported = supported || v == req.Version
	}
	if !supported {
		return "", fmt.Errorf("device plugin API version %q is not supported; use one of %v", req.Version, pluginapi.SupportedVersions)
	}
	if err := validateResourceName(req.ResourceName); err != nil {
		return "", err
	}
	if !filepath.IsLocal(req.Endpoint) {
		return "", fmt.Errorf("endpoint %q must name a socket inside %s", req.Endpoint, m.opts.Dir)
	}
	return filepath.Join(m.opts.Dir, req.Endpoint), nil
}

// validateResourceName accepts extended resource names only: a domain-prefixed qualified name
// outside the kubernetes.io domain, usable in quota as requests.<name>.
func validateResourceName(name string) error {
	switch {
	case !strings.Contains(name, "/"):
		return fmt.Errorf("resource name %q must be prefixed with a domain, e.g. example.com/device", name)
	case strings.Contains(name, v1.ResourceDefaultNamespacePrefix):
		return fmt.Errorf("resource name %q is in the reserved %s domain", name, v1.ResourceDefaultNamespacePrefix)
	case strings.HasPrefix(name, v1.DefaultResourceRequestsPrefix):
		return fmt.Errorf("resource name %q must not start with %q", name, v1.DefaultResourceRequestsPrefix)
	}
	if errs := validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix + name); len(errs) > 0 {
		return fmt.Errorf("resource name %q is not a valid extended resource name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// install makes p the resource's plugin, replacing an earlier registration, and starts
// following its devices. Until the new plugin lists its devices the old list stands.
func (m *Manager) install(p *plugin) error {
	m.mu.Lock()
	if m.server == nil || m.runCtx == nil {
		m.mu.Unlock()
		return errors.New("device plugin manager is stopped")
	}
	r, ok := m.resources[p.resource]
	if !ok {
		r = &pluginResource{devices: map[string]deviceInfo{}}
		m.resources[p.resource] = r
	}
	old := r.plugin
	r.plugin, r.stopped = p, false
	if r.expiry != nil {
		r.expiry.Stop()
		r.expiry = nil
	}
	// The stream ends when p is closed (replaced, or by Stop) or Run's context ends; Run
	// waits for it.
	ctx, cancel := context.WithCancel(m.runCtx)
	p.cancel = cancel
	m.streams.Add(1)
	m.mu.Unlock()
	if old != nil {
		klog.InfoS("Device plugin replaced by a new registration", "resource", p.resource, "old", old.socket, "new", p.socket)
		old.close()
	}
	m.notify()
	go func() {
		defer m.streams.Done()
		m.follow(ctx, p)
	}()
	return nil
}

// follow runs p's ListAndWatch stream. The stream is not reopened when it ends: the plugin
// registers again if it wants to be used.
func (m *Manager) follow(ctx context.Context, p *plugin) {
	err := p.listAndWatch(ctx, func(devices []*pluginapi.Device) { m.setDevices(p, devices) })
	if ctx.Err() != nil {
		return // replaced or stopping
	}
	klog.ErrorS(err, "Device plugin stream ended; its devices are unhealthy until it registers again",
		"resource", p.resource, "endpoint", p.socket, "removeAfter", m.opts.StopGracePeriod)
	m.pluginStopped(p)
}

func (m *Manager) setDevices(p *plugin, devices []*pluginapi.Device) {
	next := make(map[string]deviceInfo, len(devices))
	for _, d := range devices {
		if d == nil {
			continue
		}
		info := deviceInfo{health: d.Health}
		if d.Topology != nil {
			for _, n := range d.Topology.Nodes {
				if n != nil {
					info.numa = append(info.numa, n.ID)
				}
			}
			slices.Sort(info.numa)
		}
		next[d.ID] = info
	}
	m.mu.Lock()
	r := m.resources[p.resource]
	if r == nil || r.plugin != p {
		m.mu.Unlock()
		return
	}
	changed := !maps.EqualFunc(r.devices, next, deviceInfo.equal)
	r.devices = next
	if changed {
		m.writeCheckpoint()
	}
	m.mu.Unlock()
	if changed {
		klog.V(2).InfoS("Device plugin devices changed", "resource", p.resource, "devices", len(next), "healthy", countHealthy(next))
		m.notify()
	}
}

// pluginStopped marks the devices of a plugin whose stream ended unhealthy, and drops them once
// the grace period passes without a new registration.
func (m *Manager) pluginStopped(p *plugin) {
	m.mu.Lock()
	r := m.resources[p.resource]
	if r == nil || r.plugin != p {
		m.mu.Unlock()
		return
	}
	r.stopped = true
	for id, d := range r.devices {
		d.health = pluginapi.Unhealthy
		r.devices[id] = d
	}
	r.expiry = m.opts.Clock.AfterFunc(m.opts.StopGracePeriod, func() { m.expire(p) })
	m.mu.Unlock()
	p.close()
	m.notify()
}

func (m *Manager) expire(p *plugin) {
	m.mu.Lock()
	r := m.resources[p.resource]
	if r == nil || r.plugin != p || !r.stopped {
		m.mu.Unlock()
		return
	}
	r.plugin, r.devices, r.expiry = nil, map[string]deviceInfo{}, nil
	m.writeCheckpoint()
	m.mu.Unlock()
	klog.InfoS("Device plugin did not come back; its resource drops to zero", "resource", p.resource)
	m.notify()
}

// healthy returns the IDs of the healthy devices.
func (r *pluginResource) healthy() map[string]bool {
	out := map[string]bool{}
	for id, d := range r.devices {
		if d.health == pluginapi.Healthy {
			out[id] = true
		}
	}
	return out
}

// hasTopology says whether the plugin reports NUMA nodes for any device: only then does the
// resource take part in NUMA alignment, as upstream.
func (r *pluginResource) hasTopology() bool {
	for _, d := range r.devices {
		if len(d.numa) > 0 {
			return true
		}
	}
	return false
}

func countHealthy(devices map[string]deviceInfo) int {
	n := 0
	for _, d := range devices {
		if d.health == pluginapi.Healthy {
			n++
		}
	}
	return n
}

// removeSockets removes the unix sockets in dir: the registration socket of an earlier run and
// the plugins' sockets, which tells plugins to register again. Other files (the checkpoint)
// stay.
func removeSockets(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading device plugin directory: %w", err)
	}
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing stale device plugin socket: %w", err)
		}
	}
	return nil
}
