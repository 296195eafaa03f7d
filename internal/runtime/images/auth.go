package images

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// dockerAuth is one entry of a docker config file.
type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// keyring holds credentials under the keys docker config files file them under
// ("registry.example.com", "*.example.com/team", "https://index.docker.io/v1/").
type keyring map[string][]dockerAuth

func (k keyring) add(auths map[string]dockerAuth) {
	for server, a := range auths {
		k[server] = append(k[server], a)
	}
}

// lookup returns the credentials whose key matches image, the most specific key first (keys in
// reverse order, as upstream's keyring sorts them), and whether there were any.
func (k keyring) lookup(image string) []*cri.AuthConfig {
	target := imageLocation(image)
	keys := make([]string, 0, len(k))
	for key := range k {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	var out []*cri.AuthConfig
	for _, key := range keys {
		if !keyLocation(key).matches(target) {
			continue
		}
		for _, a := range k[key] {
			user, pass := a.Username, a.Password
			if user == "" && a.Auth != "" {
				if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
					user, pass, _ = strings.Cut(string(raw), ":")
				}
			}
			out = append(out, &cri.AuthConfig{
				Username: user, Password: pass, // no ServerAddress, as upstream: containerd parses it as a URL
				IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
			})
		}
	}
	return out
}

// credentialsFor returns the credentials for image: the pod's pull secrets first, then the
// node's (its docker config and credential providers), as upstream unions its keyrings.
func credentialsFor(image string, pullSecrets []v1.Secret, node keyring) []*cri.AuthConfig {
	pod := keyring{}
	for _, s := range pullSecrets {
		pod.add(dockerAuths(s))
	}
	return append(pod.lookup(image), node.lookup(image)...)
}

// dockerAuths reads a kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg secret.
func dockerAuths(s v1.Secret) map[string]dockerAuth {
	if data, ok := s.Data[v1.DockerConfigJsonKey]; ok {
		return parseDockerConfig(data, true)
	}
	if data, ok := s.Data[v1.DockerConfigKey]; ok {
		return parseDockerConfig(data, false)
	}
	return nil
}

// parseDockerConfig reads config.json ({"auths": {...}}) or the older .dockercfg ({...}).
func parseDockerConfig(data []byte, wrapped bool) map[string]dockerAuth {
	if wrapped {
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if json.Unmarshal(data, &cfg) != nil {
			return nil
		}
		return cfg.Auths
	}
	var auths map[string]dockerAuth
	if json.Unmarshal(data, &auths) != nil {
		return nil
	}
	return auths
}

// location is where a key or an image points: host (labels may be globs in a key), port
// and path.
type location struct {
	host, port, path string
}

// keyLocation parses a docker config key: scheme dropped, Docker Hub's many names folded
// into docker.io.
func keyLocation(key string) location {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	hostPort, path, _ := strings.Cut(key, "/")
	if hub(hostPort) {
		hostPort, path = "docker.io", strings.TrimPrefix(path, "v1/")
	}
	return splitHostPort(hostPort, strings.TrimSuffix(path, "/"))
}

// imageLocation is the registry and repository path of an image reference (tag and digest
// dropped; Docker Hub's bare names under library/).
func imageLocation(image string) location {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		image = image[:i]
	}
	first, rest, found := strings.Cut(image, "/")
	if !found || !(strings.ContainsAny(first, ".:") || first == "localhost") {
		if !found {
			image = "library/" + image
		}
		return location{host: "docker.io", path: image}
	}
	if hub(first) {
		first = "docker.io"
	}
	return splitHostPort(first, rest)
}

func hub(host string) bool {
	return host == "docker.io" || host == "index.docker.io" || host == "registry-1.docker.io"
}

func splitHostPort(hostPort, path string) location {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host, port = hostPort, ""
	}
	return location{host: host, port: port, path: path}
}

// matches is upstream's rule: as many host labels, each matching the key's (which may be a
// glob such as *), the same port, and the key's path a prefix of the image's.
func (key location) matches(image location) bool {
	keyLabels, imageLabels := strings.Split(key.host, "."), strings.Split(image.host, ".")
	if len(keyLabels) != len(imageLabels) || key.port != image.port {
		return false
	}
	for i := range keyLabels {
		if ok, err := filepath.Match(keyLabels[i], imageLabels[i]); err != nil || !ok {
			return false
		}
	}
	return strings.HasPrefix(image.path, key.path)
}

// MatchImage reports whether a credential key or a credential provider's matchImages pattern
// covers image, by the rule above.
func MatchImage(pattern, image string) bool {
	return keyLocation(pattern).matches(imageLocation(image))
}
