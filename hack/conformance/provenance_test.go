package main

import (
	"path/filepath"
	"testing"
)

// The checkout's HEAD is found in a repository (loose or packed ref, detached HEAD) and in a
// linked worktree, whose .git file names its own git directory and whose refs are shared.
func TestCheckoutHead(t *testing.T) {
	const loose, packed, detached = "111111111111aaaa", "222222222222bbbb", "333333333333cccc"
	repo := t.TempDir()
	writeTestFile(t, filepath.Join(repo, ".git/HEAD"), "ref: refs/heads/main\n")
	writeTestFile(t, filepath.Join(repo, ".git/refs/heads/main"), loose+"\n")
	writeTestFile(t, filepath.Join(repo, ".git/packed-refs"), "# pack-refs\n"+packed+" refs/heads/h-conf\n")
	if got := checkoutHead(repo); got != loose[:12] {
		t.Errorf("repository: %q, want %q", got, loose[:12])
	}

	wt := t.TempDir()
	gitDir := filepath.Join(repo, ".git/worktrees/conf")
	writeTestFile(t, filepath.Join(wt, ".git"), "gitdir: "+gitDir+"\n")
	writeTestFile(t, filepath.Join(gitDir, "commondir"), "../..\n")
	writeTestFile(t, filepath.Join(gitDir, "HEAD"), "ref: refs/heads/h-conf\n")
	if got := checkoutHead(wt); got != packed[:12] {
		t.Errorf("worktree on a packed branch: %q, want %q", got, packed[:12])
	}
	writeTestFile(t, filepath.Join(gitDir, "HEAD"), detached+"\n")
	if got := checkoutHead(wt); got != detached[:12] {
		t.Errorf("worktree with a detached HEAD: %q, want %q", got, detached[:12])
	}
	if got := checkoutHead(t.TempDir()); got != "unknown" {
		t.Errorf("no repository: %q, want unknown", got)
	}
}
