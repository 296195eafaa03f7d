package credprovider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// prefixMatch stands in for the image package's rule: host and path prefix.
func prefixMatch(pattern, image string) bool { return strings.HasPrefix(image, pattern) }

// writePlugin makes an executable that counts its runs, checks the request and answers for
// registry.example.com with cacheKeyType Registry.
func writePlugin(t *testing.T, dir string) (count func() int) {
	t.Helper()
	runs := filepath.Join(dir, "runs")
	script := `#!/bin/sh
req=$(cat)
echo x >> ` + runs + `
case "$req" in *'"kind":"CredentialProviderRequest"'*'"image":"registry.example.com/'*) ;; *) echo "bad request $req" >&2; exit 1;; esac
echo '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"1m","auth":{"registry.example.com":{"username":"'"$PLUGIN_USER"'","password":"'"$1"'"}}}'
`
	if err := os.WriteFile(filepath.Join(dir, "example-provider"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() int {
		raw, _ := os.ReadFile(runs)
		return strings.Count(string(raw), "x")
	}
}

func writeConfig(t *testing.T, dir, providers string) string {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"+providers), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const exampleProvider = `- name: example-provider
  matchImages: ["registry.example.com"]
  defaultCacheDuration: 10s
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["s3cret"]
  env: [{name: PLUGIN_USER, value: robot}]
`

func TestPluginCredentialsAreCachedByTheirKeyType(t *testing.T) {
	dir := t.TempDir()
	runs := writePlugin(t, dir)
	p, err := Load(writeConfig(t, dir, exampleProvider), dir, prefixMatch)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p.plugins[0].now = func() time.Time { return now }
	ctx := context.Background()
	got := p.Credentials(ctx, "registry.example.com/team/app:1")
	if c := got["registry.example.com"]; c.Username != "robot" || c.Password != "s3cret" {
		t.Fatalf("credentials %v, want the plugin's (args and env passed)", got)
	}
	_ = p.Credentials(ctx, "registry.example.com/other:2") // same registry: from the cache
	if n := runs(); n != 1 {
		t.Errorf("%d runs, want 1 (cacheKeyType Registry)", n)
	}
	if got := p.Credentials(ctx, "other.example.com/app:1"); len(got) != 0 || runs() != 1 {
		t.Errorf("an image no pattern matches: %v after %d runs", got, runs())
	}
	now = now.Add(time.Minute) // the response's cacheDuration
	_ = p.Credentials(ctx, "registry.example.com/team/app:1")
	if n := runs(); n != 2 {
		t.Errorf("%d runs, want another after the cache expired", n)
	}
}

func TestLoadRefusesWhatItCannotRun(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir)
	for name, providers := range map[string]string{
		"not an executable": strings.Replace(exampleProvider, "example-provider", "missing", 1),
		"apiVersion":        strings.Replace(exampleProvider, "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", 1),
		"matchImages":       strings.Replace(exampleProvider, `matchImages: ["registry.example.com"]`, "matchImages: []", 1),
		"tokenAttributes":   exampleProvider + "  tokenAttributes: {serviceAccountTokenAudience: x, requireServiceAccount: true}\n",
	} {
		if _, err := Load(writeConfig(t, dir, providers), dir, prefixMatch); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}
