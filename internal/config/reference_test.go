package config

import (
	"bytes"
	"os"
	"testing"
)

// The committed reference page is what the flag and field lists say today.
func TestFlagsAndConfigDocIsCurrent(t *testing.T) {
	var want bytes.Buffer
	if err := WriteReference(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/flags-and-config.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("docs/flags-and-config.md is stale: run `go run ./hack/gendocs` from the repository root and commit the result")
	}
}

// Each flag bound to a field shows that field, found through the flag's override.
func TestReferenceNamesEachFlagsField(t *testing.T) {
	flagsOf := fieldFlags()
	for path, flag := range map[string]string{
		"staticPodPath": "pod-manifest-path", "authentication.webhook.enabled": "authentication-token-webhook",
		"evictionHard": "eviction-hard", "registerWithTaints": "register-with-taints", "serverTLSBootstrap": "rotate-server-certificates",
	} {
		if got := flagsOf[path]; len(got) != 1 || got[0] != flag {
			t.Errorf("field %s: flags %v, want [%s]", path, got, flag)
		}
	}
}
