// Command package builds nodelet's Debian package from a nodelet binary and the files under
// dist/ with dpkg-deb, which every Debian machine has: no packaging tool is downloaded. The
// package installs /usr/bin/nodelet, /usr/sbin/nodelet-switch, nodelet.service with its drop-in
// and /etc/nodelet/config.yaml (a conffile), beside the upstream kubelet's package
// (docs/install.md). Run from the repository root:
//
//	go run ./hack/package -binary _output/bin/nodelet -out _output/package
package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/nodelet/nodelet/internal/lib/version"
)

// file is one file of the package: where it comes from (under the dist directory, or the
// binary) and where it goes, with its mode.
type file struct {
	src, dst string
	mode     os.FileMode
}

// payload lists what the package installs; src "" is the nodelet binary.
var payload = []file{
	{"", "usr/bin/nodelet", 0o755},
	{"nodelet-switch", "usr/sbin/nodelet-switch", 0o755},
	{"systemd/nodelet.service", "usr/lib/systemd/system/nodelet.service", 0o644},
	{"systemd/nodelet.service.d/90-nodelet.conf", "usr/lib/systemd/system/nodelet.service.d/90-nodelet.conf", 0o644},
	{"config.yaml", "etc/nodelet/config.yaml", 0o644},
}

// maintainerScripts run at install, upgrade and removal (dist/debian).
var maintainerScripts = []string{"postinst", "prerm", "postrm"}

// debVersion is a Debian version: an upstream part starting with a digit, of the characters
// Debian allows there.
var debVersion = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~-]*$`)

type options struct {
	binary, dist, out, version, arch, compress string
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "_output/bin/nodelet", "the nodelet binary to package")
	flag.StringVar(&o.dist, "dist", "dist", "the directory of the unit, nodelet-switch, config and maintainer scripts")
	flag.StringVar(&o.out, "out", "_output/package", "where the .deb goes")
	flag.StringVar(&o.version, "version", defaultVersion(), "the package's version")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the Debian architecture (Go's names match for amd64 and arm64)")
	flag.StringVar(&o.compress, "compress", "xz", "dpkg-deb's compression: xz, gzip or none")
	flag.Parse()
	deb, err := build(o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(deb)
}

// defaultVersion is nodelet's version as Debian orders it: "v0.1.0-dev" becomes "0.1.0~dev"
// (a pre-release sorts before its release), then the commit count and commit, so each commit's
// package upgrades the one before.
func defaultVersion() string {
	v := strings.Replace(strings.TrimPrefix(version.Version, "v"), "-", "~", 1)
	count, err1 := exec.Command("git", "rev-list", "--count", "HEAD").Output()
	short, err2 := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err1 != nil || err2 != nil {
		return v
	}
	return fmt.Sprintf("%s+%s.g%s", v, strings.TrimSpace(string(count)), strings.TrimSpace(string(short)))
}

// build stages the package's tree in a temporary directory and has dpkg-deb build it; it
// returns the .deb's path.
func build(o options) (string, error) {
	if !debVersion.MatchString(o.version) {
		return "", fmt.Errorf("version %q is not a Debian version (a digit first, then [A-Za-z0-9.+~-])", o.version)
	}
	stage, err := os.MkdirTemp("", "nodelet-package-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	// The tree's root is the package's "./": MkdirTemp's 0700 must not reach the target's /.
	if err := os.Chmod(stage, 0o755); err != nil {
		return "", err
	}
	size, err := stagePayload(o, stage)
	if err != nil {
		return "", err
	}
	depends, err := libcDepends(o.binary)
	if err != nil {
		return "", err
	}
	if err := stageControl(o, stage, size, depends); err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", err
	}
	deb := filepath.Join(o.out, fmt.Sprintf("nodelet_%s_%s.deb", o.version, o.arch))
	// --root-owner-group: every file root's, whoever builds; -Z: xz for releases, gzip where
	// speed matters more (the guest lane builds two per run).
	cmd := exec.Command("dpkg-deb", "--root-owner-group", "-Z"+o.compress, "--build", stage, deb)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb: %v\n%s", err, out)
	}
	return deb, nil
}

// stagePayload copies the installed files into stage and returns their size in bytes.
func stagePayload(o options, stage string) (int64, error) {
	var size int64
	for _, f := range payload {
		src := o.binary
		if f.src != "" {
			src = filepath.Join(o.dist, f.src)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return 0, err
		}
		dst := filepath.Join(stage, f.dst)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return 0, err
		}
		if err := writeFile(dst, b, f.mode); err != nil {
			return 0, err
		}
		size += int64(len(b))
	}
	return size, nil
}

// stageControl writes DEBIAN/: the control file, the conffiles and the maintainer scripts.
func stageControl(o options, stage string, size int64, depends string) error {
	dir := filepath.Join(stage, "DEBIAN")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "control"), []byte(control(o, size, depends)), 0o644); err != nil {
		return err
	}
	// The config is the operator's once installed: an upgrade asks before replacing an edited one.
	if err := writeFile(filepath.Join(dir, "conffiles"), []byte("/etc/nodelet/config.yaml\n"), 0o644); err != nil {
		return err
	}
	for _, s := range maintainerScripts {
		b, err := os.ReadFile(filepath.Join(o.dist, "debian", s))
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, s), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// control is the package's DEBIAN/control. The maintainer address is a reserved .invalid one:
// the project takes reports as issues, not mail. The only dependency is the C library a
// cgo-linked binary needs (depends); the runtime (containerd or CRI-O) is the operator's
// choice, as for the upstream kubelet.
func control(o options, size int64, depends string) string {
	if depends != "" {
		depends = "Depends: " + depends + "\n"
	}
	return fmt.Sprintf(`Package: nodelet
Version: %s
Architecture: %s
Maintainer: nodelet developers <maintainers@nodelet.invalid>
Installed-Size: %d
%sSection: admin
Priority: optional
Homepage: https://github.com/nodelet/nodelet
Description: Kubernetes node agent, a kubelet written from scratch
 nodelet takes the upstream kubelet's flags and KubeletConfiguration and runs
 pods through a CRI runtime. Installed beside the kubelet package, it takes over
 kubelet.service with "nodelet-switch to-nodelet", kubeadm's drop-in included,
 and hands back with "nodelet-switch to-kubelet", restarting no pod.
`, o.version, o.arch, (size+1023)/1024, depends)
}

// libcDepends is the Depends a binary needs: libc6 at the newest GLIBC symbol version it
// imports, or nothing for a static binary.
func libcDepends(binary string) (string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", binary, err)
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil || len(syms) == 0 {
		return "", nil // no dynamic symbols: static
	}
	newest := ""
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && (newest == "" || newerVersion(v, newest)) {
			newest = v
		}
	}
	if newest == "" {
		return "libc6", nil
	}
	return "libc6 (>= " + newest + ")", nil
}

// newerVersion compares dotted numeric versions: 2.34 is newer than 2.3.2.
func newerVersion(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x > y
		}
	}
	return false
}

// writeFile writes b with mode exactly (the umask would otherwise narrow it).
func writeFile(path string, b []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, b, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
