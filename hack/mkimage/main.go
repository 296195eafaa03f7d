// Command mkimage packs a root filesystem directory into a docker-archive tar
// (manifest.json + image config + one uncompressed layer) that
// `ctr images import` accepts, so test images can be built without a registry.
//
// Usage:
//
//	mkimage -name repo:tag [-name other:tag] [-entrypoint arg]... [-cmd arg]...
//	        [-env KEY=VALUE]... [-workdir DIR] -out image.tar ROOTFS
//
// -entrypoint and -cmd are repeatable; each occurrence is one argv element.
// The output is reproducible: file owners are root and timestamps are fixed.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is the timestamp written everywhere so identical inputs give identical digests.
var epoch = time.Unix(0, 0).UTC()

// listFlag collects every occurrence of a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// imageSpec is everything that ends up in the image config besides the layer.
type imageSpec struct {
	Names      []string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
}

// The JSON shapes below follow the OCI/Docker image config and the
// docker-archive manifest.json layout.
type containerConfig struct {
	Env        []string `json:"Env,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by"`
}

type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Created      time.Time       `json:"created"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
	History      []history       `json:"history"`
}

type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

func main() {
	var spec imageSpec
	var names, entrypoint, cmd, env listFlag
	out := flag.String("out", "", "path of the docker-archive tar to write")
	flag.Var(&names, "name", "image reference repo:tag (repeatable)")
	flag.Var(&entrypoint, "entrypoint", "entrypoint argv element (repeatable)")
	flag.Var(&cmd, "cmd", "cmd argv element (repeatable)")
	flag.Var(&env, "env", "environment KEY=VALUE (repeatable); PATH defaults to the usual dirs")
	flag.StringVar(&spec.WorkingDir, "workdir", "", "working directory")
	flag.Parse()

	if flag.NArg() != 1 || *out == "" || len(names) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mkimage -name repo:tag [flags] -out image.tar ROOTFS")
		flag.PrintDefaults()
		os.Exit(2)
	}
	spec.Names, spec.Entrypoint, spec.Cmd, spec.Env = names, entrypoint, cmd, withDefaultPath(env)

	if err := writeImage(flag.Arg(0), *out, spec); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func withDefaultPath(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			return env
		}
	}
	return append([]string{defaultPath}, env...)
}

// writeImage builds the layer in memory (test images are a few MB), then
// writes the archive atomically via a temp file.
func writeImage(rootfsDir, outPath string, spec imageSpec) error {
	var layer bytes.Buffer
	if err := writeLayer(&layer, rootfsDir); err != nil {
		return fmt.Errorf("layer from %s: %w", rootfsDir, err)
	}
	layerDigest := sha256Hex(layer.Bytes())

	configJSON, err := json.Marshal(imageConfig{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Created:      epoch,
		Config: containerConfig{
			Env: spec.Env, Entrypoint: spec.Entrypoint, Cmd: spec.Cmd, WorkingDir: spec.WorkingDir,
		},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{"sha256:" + layerDigest}},
		History: []history{{Created: epoch, CreatedBy: "nodelet hack/mkimage"}},
	})
	if err != nil {
		return err
	}
	configName := sha256Hex(configJSON) + ".json"
	layerName := layerDigest + "/layer.tar"
	manifestJSON, err := json.Marshal([]manifestEntry{{
		Config: configName, RepoTags: spec.Names, Layers: []string{layerName},
	}})
	if err != nil {
		return err
	}

	tmp, err := os.CreateTemp(filepath.Dir(outPath), ".mkimage-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	tw := tar.NewWriter(tmp)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{layerName, layer.Bytes()},
		{configName, configJSON},
		{"manifest.json", manifestJSON},
	} {
		if err := addBytes(tw, f.name, f.data); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), outPath)
}

func addBytes(tw *tar.Writer, name string, data []byte) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// writeLayer tars rootfsDir with paths relative to it. WalkDir visits entries
// in lexical order, which keeps the output deterministic.
func writeLayer(w io.Writer, rootfsDir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(rootfsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rootfsDir, path)
		if err != nil || rel == "." {
			return err
		}
		return addPath(tw, path, filepath.ToSlash(rel), d)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func addPath(tw *tar.Writer, path, name string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Mode: int64(info.Mode().Perm()), ModTime: epoch}
	if info.Mode()&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000 // keep /tmp world-writable-with-sticky-bit
	}
	if info.Mode()&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000 // setuid test binaries (the nonewprivs image)
	}
	switch {
	case info.Mode().IsRegular():
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	case info.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	default:
		return fmt.Errorf("%s: unsupported file type %v", path, info.Mode().Type())
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
