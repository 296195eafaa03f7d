package config

import (
	"net/url"
	"sort"
	"strings"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// RedactionMarker replaces each credential value wherever the configuration is shown; it is
// the upstream kubelet's marker for the same field in its logs.
const RedactionMarker = "<masked>"

// Redacted is a copy of kc safe to show (/configz, logs). The v1beta1 KubeletConfiguration
// carries credentials in two fields, both about --manifest-url: the values of
// staticPodURLHeader (typically Authorization) and staticPodURL's userinfo and query values
// (a signed URL's signature). Each is replaced by RedactionMarker; the header names, the
// URL's scheme, host, path and query keys stay so the configuration can still be checked.
// Upstream shows staticPodURL whole in /configz; nodelet does not, as it does not show the
// header. kc is not modified.
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
	out.StaticPodURL = RedactURL(out.StaticPodURL)
	return out
}

// RedactURL is raw with its userinfo and each query value replaced by RedactionMarker, and
// its fragment dropped. Something that does not parse as a URL is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return RedactionMarker
	}
	if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
		return raw
	}
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme + "://")
	}
	if u.User != nil {
		b.WriteString(RedactionMarker + "@")
	}
	b.WriteString(u.Host + u.EscapedPath())
	if u.RawQuery != "" {
		b.WriteString("?" + redactQuery(u.RawQuery))
	}
	return b.String()
}

// redactQuery keeps a query's keys (sorted) and masks their values.
func redactQuery(raw string) string {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return RedactionMarker
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		for range q[k] {
			parts = append(parts, url.QueryEscape(k)+"="+RedactionMarker)
		}
	}
	return strings.Join(parts, "&")
}
