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
	client      CoreV1Interface
	ready, done <-chan struct{}
}

// NewEventSink returns a sink that posts events through client (cluster mode: Clients.Events).
func NewEventSink(client Interface) *EventSink {
	return &EventSink{client: client.CoreV1()}
}

// NewEventSinkAfter is NewEventSink whose writes first wait until ready is closed (the node
// has a client certificate: TLS bootstrap runs in the background) or done is. Recording never
// blocks meanwhile: the broadcaster queues events for the sink and drops them when its queue
// is full, so the events of a start before the API is up reach it once it is.
func NewEventSinkAfter(client Interface, ready, done <-chan struct{}) *EventSink {
	return &EventSink{client: client.CoreV1(), ready: ready, done: done}
}

// errStopped is a transport-like error: the recorder retries it, then gives the event up.
var errStopped = errors.New("nodelet is stopping before it had an API identity")

func (s *EventSink) wait() error {
	if s.ready == nil {
		return nil
	}
	select {
	case <-s.ready:
		return nil
	case <-s.done:
		return errStopped
	}
}

// Create posts a new event.
func (s *EventSink) Create(event *v1.Event) (*v1.Event, error) {
	if err := s.wait(); err != nil {
		return nil, err
	}
	return s.client.Events(event.Namespace).Create(context.Background(), event, metav1.CreateOptions{})
}

// Update replaces an existing event.
func (s *EventSink) Update(event *v1.Event) (*v1.Event, error) {
	if err := s.wait(); err != nil {
		return nil, err
	}
	return s.client.Events(event.Namespace).Update(context.Background(), event, metav1.UpdateOptions{})
}

// Patch applies a strategic merge patch (the recorder's count/lastTimestamp bump) to event.
func (s *EventSink) Patch(event *v1.Event, data []byte) (*v1.Event, error) {
	if err := s.wait(); err != nil {
		return nil, err
	}
	return s.client.Events(event.Namespace).Patch(context.Background(), event.Name,
		types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
