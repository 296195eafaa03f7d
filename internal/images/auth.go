package images

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dockerAuth is one entry of a docker config file.
type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// credentialsFor returns the pull credentials in pullSecrets whose registry matches image, in
// secret order.
func credentialsFor(image string, pullSecrets []v1.Secret) []*runtimeapi.AuthConfig {
	registry := imageRegistry(image)
	var out []*runtimeapi.AuthConfig
	for _, s := range pullSecrets {
		for server, a := range dockerAuths(s) {
			if registryHost(server) != registry {
				continue
			}
			user, pass := a.Username, a.Password
			if user == "" && a.Auth != "" {
				if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
					user, pass, _ = strings.Cut(string(raw), ":")
				}
			}
			out = append(out, &runtimeapi.AuthConfig{
				Username: user, Password: pass, ServerAddress: server,
				IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
			})
		}
	}
	return out
}

// dockerAuths reads a kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg secret.
func dockerAuths(s v1.Secret) map[string]dockerAuth {
	if data, ok := s.Data[v1.DockerConfigJsonKey]; ok {
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if json.Unmarshal(data, &cfg) == nil {
			return cfg.Auths
		}
	}
	if data, ok := s.Data[v1.DockerConfigKey]; ok {
		var auths map[string]dockerAuth
		if json.Unmarshal(data, &auths) == nil {
			return auths
		}
	}
	return nil
}

// imageRegistry is the registry host of an image reference; Docker Hub for bare names.
func imageRegistry(image string) string {
	first, _, found := strings.Cut(image, "/")
	if !found || !(strings.ContainsAny(first, ".:") || first == "localhost") {
		return "docker.io"
	}
	return first
}

// registryHost strips scheme and path from a docker config server key.
func registryHost(server string) string {
	server = strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	host, _, _ := strings.Cut(server, "/")
	if host == "index.docker.io" || host == "registry-1.docker.io" {
		return "docker.io"
	}
	return host
}
