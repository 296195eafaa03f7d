package certificates

import (
	"context"
	"crypto/ecdsa"
	"os"
	"strings"
	"testing"
)

// A pair is written whole, 0600, behind a switched link, with no temporary left; a pair whose
// certificate and key do not match is refused and the current one stays.
func TestStoreUpdateSwitchesTheLinkAndRefusesAMismatch(t *testing.T) {
	s := newSigner(t)
	store := Store{Dir: t.TempDir(), Prefix: "kubelet-client"}
	storedPair(t, s, store)
	first, err := store.Current()
	if err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(store.CurrentPath())
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(store.CurrentPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("pair file mode %v (%v), want 0600", fi.Mode(), err)
	}

	certPEM, _, err := request(context.Background(), s.csrClient(), store, clientRequest("n"))
	if err != nil {
		t.Fatal(err)
	}
	store.dropPendingKey()
	_, otherKey, err := store.pendingKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(certPEM, otherKey); err == nil {
		t.Fatal("a certificate stored with another key")
	}
	if cur, err := store.Current(); err != nil || cur.Leaf.SerialNumber.Cmp(first.Leaf.SerialNumber) != 0 {
		t.Fatalf("current pair after a refused update: %v", err)
	}
	if again, _ := os.Readlink(store.CurrentPath()); again != target {
		t.Errorf("link moved to %q after a refused update", again)
	}
	entries, _ := os.ReadDir(store.Dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") || strings.Contains(e.Name(), ".updating") {
			t.Errorf("temporary %s left in the certificate directory", e.Name())
		}
	}
}

// The pending key survives (it is what a restart asks with) unless it is unreadable or is the
// current pair's own key (a crash after storing the pair, before dropping the key).
func TestPendingKeyIsReusedUnlessStale(t *testing.T) {
	s := newSigner(t)
	store := Store{Dir: t.TempDir(), Prefix: "kubelet-client"}
	k1, _, err := store.pendingKey()
	if err != nil {
		t.Fatal(err)
	}
	if k2, _, err := store.pendingKey(); err != nil || !k2.Equal(k1) {
		t.Fatalf("pending key not reused: %v", err)
	}
	if err := os.WriteFile(store.PendingKeyPath(), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k3, _, err := store.pendingKey(); err != nil || k3.Equal(k1) {
		t.Fatalf("unreadable pending key: %v, want a new key", err)
	}

	storedPair(t, s, store)
	cur, _ := store.Current()
	keyPEM, err := encodeKey(cur.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.PendingKeyPath(), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	k4, _, err := store.pendingKey()
	if err != nil || k4.Equal(cur.PrivateKey) {
		t.Fatalf("the current pair's key was reused for a new request: %v", err)
	}
}
