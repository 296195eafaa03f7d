package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// csiDriverTTL is how long a CSIDriver object read is reused.
const csiDriverTTL = 10 * time.Second

type cachedCSIDriver struct {
	obj *storagev1.CSIDriver // nil: there is none
	at  time.Time
}

// cachedCSIDriver returns the driver's CSIDriver (nil when there is none, or standalone),
// read at most csiDriverTTL ago.
func (p *Plugin) cachedCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	if p.api == nil {
		return nil, nil
	}
	p.csiDriversMu.Lock()
	c, ok := p.csiDrivers[name]
	p.csiDriversMu.Unlock()
	if ok && time.Since(c.at) < csiDriverTTL {
		return c.obj, nil
	}
	obj, err := p.api.CSIDriver(ctx, name)
	if err != nil {
		return nil, err
	}
	p.csiDriversMu.Lock()
	p.csiDrivers[name] = cachedCSIDriver{obj: obj, at: time.Now()}
	p.csiDriversMu.Unlock()
	return obj, nil
}

// requiresRepublish: the driver's CSIDriver asks for its volumes to be published again at
// every pod sync (to refresh what they carry, such as tokens).
func (p *Plugin) requiresRepublish(ctx context.Context, driver string) bool {
	drv, err := p.cachedCSIDriver(ctx, driver)
	return err == nil && drv != nil && ptr.Deref(drv.Spec.RequiresRepublish, false)
}

// tokensKey carries the pod's service account tokens to the driver, as upstream passes them.
const tokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

// addTokens puts the tokens the CSIDriver's tokenRequests ask for into the volume context:
// a JSON object of audience → {token, expirationTimestamp}.
func (p *Plugin) addTokens(ctx context.Context, pod *v1.Pod, drv *storagev1.CSIDriver, volumeContext map[string]string) error {
	if drv == nil || len(drv.Spec.TokenRequests) == 0 {
		return nil
	}
	out := map[string]authnv1.TokenRequestStatus{}
	for _, tr := range drv.Spec.TokenRequests {
		status, err := p.tokens.Get(ctx, pod, tr.Audience, tr.ExpirationSeconds)
		if err != nil {
			return fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get service account token attributes: %w", err)
		}
		out[tr.Audience] = status
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	volumeContext[tokensKey] = string(b)
	return nil
}
