package mount

import (
	"os"
	"path/filepath"
	"testing"
)

const selinuxMountInfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,seclabel
30 22 0:20 / /sys/fs/selinux rw,relatime shared:12 - selinuxfs selinuxfs rw
40 22 0:30 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount rw - nfs srv:/x rw,vers=4
41 22 0:31 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/w/mount rw - xfs /dev/sdb rw,seclabel
`

func write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSELinuxSupported(t *testing.T) {
	info := write(t, "mountinfo", selinuxMountInfo)
	for path, want := range map[string]bool{
		"/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount":     false, // nfs without seclabel
		"/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/w/mount/sub": true,
		"/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/x":     true, // the root's ext4
	} {
		if got := SELinuxSupported(info, path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

func TestSELinuxEnabled(t *testing.T) {
	enforcing := write(t, "mountinfo", selinuxMountInfo)
	without := write(t, "plain", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n")
	labelled := write(t, "current", "system_u:system_r:kubelet_t:s0\x00")
	kernel := write(t, "kernel", "kernel\x00")
	for _, tt := range []struct {
		info, label string
		want        bool
	}{{enforcing, labelled, true}, {enforcing, kernel, false}, {without, labelled, false}, {enforcing, "/nonexistent", false}} {
		if got := SELinuxEnabled(tt.info, tt.label); got != tt.want {
			t.Errorf("SELinuxEnabled(%s, %s) = %v, want %v", filepath.Base(tt.info), filepath.Base(tt.label), got, tt.want)
		}
	}
	// This host: no selinuxfs.
	if SELinuxEnabled(Mountinfo, "/proc/self/attr/current") {
		t.Log("SELinux is on on this host")
	}
}
