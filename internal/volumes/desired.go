package volumes

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// desiredVolume is one volume a pod wants set up, and the plugin that does it.
type desiredVolume struct {
	spec   *Spec
	plugin Plugin
}

// desiredPod is what one pod wants. It is never changed once stored: a newer version of the
// pod replaces it whole, so readers need no lock.
type desiredPod struct {
	pod     *v1.Pod
	volumes map[string]desiredVolume
	// failed holds the expected volumes that could not be resolved, with why.
	failed map[string]error
}

// desiredState holds the pods whose containers may run here and what their volumes are. The
// pod sync adds a pod before it creates containers; it leaves once its containers are gone.
type desiredState struct {
	mu   sync.Mutex
	pods map[types.UID]*desiredPod
}

func newDesiredState() *desiredState {
	return &desiredState{pods: map[types.UID]*desiredPod{}}
}

func (d *desiredState) set(p *desiredPod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pods[p.pod.UID] = p
}

func (d *desiredState) remove(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pods, uid)
}

func (d *desiredState) get(uid types.UID) (*desiredPod, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.pods[uid]
	return p, ok
}

// wants reports whether pod uid is desired and wants its volume name set up.
func (d *desiredState) wants(uid types.UID, name string) bool {
	p, ok := d.get(uid)
	if !ok {
		return false
	}
	_, ok = p.volumes[name]
	return ok
}

func (d *desiredState) list() []*desiredPod {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*desiredPod, 0, len(d.pods))
	for _, p := range d.pods {
		out = append(out, p)
	}
	return out
}
