package csi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const (
	// registrationTimeout bounds one registration: the plugin's GetInfo, the driver's
	// NodeGetInfo and the API updates.
	registrationTimeout = 30 * time.Second
	// retryPeriod is how often sockets whose registration failed are tried again while
	// they stay.
	retryPeriod = 2 * time.Second
)

// NodeObjects keeps the API objects that list this node's drivers (CSINode, the node's
// annotation and topology labels); nil in standalone mode.
type NodeObjects interface {
	// Initialize makes sure the node's CSINode exists; the registrar retries it until it
	// succeeds before it registers any driver.
	Initialize(ctx context.Context) error
	InstallDriver(ctx context.Context, name string, info nodeInfo) error
	UninstallDriver(ctx context.Context, name string) error
}

// Registrar watches the plugins_registry directory for plugin sockets, as upstream's plugin
// watcher does, and registers the CSI drivers behind them: GetInfo on the registration
// socket, NodeGetInfo on the driver, the node's objects, then NotifyRegistrationStatus.
// A socket that goes away deregisters its driver.
type Registrar struct {
	dir     string
	drivers *Drivers
	objects NodeObjects
	// handlers register the plugin types other than CSIPlugin (DRAPlugin), by type.
	handlers map[string]PluginHandler

	mu     sync.Mutex
	failed sets.Set[string]       // sockets to try again
	others map[string]otherPlugin // by socket: the plugins a handler registered
	ready  chan struct{}
}

// PluginHandler registers the plugins of one type other than CSIPlugin that the watcher finds
// (upstream's plugin manager hands each type to its handler the same way).
type PluginHandler interface {
	// RegisterPlugin registers the plugin GetInfo described; its error is what
	// NotifyRegistrationStatus tells the plugin, and the socket is tried again while it stays.
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	// DeregisterPlugin: the registration socket of a plugin it registered went away.
	DeregisterPlugin(name, endpoint string)
}

// otherPlugin is a plugin a handler registered, to deregister when its socket goes.
type otherPlugin struct {
	handler        PluginHandler
	name, endpoint string
}

// NewRegistrar watches dir (<root-dir>/plugins_registry) and registers into drivers.
func NewRegistrar(dir string, drivers *Drivers, objects NodeObjects) *Registrar {
	return &Registrar{dir: dir, drivers: drivers, objects: objects, handlers: map[string]PluginHandler{},
		failed: sets.New[string](), others: map[string]otherPlugin{}, ready: make(chan struct{})}
}

// Handle has h register the plugins of pluginType (registerapi.DRAPlugin); call it before Run.
func (r *Registrar) Handle(pluginType string, h PluginHandler) { r.handlers[pluginType] = h }

// Ready is closed once the sockets present at start have been tried.
func (r *Registrar) Ready() <-chan struct{} { return r.ready }

// Run watches the directory until ctx ends.
func (r *Registrar) Run(ctx context.Context) error {
	if err := os.MkdirAll(r.dir, 0o750); err != nil {
		return fmt.Errorf("creating the plugin registration directory: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s for CSI plugins: %w", r.dir, err)
	}
	defer w.Close()
	if err := w.Add(r.dir); err != nil {
		return fmt.Errorf("watching %s for CSI plugins: %w", r.dir, err)
	}
	if r.objects != nil {
		if err := r.initialize(ctx); err != nil {
			return nil // ctx ended
		}
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("reading %s: %w", r.dir, err)
	}
	for _, e := range entries {
		r.tryRegister(ctx, filepath.Join(r.dir, e.Name()))
	}
	close(r.ready)
	tick := time.NewTicker(retryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-w.Events:
			switch {
			case ev.Has(fsnotify.Create):
				r.tryRegister(ctx, ev.Name)
			case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
				r.deregister(ctx, ev.Name)
			}
		case err := <-w.Errors:
			klog.ErrorS(err, "Watching the plugin registration directory", "path", r.dir)
		case <-tick.C:
			r.retryFailed(ctx)
		}
	}
}

// initialize retries the node objects' initialization (the Node may not be registered yet),
// 500ms doubling to 30s apart, until it works or ctx ends.
func (r *Registrar) initialize(ctx context.Context) error {
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Steps: math.MaxInt32}
	initialized := func(ctx context.Context) (bool, error) {
		err := r.objects.Initialize(ctx)
		if err != nil {
			klog.InfoS("Initializing the CSINode failed; retrying", "err", err)
		}
		return err == nil, nil
	}
	return backoff.DelayFunc().Until(ctx, true, true, initialized)
}

func (r *Registrar) retryFailed(ctx context.Context) {
	r.mu.Lock()
	sockets := sets.List(r.failed)
	r.mu.Unlock()
	for _, s := range sockets {
		r.tryRegister(ctx, s)
	}
}

