// Package credprovider runs the kubelet credential provider plugins that answer registry
// credentials for an image.
//
// The plugins come from --image-credential-provider-config and
// --image-credential-provider-bin-dir: for an image one of its providers' matchImages patterns
// matches, the plugin is executed with a CredentialProviderRequest on stdin and answers registry
// credentials, which are cached by its cacheKeyType for its cacheDuration (or the provider's
// defaultCacheDuration).
package credprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	"sigs.k8s.io/yaml"
)

// execTimeout bounds one plugin run, as upstream.
const execTimeout = time.Minute

// Credential is what a plugin answers for one registry key.
type Credential struct{ Username, Password string }

// Match reports whether a matchImages pattern covers an image (the image package's keyring
// rule: glob host labels, port, path prefix).
type Match func(pattern, image string) bool

// Providers are the configured plugins, in configuration order.
type Providers struct {
	plugins []*plugin
	match   Match
}

type plugin struct {
	cfg  kubeletconfigv1.CredentialProvider
	path string

	mu    sync.Mutex
	cache map[string]cached
	now   func() time.Time
}

type cached struct {
	auth    map[string]Credential
	expires time.Time
}

// Load reads the provider configuration and checks every plugin is an executable in binDir.
func Load(configPath, binDir string, match Match) (*Providers, error) {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return nil, fmt.Errorf("reading --image-credential-provider-config: %w", err)
	}
	var cfg kubeletconfigv1.CredentialProviderConfig
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return nil, fmt.Errorf("--image-credential-provider-config %s: %w", configPath, err)
	}
	if cfg.Kind != "CredentialProviderConfig" || cfg.APIVersion != kubeletconfigv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("--image-credential-provider-config %s: want kind CredentialProviderConfig of %s, got %q %q",
			configPath, kubeletconfigv1.SchemeGroupVersion, cfg.Kind, cfg.APIVersion)
	}
	p := &Providers{match: match}
	seen := map[string]bool{}
	for i, c := range cfg.Providers {
		field := fmt.Sprintf("providers[%d]", i)
		switch {
		case c.Name == "" || strings.ContainsAny(c.Name, `/\`) || c.Name == "." || c.Name == "..":
			return nil, fmt.Errorf("%s.name %q must be a plain file name in --image-credential-provider-bin-dir", field, c.Name)
		case seen[c.Name]:
			return nil, fmt.Errorf("%s.name %q appears twice", field, c.Name)
		case len(c.MatchImages) == 0:
			return nil, fmt.Errorf("%s.matchImages must not be empty", field)
		case c.DefaultCacheDuration == nil || c.DefaultCacheDuration.Duration < 0:
			return nil, fmt.Errorf("%s.defaultCacheDuration is required and must not be negative", field)
		case c.APIVersion != credentialproviderv1.SchemeGroupVersion.String():
			return nil, fmt.Errorf("%s.apiVersion %q is not supported by nodelet; use %s", field, c.APIVersion, credentialproviderv1.SchemeGroupVersion)
		case c.TokenAttributes != nil:
			return nil, fmt.Errorf("%s.tokenAttributes is not supported by nodelet (upstream needs an alpha feature gate)", field)
		}
		seen[c.Name] = true
		path := filepath.Join(binDir, c.Name)
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("%s: plugin %s is not an executable in --image-credential-provider-bin-dir", field, path)
		}
		p.plugins = append(p.plugins, &plugin{cfg: c, path: path, cache: map[string]cached{}, now: time.Now})
	}
	return p, nil
}

// Credentials asks every plugin that matches image, in order, and returns what they answer
// keyed as the plugins key it (registry, or registry/path). A failing plugin is logged and
// skipped: the pull goes on with other credentials, as upstream.
func (p *Providers) Credentials(ctx context.Context, image string) map[string]Credential {
	out := map[string]Credential{}
	for _, pl := range p.plugins {
		if !pl.matches(image, p.match) {
			continue
		}
		auth, err := pl.credentials(ctx, image)
		if err != nil {
			klog.ErrorS(err, "Credential provider plugin failed", "plugin", pl.cfg.Name, "image", image)
			continue
		}
		for k, v := range auth {
			if _, taken := out[k]; !taken {
				out[k] = v
			}
		}
	}
	return out
}

func (pl *plugin) matches(image string, match Match) bool {
	for _, pattern := range pl.cfg.MatchImages {
		if match(pattern, image) {
			return true
		}
	}
	return false
}

func (pl *plugin) credentials(ctx context.Context, image string) (map[string]Credential, error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, k := range []string{"image:" + image, "registry:" + registryOf(image), "global"} {
		if c, ok := pl.cache[k]; ok && pl.now().Before(c.expires) {
			return c.auth, nil
		}
	}
	resp, err := pl.exec(ctx, image)
	if err != nil {
		return nil, err
	}
	auth := map[string]Credential{}
	for k, a := range resp.Auth {
		auth[k] = Credential{Username: a.Username, Password: a.Password}
	}
	duration := pl.cfg.DefaultCacheDuration.Duration
	if resp.CacheDuration != nil {
		duration = resp.CacheDuration.Duration
	}
	if duration > 0 {
		key := map[credentialproviderv1.PluginCacheKeyType]string{
			credentialproviderv1.ImagePluginCacheKeyType:    "image:" + image,
			credentialproviderv1.RegistryPluginCacheKeyType: "registry:" + registryOf(image),
			credentialproviderv1.GlobalPluginCacheKeyType:   "global",
		}[resp.CacheKeyType]
		if key != "" {
			pl.cache[key] = cached{auth: auth, expires: pl.now().Add(duration)}
		}
	}
	return auth, nil
}

// exec runs the plugin once with the request on stdin.
func (pl *plugin) exec(ctx context.Context, image string) (*credentialproviderv1.CredentialProviderResponse, error) {
	req, err := json.Marshal(credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: credentialproviderv1.SchemeGroupVersion.String(), Kind: "CredentialProviderRequest"},
		Image:    image,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pl.path, pl.cfg.Args...)
	cmd.Env = os.Environ()
	for _, e := range pl.cfg.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("running %s: %w: %s", pl.path, err, strings.TrimSpace(stderr.String()))
	}
	var resp credentialproviderv1.CredentialProviderResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("%s answered no CredentialProviderResponse: %w", pl.path, err)
	}
	if resp.Kind != "CredentialProviderResponse" || resp.APIVersion != pl.cfg.APIVersion {
		return nil, fmt.Errorf("%s answered kind %q apiVersion %q, want CredentialProviderResponse %s", pl.path, resp.Kind, resp.APIVersion, pl.cfg.APIVersion)
	}
	return &resp, nil
}

// registryOf is the host part of an image reference (before the first /).
func registryOf(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}
