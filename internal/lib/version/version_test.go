package version

import (
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestKubeletVersionIsSemver(t *testing.T) {
	v, err := utilversion.ParseSemantic(KubeletVersion)
	if err != nil {
		t.Fatalf("KubeletVersion %q is not semver: %v", KubeletVersion, err)
	}
	if v.Major() != 1 || v.Minor() != 33 {
		t.Errorf("KubeletVersion %q: want a 1.33 release", KubeletVersion)
	}
}

func TestStringUsesLinkerValues(t *testing.T) {
	oldVersion, oldCommit := Version, GitCommit
	defer func() { Version, GitCommit = oldVersion, oldCommit }()
	Version, GitCommit = "v9.9.9", "abc123"

	s := String()
	for _, want := range []string{"nodelet v9.9.9", "commit abc123", KubeletVersion} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, missing %q", s, want)
		}
	}
}
