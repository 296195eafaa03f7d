// Package kubehash computes the identities the upstream kubelet derives from a pod, exactly as
// it derives them, so that nodelet and the upstream kubelet recognise each other's containers
// and static pods on a node handed over from one to the other: the container hash written in
// the io.kubernetes.container.hash annotation, and the UID of a static pod.
//
// Both are hashes of spew's printed form of a value (k8s.io/apimachinery/pkg/util/dump.ForHash),
// so they depend on Go type names and field order: the static pod UID prints the pod as the
// API server's internal type (package core here mirrors it), and the golden tests pin both to
// what upstream's own code computes (test/harness/cmd/handovergolden).
package kubehash

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
)

// ContainerHash is the upstream kubelet's hash of a container: only its name and image, so
// that no other change of the spec (resources resized in place, a new API field) restarts it.
// The fnv32a runs over the printed form of the JSON of those two fields.
func ContainerHash(c *v1.Container) uint64 {
	data, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image}) // strings always marshal
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(data))
	return uint64(h.Sum32())
}

// FormatHash spells a container hash as the annotation carries it (hexadecimal).
func FormatHash(hash uint64) string { return strconv.FormatUint(hash, 16) }

// StaticPodUID is the UID the upstream kubelet gives a pod read from a manifest without one:
// an md5 over the pod as decoded (with the API defaults applied, before the kubelet renames
// it for the node), then the node and the file path, or the URL for a pod read over HTTP.
func StaticPodUID(pod *v1.Pod, nodeName, location string, fromFile bool) (types.UID, error) {
	internal, err := toInternal(pod)
	if err != nil {
		return "", err
	}
	h := md5.New()
	fmt.Fprintf(h, "%v", dump.ForHash(internal))
	if fromFile {
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", location)
	} else {
		fmt.Fprintf(h, "url:%s", location)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil))), nil
}

// HashedText is the text StaticPodUID hashes before the source, for telling why a UID differs.
func HashedText(pod *v1.Pod) (string, error) {
	internal, err := toInternal(pod)
	if err != nil {
		return "", err
	}
	return dump.ForHash(internal), nil
}
