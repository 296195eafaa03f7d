package topology

import (
	"math/bits"
	"strconv"
	"strings"
)

// Mask is a set of NUMA node IDs (0 to 63), as upstream's topology manager bitmask.
type Mask uint64

// MaskOf returns the mask holding ids.
func MaskOf(ids ...int) Mask {
	var m Mask
	for _, id := range ids {
		m |= 1 << uint(id)
	}
	return m
}

// Has says whether id is in the mask.
func (m Mask) Has(id int) bool { return m&(1<<uint(id)) != 0 }

// Count returns how many nodes the mask holds.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// IDs returns the node IDs in the mask, lowest first.
func (m Mask) IDs() []int {
	var ids []int
	for v := uint64(m); v != 0; v &= v - 1 {
		ids = append(ids, bits.TrailingZeros64(v))
	}
	return ids
}

// IsSubsetOf says whether every node of m is in o.
func (m Mask) IsSubsetOf(o Mask) bool { return m&^o == 0 }

// String prints the nodes as a list, "0,1".
func (m Mask) String() string {
	parts := make([]string, 0, m.Count())
	for _, id := range m.IDs() {
		parts = append(parts, strconv.Itoa(id))
	}
	return strings.Join(parts, ",")
}

// Hint is one NUMA placement a manager could satisfy a request on. A zero NUMANodes means the
// manager has no preference (upstream's nil affinity).
type Hint struct {
	NUMANodes Mask
	// Preferred says the placement is as narrow as the request allows.
	Preferred bool
}
