package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
)

// podResources are the resources of one pod's resizable containers, by container name. The
// field name is the JSON key upstream's checkpoint uses.
type podResources struct {
	ContainerResources map[string]v1.ResourceRequirements
}

// entries are what one checkpoint file holds, by pod UID.
type entries map[types.UID]podResources

// checkpointFile is the file's layout, as the upstream kubelet writes it: the entries as a
// JSON string, and a checksum of that string, so that either kubelet reads the other's file.
type checkpointFile struct {
	Data     string `json:"data"`
	Checksum uint64 `json:"checksum"`
}

type checkpointData struct {
	Entries entries `json:"entries,omitempty"`
}

// checksum is upstream's: FNV-32a over the hash dump of the data string.
func checksum(data string) uint64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(data))
	return uint64(h.Sum32())
}

// readCheckpoint loads path; a missing file is an empty one.
func readCheckpoint(path string) (entries, error) {
	blob, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return entries{}, nil
	}
	if err != nil {
		return nil, err
	}
	var cp checkpointFile
	if err := json.Unmarshal(blob, &cp); err != nil {
		return nil, corrupt(path, err)
	}
	if sum := checksum(cp.Data); sum != cp.Checksum {
		return nil, corrupt(path, fmt.Errorf("checksum %d, want %d", sum, cp.Checksum))
	}
	var data checkpointData
	if err := json.Unmarshal([]byte(cp.Data), &data); err != nil {
		return nil, corrupt(path, err)
	}
	if data.Entries == nil {
		data.Entries = entries{}
	}
	return data.Entries, nil
}

func corrupt(path string, err error) error {
	return fmt.Errorf("pod resource checkpoint %s is corrupt (%v): drain this node and delete the file before restarting nodelet", path, err)
}

// writeCheckpoint replaces path with e.
func writeCheckpoint(path string, e entries) error {
	data, err := json.Marshal(checkpointData{Entries: e})
	if err != nil {
		return fmt.Errorf("encode pod resource checkpoint: %w", err)
	}
	blob, err := json.Marshal(checkpointFile{Data: string(data), Checksum: checksum(string(data))})
	if err != nil {
		return fmt.Errorf("encode pod resource checkpoint: %w", err)
	}
	return atomicfile.WriteFile(path, blob, 0o600)
}
