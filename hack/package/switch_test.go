package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The package's dist/nodelet-switch against a stand-in systemctl: the order of its steps, the
// alias it makes and takes away, its refusals and its roll-back. The guest lane runs it under
// the real systemd (TestPackageSwitchFromKubeadmKubeletRestartsNothing).

// fakeSystemctl logs each call to $STATE/log and keeps unit properties as files
// $STATE/UNIT.PROPERTY; start sets ActiveState active, or failed for a unit with a .fail file.
const fakeSystemctl = `#!/bin/sh
echo "$*" >>"$STATE/log"
case $1 in
show)
	prop=${2#--property=}; unit=$4
	if [ -f "$STATE/$unit.$prop" ]; then cat "$STATE/$unit.$prop"; exit 0; fi
	case $prop in
	Id) echo "$unit" ;; ActiveState) echo inactive ;; NRestarts) echo 0 ;; LoadState) echo not-found ;;
	esac ;;
stop) echo inactive >"$STATE/$2.ActiveState" ;;
start)
	unit=$2; [ "$unit" = --no-block ] && unit=$3
	if [ -f "$STATE/$unit.fail" ]; then echo failed; else echo active; fi >"$STATE/$unit.ActiveState" ;;
esac
exit 0
`

const kubeadmExecStart = `{ path=/usr/bin/kubelet ; argv[]=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }`

type switchEnv struct {
	t           *testing.T
	root, state string
}

// newSwitchEnv is a node whose upstream kubelet runs as kubelet.service with execStart.
func newSwitchEnv(t *testing.T, execStart string) *switchEnv {
	if os.Getuid() != 0 {
		t.Skip("nodelet-switch runs as root")
	}
	e := &switchEnv{t: t, root: t.TempDir(), state: t.TempDir()}
	bin := t.TempDir()
	e.write(filepath.Join(bin, "systemctl"), fakeSystemctl, 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("STATE", e.state)
	t.Setenv("NODELET_SWITCH_ROOT", e.root)
	t.Setenv("NODELET_SWITCH_TIMEOUT", "5")
	e.write(filepath.Join(e.root, "usr/bin/nodelet"), "", 0o755)
	e.write(filepath.Join(e.root, "etc/systemd/system/.keep"), "", 0o644)
	e.set("kubelet.service", "LoadState", "loaded")
	e.set("kubelet.service", "ActiveState", "active")
	e.set("kubelet.service", "ExecStart", execStart)
	return e
}

func (e *switchEnv) write(path, content string, mode os.FileMode) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		e.t.Fatal(err)
	}
}

func (e *switchEnv) set(unit, prop, value string) {
	e.write(filepath.Join(e.state, unit+"."+prop), value+"\n", 0o644)
}

func (e *switchEnv) get(unit, prop string) string {
	b, _ := os.ReadFile(filepath.Join(e.state, unit+"."+prop))
	return strings.TrimSpace(string(b))
}

// run runs nodelet-switch and returns its output and systemctl's calls, one a line.
func (e *switchEnv) run(args ...string) (string, []string, error) {
	_ = os.Remove(filepath.Join(e.state, "log"))
	out, err := exec.Command("sh", append([]string{"../../dist/nodelet-switch"}, args...)...).CombinedOutput()
	b, _ := os.ReadFile(filepath.Join(e.state, "log"))
	var calls []string
	for _, c := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if c != "" && !strings.HasPrefix(c, "show ") {
			calls = append(calls, c)
		}
	}
	return string(out), calls, err
}

func (e *switchEnv) alias() string {
	target, _ := os.Readlink(filepath.Join(e.root, "etc/systemd/system/kubelet.service"))
	return target
}

