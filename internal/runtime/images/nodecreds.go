package images

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// nodeConfigLifetime is how long a read of the node's docker config is used before the files
// are read again, so changed credentials apply without a restart.
const nodeConfigLifetime = 5 * time.Minute

// nodeConfig is the node's own docker config, found where upstream looks: config.json in the
// kubelet root dir, the working dir, $HOME/.docker or /.docker, else the older .dockercfg in
// the root dir, the working dir, $HOME or /. The first file found wins.
type nodeConfig struct {
	rootDir string
	now     func() time.Time

	mu   sync.Mutex
	keys keyring
	read time.Time
}

func (n *nodeConfig) keyring() keyring {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.keys != nil && n.now().Sub(n.read) < nodeConfigLifetime {
		return n.keys
	}
	n.keys, n.read = n.load(), n.now()
	return n.keys
}

func (n *nodeConfig) load() keyring {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	keys := keyring{}
	for _, dir := range []string{n.rootDir, cwd, filepath.Join(home, ".docker"), "/.docker"} {
		if data, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil && dir != "" {
			keys.add(parseDockerConfig(data, true))
			return keys
		}
	}
	for _, dir := range []string{n.rootDir, cwd, home, "/"} {
		if data, err := os.ReadFile(filepath.Join(dir, ".dockercfg")); err == nil && dir != "" {
			keys.add(parseDockerConfig(data, false))
			return keys
		}
	}
	return keys
}