// tryRegister registers the plugin on socket; a failure is retried while the socket stays.
func (r *Registrar) tryRegister(ctx context.Context, socket string) {
	st, err := os.Stat(socket)
	if err != nil || st.Mode()&os.ModeSocket == 0 || strings.HasPrefix(filepath.Base(socket), ".") {
		r.forget(socket)
		return
	}
	err = r.register(ctx, socket)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil || errors.Is(err, errNotCSI) {
		r.failed.Delete(socket)
		return
	}
	if !r.failed.Has(socket) {
		klog.ErrorS(err, "Registering a plugin failed; retrying while its socket stays", "socket", socket)
	}
	r.failed.Insert(socket)
}

func (r *Registrar) forget(socket string) {
	r.mu.Lock()
	r.failed.Delete(socket)
	r.mu.Unlock()
}

var errNotCSI = errors.New("not a CSI plugin")

func (r *Registrar) register(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, registrationTimeout)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	reg := registerapi.NewRegistrationClient(conn)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("GetInfo of the plugin at %s: %w", socket, err)
	}
	if h := r.handlers[info.Type]; h != nil {
		regErr := r.registerOther(ctx, h, socket, info)
		notify(ctx, reg, regErr)
		return regErr
	}
	if info.Type != registerapi.CSIPlugin {
		// Device plugins register on the kubelet's own socket with nodelet.
		notify(ctx, reg, fmt.Errorf("plugin type %q is not supported by nodelet (it registers %s)", info.Type, r.supportedTypes()))
		klog.InfoS("Plugin of a type nodelet does not register; left alone", "socket", socket, "type", info.Type, "name", info.Name)
		return errNotCSI
	}
	regErr := r.registerDriver(ctx, socket, info)
	notify(ctx, reg, regErr)
	return regErr
}

func (r *Registrar) registerDriver(ctx context.Context, socket string, info *registerapi.PluginInfo) error {
	if err := checkVersions(info.Name, info.SupportedVersions); err != nil {
		return err
	}
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = socket
	}
	d, err := connect(ctx, info.Name, endpoint, socket)
	if err != nil {
		return err
	}
	if r.objects != nil {
		if err := r.objects.InstallDriver(ctx, info.Name, d.info); err != nil {
			d.client.close()
			return fmt.Errorf("error updating CSINode object with CSI driver node info: %w", err)
		}
	}
	r.drivers.set(d)
	klog.InfoS("Registered CSI driver", "name", info.Name, "endpoint", endpoint, "nodeID", d.info.nodeID)
	return nil
}

// registerOther hands a plugin of a handled type to its handler; the endpoint defaults to the
// registration socket, as for CSI.
func (r *Registrar) registerOther(ctx context.Context, h PluginHandler, socket string, info *registerapi.PluginInfo) error {
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = socket
	}
	if err := h.RegisterPlugin(ctx, info.Name, endpoint, info.SupportedVersions); err != nil {
		return err
	}
	r.mu.Lock()
	r.others[socket] = otherPlugin{handler: h, name: info.Name, endpoint: endpoint}
	r.mu.Unlock()
	klog.InfoS("Registered plugin", "type", info.Type, "name", info.Name, "endpoint", endpoint)
	return nil
}

// supportedTypes names the plugin types this registrar registers, for a refused plugin.
func (r *Registrar) supportedTypes() string {
	types := []string{registerapi.CSIPlugin}
	for t := range r.handlers {
		types = append(types, t)
	}
	slices.Sort(types)
	return strings.Join(types, ", ")
}

// checkVersions accepts a driver that supports some CSI 1.x version, as upstream does.
func checkVersions(name string, versions []string) error {
	for _, s := range versions {
		v, err := version.ParseGeneric(s)
		if err == nil && v.Major() == 1 {
			return nil
		}
	}
	return fmt.Errorf("none of the versions specified %q are supported by CSI driver %s: nodelet speaks CSI 1.x", versions, name)
}

func notify(ctx context.Context, reg registerapi.RegistrationClient, regErr error) {
	status := &registerapi.RegistrationStatus{PluginRegistered: regErr == nil}
	if regErr != nil {
		status.Error = regErr.Error()
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, status); err != nil {
		klog.ErrorS(err, "NotifyRegistrationStatus failed")
	}
}

// deregister forgets the driver that registered through socket and takes it off the node's
// objects.
func (r *Registrar) deregister(ctx context.Context, socket string) {
	r.forget(socket)
	r.mu.Lock()
	other, ok := r.others[socket]
	delete(r.others, socket)
	r.mu.Unlock()
	if ok {
		klog.InfoS("Deregistering plugin: its registration socket was removed", "name", other.name, "socket", socket)
		other.handler.DeregisterPlugin(other.name, other.endpoint)
		return
	}
	d := r.drivers.removeSocket(socket)
	if d == nil {
		return
	}
	klog.InfoS("Deregistered CSI driver: its registration socket was removed", "name", d.name, "socket", socket)
	if r.objects == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, registrationTimeout)
	defer cancel()
	if err := r.objects.UninstallDriver(ctx, d.name); err != nil {
		klog.ErrorS(err, "Removing the CSI driver from the node's CSINode failed", "name", d.name)
	}
}
