package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
)

// The checkpoint is upstream's file, <root-dir>/dra_manager_state, so that nodelet takes over
// the prepared claims of an upstream kubelet (and the other way round): a JSON object with the
// data as a string and the CRC32 (IEEE) of that string; the data is a typed object listing the
// claims. The Go field names below are the JSON keys (upstream's structs have no JSON tags).
const (
	stateFileName        = "dra_manager_state"
	checkpointKind       = "DRACheckpoint"
	checkpointAPIVersion = "checkpoint.dra.kubelet.k8s.io/v1"
)

// claimState is one claim the node prepared (or is preparing) and the pods that use it.
type claimState struct {
	ClaimUID  types.UID
	ClaimName string
	Namespace string
	// PodUIDs is a JSON object whose keys are the pods' UIDs (values are empty objects).
	PodUIDs sets.Set[string]
	// DriverState has an entry for each driver the claim's allocation names, with the devices
	// the driver prepared (none yet while the claim is not prepared).
	DriverState map[string]driverState
}

type driverState struct {
	Devices []device
}

// device is one prepared device: its pool and name, the claim's requests it serves, and the
// CDI IDs the driver wants it injected with.
type device struct {
	PoolName     string
	DeviceName   string
	RequestNames []string
	CDIDeviceIDs []string
}

type checkpointFile struct {
	Data     string
	Checksum uint32
}

type checkpointData struct {
	metav1.TypeMeta
	ClaimInfoStateList []claimState
}

// readCheckpoint returns the claims in dir's checkpoint; none when there is no file. A file
// that does not parse or whose checksum is wrong is an error: its claims may be prepared, so
// nodelet must not start as if they were not (upstream refuses to start too).
func readCheckpoint(dir string) ([]claimState, error) {
	path := filepath.Join(dir, stateFileName)
	blob, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f checkpointFile
	if err := json.Unmarshal(blob, &f); err != nil {
		return nil, fmt.Errorf("%s: %w (drain the node and remove the file)", path, err)
	}
	if sum := crc32.ChecksumIEEE([]byte(f.Data)); sum != f.Checksum {
		return nil, fmt.Errorf("%s: checkpoint is corrupted: checksum %d, the data's is %d (drain the node and remove the file)", path, f.Checksum, sum)
	}
	var data checkpointData
	if err := json.Unmarshal([]byte(f.Data), &data); err != nil {
		return nil, fmt.Errorf("%s: %w (drain the node and remove the file)", path, err)
	}
	return data.ClaimInfoStateList, nil
}

// writeCheckpoint replaces dir's checkpoint with claims, atomically.
func writeCheckpoint(dir string, claims []claimState) error {
	if claims == nil {
		claims = []claimState{} // upstream writes [] for no claims
	}
	data, err := json.Marshal(checkpointData{
		TypeMeta:           metav1.TypeMeta{Kind: checkpointKind, APIVersion: checkpointAPIVersion},
		ClaimInfoStateList: claims,
	})
	if err != nil {
		return err
	}
	blob, err := json.Marshal(checkpointFile{Data: string(data), Checksum: crc32.ChecksumIEEE(data)})
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, stateFileName), blob, 0o644)
}
