package volumes

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// volumeKey names one volume of one pod.
type volumeKey struct {
	uid  types.UID
	name string
}

// mountedVolume is one volume that is set up, or was found set up at start.
type mountedVolume struct {
	plugin Plugin
	dir    string
	mount  Mount
	// uncertain: found under the root dir at start, so SetUp runs once more (it changes
	// nothing that is in place) before a container gets it.
	uncertain bool
	// refreshWanted counts the pod syncs asking a Refresher's volume to be set up again;
	// refreshed is the count the last SetUp served.
	refreshWanted, refreshed int
	tearingDown              bool
	// expandedTo is the size the volume was last grown to on the node (Expander).
	expandedTo int64
}

// usable: set up, and not on its way out.
func (v *mountedVolume) usable() bool { return !v.uncertain && !v.tearingDown }

// actualState is what is set up, per pod and volume. Every change closes the channel
// changes() handed out, which wakes the waiters.
type actualState struct {
	mu      sync.Mutex
	pods    map[types.UID]map[string]*mountedVolume
	changed chan struct{}
}

func newActualState() *actualState {
	return &actualState{pods: map[types.UID]map[string]*mountedVolume{}, changed: make(chan struct{})}
}

// changes is closed at the next change.
func (a *actualState) changes() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

// update runs f on the pod's volumes under the lock and, when f reports a change, wakes the
// waiters.
func (a *actualState) update(uid types.UID, f func(vols map[string]*mountedVolume) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	vols := a.pods[uid]
	if vols == nil {
		vols = map[string]*mountedVolume{}
		a.pods[uid] = vols
	}
	changed := f(vols)
	if len(vols) == 0 {
		delete(a.pods, uid)
	}
	if changed {
		close(a.changed)
		a.changed = make(chan struct{})
	}
}

// markSetUp records a successful SetUp that served the refresh count served.
func (a *actualState) markSetUp(k volumeKey, plugin Plugin, dir string, m Mount, served int) {
	a.update(k.uid, func(vols map[string]*mountedVolume) bool {
		v := vols[k.name]
		if v == nil {
			v = &mountedVolume{}
			vols[k.name] = v
		}
		v.plugin, v.dir, v.mount, v.uncertain = plugin, dir, m, false
		v.refreshed = max(v.refreshed, served)
		return true
	})
}

// markUncertain records a volume found at start, unless one is known already.
func (a *actualState) markUncertain(k volumeKey, plugin Plugin, dir string) {
	a.update(k.uid, func(vols map[string]*mountedVolume) bool {
		if vols[k.name] != nil {
			return false
		}
		vols[k.name] = &mountedVolume{plugin: plugin, dir: dir, uncertain: true}
		return true
	})
}

// markRefreshWanted asks for the Refresher volumes of pod uid to be set up again. Nobody
// waits for that, so it wakes no one.
func (a *actualState) markRefreshWanted(uid types.UID) {
	a.update(uid, func(vols map[string]*mountedVolume) bool {
		for _, v := range vols {
			if refreshes(v.plugin) {
				v.refreshWanted++
			}
		}
		return false
	})
}

func (a *actualState) markTearingDown(k volumeKey, on bool) {
	a.update(k.uid, func(vols map[string]*mountedVolume) bool {
		v := vols[k.name]
		if v != nil {
			v.tearingDown = on
		}
		return v != nil
	})
}

func (a *actualState) markTornDown(k volumeKey) {
	a.update(k.uid, func(vols map[string]*mountedVolume) bool {
		delete(vols, k.name)
		return true
	})
}

// mount returns where a usable volume is.
func (a *actualState) mount(k volumeKey) (Mount, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := a.pods[k.uid][k.name]
	if v == nil || !v.usable() {
		return Mount{}, false
	}
	return v.mount, true
}

// volumes copies pod uid's volumes.
func (a *actualState) volumes(uid types.UID) map[string]mountedVolume {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]mountedVolume, len(a.pods[uid]))
	for name, v := range a.pods[uid] {
		out[name] = *v
	}
	return out
}

// all copies every volume.
func (a *actualState) all() map[volumeKey]mountedVolume {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[volumeKey]mountedVolume{}
	for uid, vols := range a.pods {
		for name, v := range vols {
			out[volumeKey{uid, name}] = *v
		}
	}
	return out
}
