package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageHoldsTheUnitSwitchAndConfig builds the package from a stand-in binary and reads
// it back with dpkg-deb: the fields, each installed file with its mode and root ownership, the
// conffile and the maintainer scripts.
func TestPackageHoldsTheUnitSwitchAndConfig(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("no dpkg-deb")
	}
	bin, err := os.Executable() // an ELF binary, as nodelet is
	if err != nil {
		t.Fatal(err)
	}
	wantDepends, err := libcDepends(bin)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	deb, err := build(options{binary: bin, dist: "../../dist", out: out, version: "0.1.0~dev+7.gabc", arch: "amd64", compress: "gzip"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "nodelet_0.1.0~dev+7.gabc_amd64.deb"); deb != want {
		t.Errorf("built %s, want %s", deb, want)
	}
	fields := run(t, "dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends")
	for _, want := range []string{"Package: nodelet", "Version: 0.1.0~dev+7.gabc", "Architecture: amd64", wantDepends} {
		if !strings.Contains(fields, want) {
			t.Errorf("control fields %q lack %q", fields, want)
		}
	}
	listing := run(t, "dpkg-deb", "-c", deb)
	for _, want := range []string{
		"drwxr-xr-x root/root ./",
		"-rwxr-xr-x root/root ./usr/bin/nodelet",
		"-rwxr-xr-x root/root ./usr/sbin/nodelet-switch",
		"-rw-r--r-- root/root ./usr/lib/systemd/system/nodelet.service",
		"-rw-r--r-- root/root ./usr/lib/systemd/system/nodelet.service.d/90-nodelet.conf",
		"-rw-r--r-- root/root ./etc/nodelet/config.yaml",
	} {
		if !hasEntry(listing, want) {
			t.Errorf("the package lacks %q; it holds:\n%s", want, listing)
		}
	}
	info := run(t, "dpkg-deb", "-I", deb)
	for _, want := range []string{"postinst", "prerm", "postrm", "conffiles"} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb -I lacks %s:\n%s", want, info)
		}
	}
	if got := run(t, "dpkg-deb", "-I", deb, "conffiles"); strings.TrimSpace(got) != "/etc/nodelet/config.yaml" {
		t.Errorf("conffiles %q, want /etc/nodelet/config.yaml alone", got)
	}
}

// hasEntry says whether a `dpkg-deb -c` listing has a line with want's mode, owner, (size if
// given) and path, whatever the date.
func hasEntry(listing, want string) bool {
	w := strings.Fields(want)
	for _, line := range strings.Split(listing, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != w[0] || f[1] != w[1] || f[len(f)-1] != w[len(w)-1] {
			continue
		}
		if len(w) == 4 && f[2] != w[2] {
			continue
		}
		return true
	}
	return false
}

func TestLibcDependsOnTheNewestGlibcSymbol(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		newer bool
	}{{"2.34", "2.3.2", true}, {"2.3.2", "2.34", false}, {"2.34", "2.34", false}, {"2.34.1", "2.34", true}} {
		if got := newerVersion(c.a, c.b); got != c.newer {
			t.Errorf("newerVersion(%s, %s) = %v", c.a, c.b, got)
		}
	}
	script := filepath.Join(t.TempDir(), "nodelet")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := libcDepends(script); err == nil {
		t.Error("a binary that is not ELF was packaged")
	}
}

func TestVersionMustBeDebian(t *testing.T) {
	for _, v := range []string{"v0.1.0", "", "0.1 0"} {
		if _, err := build(options{version: v}); err == nil || !strings.Contains(err.Error(), "not a Debian version") {
			t.Errorf("version %q: %v, want refused", v, err)
		}
	}
}

// TestDefaultVersionsUpgradeInOrder: a dev build sorts before its release, and a later
// commit's package after an earlier one's, as dpkg compares them.
func TestDefaultVersionsUpgradeInOrder(t *testing.T) {
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg")
	}
	for _, pair := range [][2]string{
		{"0.1.0~dev+9.gabc", "0.1.0~dev+10.g123"},
		{"0.1.0~dev+10.g123", "0.1.0"},
	} {
		if err := exec.Command("dpkg", "--compare-versions", pair[0], "lt", pair[1]).Run(); err != nil {
			t.Errorf("dpkg orders %s after %s", pair[0], pair[1])
		}
	}
	if v := defaultVersion(); !debVersion.MatchString(v) || !strings.HasPrefix(v, "0.1.0~dev") {
		t.Errorf("defaultVersion() = %q", v)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}
