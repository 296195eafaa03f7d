package kubeclient

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventSink is a record.EventSink that writes core/v1 Events, each in its own namespace, the
// way client-go's typed EventSinkImpl does (without linking the whole typed core client).
type EventSink struct {
	client CoreV1Interface
	ctx    context.Context
	ready  <-chan struct{}
}

// NewEventSink returns a sink that posts events through client (cluster mode: Clients.Events)
// for as long as nodelet runs (ctx). With ready, its writes first wait until ready is closed
// (the node has a client certificate: TLS bootstrap runs in the background) or ctx ends.
// Recording never blocks meanwhile: the broadcaster queues events for the sink and drops them
// when its queue is full, so the events of a start before the API is up reach it once it is.
func NewEventSink(ctx context.Context, client Interface, ready <-chan struct{}) *EventSink {
	return &EventSink{client: client.CoreV1(), ctx: ctx, ready: ready}
}

// errStopped is a transport-like error: the recorder retries it, then gives the event up.
var errStopped = errors.New("nodelet is stopping before it had an API identity")

// writeContext is a write's: ready, it outlives ctx, so that the events queued when nodelet
// stops still go out as the broadcaster's Shutdown flushes them (the client's timeout bounds
// each write).
func (s *EventSink) writeContext() (context.Context, error) {
	if s.ready != nil {
		select {
		case <-s.ready:
		case <-s.ctx.Done():
			return nil, errStopped
		}
	}
	return context.WithoutCancel(s.ctx), nil
}

// Create posts a new event.
func (s *EventSink) Create(event *v1.Event) (*v1.Event, error) {
	ctx, err := s.writeContext()
	if err != nil {
		return nil, err
	}
	return s.client.Events(event.Namespace).Create(ctx, event, metav1.CreateOptions{})
}

// Update replaces an existing event.
func (s *EventSink) Update(event *v1.Event) (*v1.Event, error) {
	ctx, err := s.writeContext()
	if err != nil {
		return nil, err
	}
	return s.client.Events(event.Namespace).Update(ctx, event, metav1.UpdateOptions{})
}

// Patch applies a strategic merge patch (the recorder's count/lastTimestamp bump) to event.
func (s *EventSink) Patch(event *v1.Event, data []byte) (*v1.Event, error) {
	ctx, err := s.writeContext()
	if err != nil {
		return nil, err
	}
	return s.client.Events(event.Namespace).Patch(ctx, event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
