package kubeclient

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventSink is a record.EventSink that writes core/v1 Events, each in its own namespace, the
// way client-go's typed EventSinkImpl does (without linking the whole typed core client).
type EventSink struct {
	client CoreV1Interface
}

// NewEventSink returns a sink that posts events through client (cluster mode: Clients.Events).
func NewEventSink(client Interface) *EventSink {
	return &EventSink{client: client.CoreV1()}
}

// Create posts a new event.
func (s *EventSink) Create(event *v1.Event) (*v1.Event, error) {
	return s.client.Events(event.Namespace).Create(context.Background(), event, metav1.CreateOptions{})
}

// Update replaces an existing event.
func (s *EventSink) Update(event *v1.Event) (*v1.Event, error) {
	return s.client.Events(event.Namespace).Update(context.Background(), event, metav1.UpdateOptions{})
}

// Patch applies a strategic merge patch (the recorder's count/lastTimestamp bump) to event.
func (s *EventSink) Patch(event *v1.Event, data []byte) (*v1.Event, error) {
	return s.client.Events(event.Namespace).Patch(context.Background(), event.Name,
		types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
