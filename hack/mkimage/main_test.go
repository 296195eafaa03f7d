package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// readTar returns every regular file and symlink target in a tar stream, by name.
func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			files[hdr.Name] = []byte("-> " + hdr.Linkname)
		case tar.TypeDir:
			files[hdr.Name] = nil
		default:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = data
		}
	}
}

func TestWriteImage(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!tool"), 0o755))
	must(t, os.Symlink("tool", filepath.Join(root, "bin", "alias")))
	out := filepath.Join(t.TempDir(), "image.tar")

	spec := imageSpec{
		Names:      []string{"example.local/tool:v1", "example.local/tool:latest"},
		Entrypoint: []string{"/bin/tool"},
		Cmd:        []string{"serve", "--port", "80"},
		Env:        withDefaultPath([]string{"A=b"}),
		WorkingDir: "/bin",
	}
	must(t, writeImage(root, out, spec))

	f, err := os.Open(out)
	must(t, err)
	defer f.Close()
	archive := readTar(t, f)

	var manifest []manifestEntry
	must(t, json.Unmarshal(archive["manifest.json"], &manifest))
	if len(manifest) != 1 || !reflect.DeepEqual(manifest[0].RepoTags, spec.Names) || len(manifest[0].Layers) != 1 {
		t.Fatalf("unexpected manifest %+v", manifest)
	}

	var cfg imageConfig
	must(t, json.Unmarshal(archive[manifest[0].Config], &cfg))
	if cfg.Architecture != runtime.GOARCH || cfg.OS != "linux" {
		t.Errorf("platform = %s/%s", cfg.OS, cfg.Architecture)
	}
	wantEnv := []string{defaultPath, "A=b"}
	if !reflect.DeepEqual(cfg.Config.Env, wantEnv) || !reflect.DeepEqual(cfg.Config.Cmd, spec.Cmd) ||
		!reflect.DeepEqual(cfg.Config.Entrypoint, spec.Entrypoint) || cfg.Config.WorkingDir != "/bin" {
		t.Errorf("unexpected container config %+v", cfg.Config)
	}

	layerData := archive[manifest[0].Layers[0]]
	if want := "sha256:" + sha256Hex(layerData); cfg.RootFS.DiffIDs[0] != want {
		t.Errorf("diff_id %s does not match layer digest %s", cfg.RootFS.DiffIDs[0], want)
	}
	layer := readTar(t, bytes.NewReader(layerData))
	if string(layer["bin/tool"]) != "#!tool" || string(layer["bin/alias"]) != "-> tool" {
		t.Errorf("layer contents wrong: %q", layer)
	}
	if _, ok := layer["bin/"]; !ok {
		t.Errorf("layer lacks directory entry bin/: %q", layer)
	}
}

func TestWriteImageIsReproducible(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	dir := t.TempDir()
	spec := imageSpec{Names: []string{"example.local/f:v1"}, Env: withDefaultPath(nil)}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	must(t, writeImage(root, a, spec))
	must(t, os.Chtimes(filepath.Join(root, "f"), epoch.AddDate(1, 0, 0), epoch.AddDate(1, 0, 0)))
	must(t, writeImage(root, b, spec))
	dataA, _ := os.ReadFile(a)
	dataB, _ := os.ReadFile(b)
	if !bytes.Equal(dataA, dataB) {
		t.Error("same rootfs content produced different archives")
	}
}

func TestWithDefaultPathKeepsExplicitPath(t *testing.T) {
	env := []string{"PATH=/opt/bin"}
	if got := withDefaultPath(env); !reflect.DeepEqual(got, env) {
		t.Errorf("withDefaultPath(%q) = %q", env, got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
