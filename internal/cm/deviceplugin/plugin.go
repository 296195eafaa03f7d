package deviceplugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// plugin is the client side of one registered device plugin.
type plugin struct {
	resource string
	socket   string
	timeout  time.Duration
	conn     *grpc.ClientConn
	client   pluginapi.DevicePluginClient
	options  *pluginapi.DevicePluginOptions

	closeOnce sync.Once
	cancel    context.CancelFunc // ends the ListAndWatch stream; set by install
}

// connect dials the plugin's socket and reads its options. The error text for a failed options
// call is what plugins (and the node e2e suite) look for.
func connect(ctx context.Context, resourceName, socket string, timeout time.Duration) (*plugin, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to device plugin at %s: %w", socket, err)
	}
	p := &plugin{resource: resourceName, socket: socket, timeout: timeout, conn: conn, client: pluginapi.NewDevicePluginClient(conn)}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A plugin registers right after it starts serving; give the connection time to come up.
	opts, err := p.client.GetDevicePluginOptions(cctx, &pluginapi.Empty{}, grpc.WaitForReady(true))
	if err != nil {
		p.close()
		return nil, fmt.Errorf("failed to get device plugin options: %w", err)
	}
	p.options = opts
	return p, nil
}

// close ends the stream and the connection; safe to call more than once.
func (p *plugin) close() {
	p.closeOnce.Do(func() {
		if p.cancel != nil {
			p.cancel()
		}
		if err := p.conn.Close(); err != nil {
			klog.V(4).InfoS("Closing device plugin connection", "resource", p.resource, "err", err)
		}
	})
}

// listAndWatch reads the plugin's device lists until the stream or ctx ends. It carries no
// deadline: the stream lives as long as the plugin.
func (p *plugin) listAndWatch(ctx context.Context, update func([]*pluginapi.Device)) error {
	stream, err := p.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		return fmt.Errorf("opening ListAndWatch: %w", err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("ListAndWatch: %w", err)
		}
		update(resp.Devices)
	}
}

// allocate asks the plugin to prepare devices for one container.
func (p *plugin) allocate(ctx context.Context, ids []string) (*pluginapi.ContainerAllocateResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	resp, err := p.client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIDs: ids}},
	})
	if err != nil {
		return nil, fmt.Errorf("device plugin for %s: Allocate %v: %w", p.resource, ids, err)
	}
	if len(resp.ContainerResponses) != 1 || resp.ContainerResponses[0] == nil {
		return nil, fmt.Errorf("device plugin for %s: Allocate returned %d container responses, want 1", p.resource, len(resp.ContainerResponses))
	}
	return resp.ContainerResponses[0], nil
}

// preStart runs PreStartContainer when the plugin asked for it in its options.
func (p *plugin) preStart(ctx context.Context, ids []string) error {
	if p.options == nil || !p.options.PreStartRequired {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, preStartTimeout)
	defer cancel()
	if _, err := p.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIDs: ids}); err != nil {
		return fmt.Errorf("device plugin for %s: PreStartContainer %v: %w", p.resource, ids, err)
	}
	return nil
}

// preferredAllocation asks the plugin which size devices it would rather give a container,
// out of available and including mustInclude. Only called when its options offer it.
func (p *plugin) preferredAllocation(ctx context.Context, available, mustInclude []string, size int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	resp, err := p.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: available, MustIncludeDeviceIDs: mustInclude, AllocationSize: int32(size),
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("device plugin GetPreferredAllocation rpc failed with err: %w", err)
	}
	if len(resp.ContainerResponses) == 0 || resp.ContainerResponses[0] == nil {
		return nil, nil
	}
	return resp.ContainerResponses[0].DeviceIDs, nil
}
