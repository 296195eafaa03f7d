package csi

import (
	"context"
	"fmt"
	"sort"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// driver is one registered CSI driver.
type driver struct {
	name string
	// endpoint is the driver's node service socket; socket the registration socket it
	// announced itself on (removing that socket deregisters it).
	endpoint, socket string
	info             nodeInfo
	caps             map[csipb.NodeServiceCapability_RPC_Type]bool
	client           *nodeClient
}

// Drivers are the registered CSI drivers, by name.
type Drivers struct {
	mu     sync.RWMutex
	byName map[string]*driver
}

// NewDrivers returns an empty registry.
func NewDrivers() *Drivers { return &Drivers{byName: map[string]*driver{}} }

// connect dials a driver's node service and reads its node info and capabilities.
func connect(ctx context.Context, name, endpoint, socket string) (*driver, error) {
	client, err := dial(endpoint)
	if err != nil {
		return nil, err
	}
	info, err := client.getInfo(ctx)
	if err != nil {
		client.close()
		return nil, fmt.Errorf("error in NodeGetInfo of CSI driver %s: %w", name, err)
	}
	caps, err := client.capabilities(ctx)
	if err != nil {
		client.close()
		return nil, fmt.Errorf("error in NodeGetCapabilities of CSI driver %s: %w", name, err)
	}
	return &driver{name: name, endpoint: endpoint, socket: socket, info: info, caps: caps, client: client}, nil
}

// set registers d, replacing (and disconnecting) a driver of the same name.
func (ds *Drivers) set(d *driver) {
	ds.mu.Lock()
	old := ds.byName[d.name]
	ds.byName[d.name] = d
	ds.mu.Unlock()
	if old != nil {
		old.client.close()
	}
}

// removeSocket deregisters the driver that registered through socket and returns it.
func (ds *Drivers) removeSocket(socket string) *driver {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for name, d := range ds.byName {
		if d.socket == socket {
			delete(ds.byName, name)
			d.client.close()
			return d
		}
	}
	return nil
}

// get returns the registered driver name, with upstream's error when there is none.
func (ds *Drivers) get(name string) (*driver, error) {
	ds.mu.RLock()
	defer ds.mu.RUnlock()
	d, ok := ds.byName[name]
	if !ok {
		return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers", name)
	}
	return d, nil
}

// Names lists the registered drivers, sorted.
func (ds *Drivers) Names() []string {
	ds.mu.RLock()
	defer ds.mu.RUnlock()
	names := make([]string, 0, len(ds.byName))
	for n := range ds.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