func expectCalls(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("systemctl calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSwitchToNodeletAndBackOnAKubeadmNode(t *testing.T) {
	e := newSwitchEnv(t, kubeadmExecStart)
	out, calls, err := e.run("to-nodelet")
	if err != nil {
		t.Fatalf("to-nodelet: %v\n%s", err, out)
	}
	// The upstream kubelet stops before the alias exists: systemd never sees one name on two
	// running units.
	expectCalls(t, calls, "stop kubelet.service", "disable --quiet kubelet.service", "daemon-reload",
		"enable --quiet nodelet.service", "start --no-block nodelet.service")
	if got := e.alias(); got != "/usr/lib/systemd/system/nodelet.service" {
		t.Errorf("kubelet.service links to %q, want nodelet.service", got)
	}
	if _, _, err := e.run("check"); err != nil {
		t.Errorf("check on the switched node: %v", err)
	}
	out, calls, err = e.run("to-nodelet")
	if err != nil || !strings.Contains(out, "already runs nodelet") {
		t.Errorf("a second to-nodelet: %v\n%s", err, out)
	}
	expectCalls(t, calls, "start nodelet.service")

	out, calls, err = e.run("to-kubelet")
	if err != nil {
		t.Fatalf("to-kubelet: %v\n%s", err, out)
	}
	expectCalls(t, calls, "stop nodelet.service", "disable --quiet nodelet.service", "daemon-reload",
		"enable --quiet kubelet.service", "start kubelet.service")
	if got := e.alias(); got != "" {
		t.Errorf("kubelet.service still links to %q", got)
	}
	if e.get("kubelet.service", "ActiveState") != "active" || e.get("nodelet.service", "ActiveState") != "inactive" {
		t.Error("the upstream kubelet is not the one running")
	}
}

func TestSwitchRefusesArgumentsNodeletWouldNotGet(t *testing.T) {
	e := newSwitchEnv(t, `{ path=/usr/local/bin/kubelet ; argv[]=/usr/local/bin/kubelet --config=/etc/kubelet.yaml $KUBELET_EXTRA_ARGS --v=2 ; ignore_errors=no }`)
	out, calls, err := e.run("to-nodelet")
	if err == nil || !strings.Contains(out, "would not pass: --config=/etc/kubelet.yaml --v=2") || !strings.Contains(out, "KUBELET_EXTRA_ARGS") {
		t.Errorf("to-nodelet: %v\n%s\nwant a refusal naming the arguments", err, out)
	}
	expectCalls(t, calls)
	if _, calls, err := e.run("to-nodelet", "--force"); err != nil || len(calls) == 0 || calls[0] != "stop kubelet.service" {
		t.Errorf("to-nodelet --force: %v, calls %v", err, calls)
	}
}

func TestSwitchKeepsTheOperatorsOwnUnitAndRollsBack(t *testing.T) {
	e := newSwitchEnv(t, kubeadmExecStart)
	own := filepath.Join(e.root, "etc/systemd/system/kubelet.service")
	e.write(own, "[Service]\nExecStart=/usr/bin/kubelet\n", 0o644)
	e.set("nodelet.service", "fail", "")
	out, _, err := e.run("to-nodelet")
	if err == nil || !strings.Contains(out, "switching back") {
		t.Fatalf("to-nodelet with a nodelet that fails: %v\n%s\nwant a roll-back", err, out)
	}
	if b, err := os.ReadFile(own); err != nil || !strings.Contains(string(b), "ExecStart=/usr/bin/kubelet") {
		t.Errorf("the operator's kubelet.service after the roll-back: %q, %v", b, err)
	}
	if e.get("kubelet.service", "ActiveState") != "active" {
		t.Error("the upstream kubelet was not started again")
	}
}

func TestCheckRefusesBesideTheUpstreamKubelet(t *testing.T) {
	e := newSwitchEnv(t, kubeadmExecStart)
	out, _, err := e.run("check")
	if err == nil || !strings.Contains(out, "two kubelets must not share a node") {
		t.Errorf("check while the upstream kubelet runs: %v\n%s", err, out)
	}
	e.set("kubelet.service", "ActiveState", "inactive")
	if out, _, err := e.run("check"); err != nil {
		t.Errorf("check with the kubelet stopped: %v\n%s", err, out)
	}
}
