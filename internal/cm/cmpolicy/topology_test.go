package cmpolicy

import (
	"strings"
	"testing"
)

func TestParseTopologyOptions(t *testing.T) {
	good := map[string]string{OptionPreferClosestNUMANodes: "true", OptionMaxAllowableNUMANodes: "12"}
	if o, err := ParseTopologyOptions(good); err != nil || !o.PreferClosestNUMA || o.MaxAllowableNUMANodes != 12 {
		t.Errorf("ParseTopologyOptions(%v) = %+v, %v", good, o, err)
	}
	if o, err := ParseTopologyOptions(nil); err != nil || o.PreferClosestNUMA || o.MaxAllowableNUMANodes != 8 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for raw, want := range map[string]map[string]string{
		`bad value for option "prefer-closest-numa-nodes"`:                          {OptionPreferClosestNUMANodes: "yes please"},
		`unable to convert policy option to integer "max-allowable-numa-nodes"`:     {OptionMaxAllowableNUMANodes: "many"},
		`the minimum value of "max-allowable-numa-nodes" should not be less than 8`: {OptionMaxAllowableNUMANodes: "4"},
	} {
		if _, err := ParseTopologyOptions(want); err == nil || !strings.Contains(err.Error(), raw) {
			t.Errorf("ParseTopologyOptions(%v): %v, want %q", want, err, raw)
		}
	}
}
