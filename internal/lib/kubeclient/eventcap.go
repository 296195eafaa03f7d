package kubeclient

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// MaxEventMessage is the longest event message nodelet records, in bytes. Messages quote what
// pods print and answer (probe output, hook errors, runtime errors), and every message is held
// in the recorder's queue, its correlation caches, the node page's list and the logs, and posted
// to the API server, which bounds a core/v1 Event only by the size of the object it stores.
// 16 KiB keeps whole every message the kubelet would post (a probe failure carries at most
// 10 KiB of output) and cuts the rest.
const MaxEventMessage = 16 << 10

// CapMessages returns a recorder that cuts every message at MaxEventMessage bytes before r
// records it.
func CapMessages(r record.EventRecorder) record.EventRecorder {
	return capped{r}
}

type capped struct{ r record.EventRecorder }

func (c capped) Event(obj runtime.Object, eventtype, reason, message string) {
	c.r.Event(obj, eventtype, reason, CapMessage(message))
}

func (c capped) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	c.r.Event(obj, eventtype, reason, CapMessage(fmt.Sprintf(messageFmt, args...)))
}

func (c capped) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	c.r.AnnotatedEventf(obj, annotations, eventtype, reason, "%s", CapMessage(fmt.Sprintf(messageFmt, args...)))
}

// CapMessage cuts msg at MaxEventMessage bytes, at the start of a UTF-8 sequence.
func CapMessage(msg string) string {
	if len(msg) <= MaxEventMessage {
		return msg
	}
	n := MaxEventMessage
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n]
}
