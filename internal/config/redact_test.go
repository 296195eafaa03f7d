package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestRedactedMasksStaticPodURLHeaderValues(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{
		StaticPodURL: "https://manifests.example/pods",
		StaticPodURLHeader: map[string][]string{
			"Authorization": {"Bearer s3cr3t-token"},
			"X-Api-Key":     {"key-one", "key-two"},
			"X-Empty":       {},
		},
		MaxPods: 42,
	}
	got := Redacted(kc)
	want := map[string][]string{
		"Authorization": {RedactionMarker},
		"X-Api-Key":     {RedactionMarker, RedactionMarker},
		"X-Empty":       {},
	}
	if !reflect.DeepEqual(got.StaticPodURLHeader, want) {
		t.Fatalf("redacted headers = %v, want %v", got.StaticPodURLHeader, want)
	}
	if got.MaxPods != 42 || got.StaticPodURL != kc.StaticPodURL {
		t.Fatalf("other fields changed: maxPods %d, staticPodURL %q", got.MaxPods, got.StaticPodURL)
	}
	body, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cr3t-token", "key-one", "key-two"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("redacted configuration still shows %q: %s", secret, body)
		}
	}
	// The caller's configuration keeps its credentials: nodelet still sends them.
	if kc.StaticPodURLHeader["Authorization"][0] != "Bearer s3cr3t-token" || kc.StaticPodURLHeader["X-Api-Key"][1] != "key-two" {
		t.Fatalf("Redacted modified its input: %v", kc.StaticPodURLHeader)
	}
}

func TestRedactedNil(t *testing.T) {
	if Redacted(nil) != nil {
		t.Fatal("Redacted(nil) != nil")
	}
	if got := Redacted(&kubeletconfigv1beta1.KubeletConfiguration{}); got.StaticPodURLHeader != nil {
		t.Fatalf("no headers became %v", got.StaticPodURLHeader)
	}
}

func TestRedactedMasksStaticPodURLCredentials(t *testing.T) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{
		StaticPodURL: "https://user:s3cr3t@manifests.example:8443/pods.yaml?X-Amz-Signature=sig-value&X-Amz-Expires=300",
	}
	got := Redacted(kc).StaticPodURL
	want := "https://<masked>@manifests.example:8443/pods.yaml?X-Amz-Expires=<masked>&X-Amz-Signature=<masked>"
	if got != want {
		t.Errorf("redacted staticPodURL = %q, want %q", got, want)
	}
	if !strings.Contains(kc.StaticPodURL, "s3cr3t") {
		t.Errorf("Redacted modified its input: %q", kc.StaticPodURL)
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"":                                 "",
		"http://example.com/pods":          "http://example.com/pods",
		"http://token@example.com/p#frag":  "http://<masked>@example.com/p",
		"http://example.com/p?a=1&a=2&b=3": "http://example.com/p?a=<masked>&a=<masked>&b=<masked>",
		"http://example.com/p?%zz":         "http://example.com/p?<masked>",
		"http://[::1/p":                    "<masked>",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
