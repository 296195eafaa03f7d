package cmpolicy

import (
	"strings"
	"testing"
)

func TestParseCPUOptions(t *testing.T) {
	alphaToo := CPUOptionGates{Alpha: true, Beta: true}
	for _, tc := range []struct {
		policy  string
		options map[string]string
		gates   CPUOptionGates
		want    string // "" for no error
	}{
		{CPUStatic, map[string]string{OptionFullPCPUsOnly: "true", OptionDistributeCPUsAcrossNUMA: "false", OptionStrictCPUReservation: "true"}, DefaultCPUOptionGates, ""},
		{CPUStatic, map[string]string{"align-by-socket": "true"}, alphaToo, `CPU Manager Policy option "align-by-socket" is not supported by nodelet`},
		{CPUStatic, map[string]string{"prefer-align-cpus-by-uncorecache": "false"}, alphaToo, ""}, // off: nothing to implement
		{CPUStatic, map[string]string{"align-by-socket": "true"}, DefaultCPUOptionGates, `CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided`},
		{CPUStatic, map[string]string{OptionStrictCPUReservation: "true"}, CPUOptionGates{}, `CPU Manager Policy Beta-level Options not enabled, but option "strict-cpu-reservation" provided`},
		{CPUStatic, map[string]string{OptionDistributeCPUsAcrossNUMA: "true"}, CPUOptionGates{Alpha: true}, `CPU Manager Policy Beta-level Options not enabled, but option "distribute-cpus-across-numa" provided`},
		{CPUStatic, map[string]string{OptionFullPCPUsOnly: "true"}, CPUOptionGates{}, ""}, // GA: no gate needed
		{CPUStatic, map[string]string{"made-up": "true"}, alphaToo, `unknown CPU Manager Policy option: "made-up"`},
		{CPUStatic, map[string]string{OptionFullPCPUsOnly: "yes please"}, DefaultCPUOptionGates, `bad value for option "full-pcpus-only"`},
		{CPUNone, map[string]string{OptionFullPCPUsOnly: "true"}, DefaultCPUOptionGates, "None policy: received unsupported options"},
	} {
		_, err := ParseCPUOptions(tc.policy, tc.options, tc.gates)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %v %+v: err = %v, want %q", tc.policy, tc.options, tc.gates, err, tc.want)
		}
	}
}
