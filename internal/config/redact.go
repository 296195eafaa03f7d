package config

import (
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// RedactionMarker replaces each credential value wherever the configuration is shown; it is
// the upstream kubelet's marker for the same field in its logs.
const RedactionMarker = "<masked>"

// Redacted is a copy of kc safe to show (/configz, logs): the values of staticPodURLHeader,
// the only credential-bearing field of the v1beta1 KubeletConfiguration (the headers sent
// to --manifest-url, typically Authorization), are replaced by RedactionMarker; the header
// names stay so the shape of the configuration can still be checked. kc is not modified.
func Redacted(kc *kubeletconfigv1beta1.KubeletConfiguration) *kubeletconfigv1beta1.KubeletConfiguration {
	if kc == nil {
		return nil
	}
	out := kc.DeepCopy()
	for name, values := range out.StaticPodURLHeader {
		masked := make([]string, len(values))
		for i := range masked {
			masked[i] = RedactionMarker
		}
		out.StaticPodURLHeader[name] = masked
	}
	return out
}
