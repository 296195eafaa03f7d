// Command handovergolden records what the upstream kubelet v1.33 computes for the identities
// that must agree for a handover between it and nodelet: the container hash it writes in
// io.kubernetes.container.hash and the UID it gives a static pod read from a file or a URL.
// It runs upstream's own code (the file and URL pod sources, HashContainer) over a corpus of
// manifests and writes what they return, for nodelet's unit tests to match byte for byte.
//
// It also writes the shape of the API server's internal Pod type (k8s.io/kubernetes/pkg/apis/core),
// because upstream's static pod UID is a hash of that type's printed form: nodelet prints a
// v1.Pod converted into a mirror of it (internal/kubehash/core).
//
//	cd test/harness && go run ./cmd/handovergolden -corpus ../../internal/kubehash/testdata/manifests \
//	    -out ../../internal/kubehash/testdata/golden.json -types ../../internal/kubehash/core/zz_generated.types.go
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"k8s.io/kubernetes/pkg/kubelet/config"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
)

// NodeName is the node the corpus's static pods are read for.
const NodeName = "golden-node1"

// Record is what upstream computed for one manifest.
type Record struct {
	File string `json:"file"`
	// Source is "file" (read from the corpus directory) or "url" (served over HTTP).
	Source string `json:"source"`
	// Location is what upstream hashed as the pod's source: the file path or the URL.
	Location string `json:"location"`
	UID      string `json:"uid"`
	Name     string `json:"name"`
	// Hashes are the io.kubernetes.container.hash annotations upstream writes, by container name.
	Hashes map[string]string `json:"hashes"`
}

func main() {
	corpus := flag.String("corpus", "", "directory of pod manifests")
	out := flag.String("out", "", "golden JSON to write")
	typesOut := flag.String("types", "", "Go file to write the internal Pod type mirror into")
	dumpDir := flag.String("dump", "", "directory to write the hashed text of each manifest into (debugging)")
	flag.Parse()
	if *typesOut != "" {
		if err := writeTypes(*typesOut); err != nil {
			fail(err)
		}
	}
	if *corpus == "" || *out == "" {
		return
	}
	recs, err := run(*corpus)
	if err != nil {
		fail(err)
	}
	if *dumpDir != "" {
		files, _ := globs(*corpus)
		if err := writeDump(files, *dumpDir); err != nil {
			fail(err)
		}
	}
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "handovergolden:", err)
	os.Exit(1)
}

func run(corpus string) ([]Record, error) {
	abs, err := filepath.Abs(corpus)
	if err != nil {
		return nil, err
	}
	files, err := globs(abs)
	if err != nil {
		return nil, err
	}
	var recs []Record
	for _, f := range files {
		pod, err := fromFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		recs = append(recs, record(filepath.Base(f), "file", f, pod))
	}
	for _, f := range files {
		pod, url, err := fromURL(f)
		if err != nil {
			return nil, fmt.Errorf("%s over http: %w", f, err)
		}
		recs = append(recs, record(filepath.Base(f), "url", url, pod))
	}
	return recs, nil
}

func record(file, source, location string, pod *v1.Pod) Record {
	r := Record{File: file, Source: source, Location: location, UID: string(pod.UID), Name: pod.Name, Hashes: map[string]string{}}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			r.Hashes[list[i].Name] = strconv.FormatUint(kubecontainer.HashContainer(&list[i]), 16)
		}
	}
	return r
}

// fromFile has upstream's file source read one manifest, from a directory holding only it.
func fromFile(path string) (*v1.Pod, error) {
	updates := make(chan interface{}, 10)
	config.NewSourceFile(path, types.NodeName(NodeName), time.Hour, updates)
	return firstPod(updates)
}

func fromURL(path string) (*v1.Pod, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(data) }))
	defer srv.Close()
	url := srv.URL + "/" + filepath.Base(path)
	updates := make(chan interface{}, 10)
	config.NewSourceURL(url, http.Header{}, types.NodeName(NodeName), time.Hour, updates)
	pod, err := firstPod(updates)
	return pod, url, err
}

func firstPod(updates chan interface{}) (*v1.Pod, error) {
	timeout := time.After(5 * time.Second)
	for {
		select {
		case u := <-updates:
			pu := u.(kubetypes.PodUpdate)
			if len(pu.Pods) == 1 {
				return pu.Pods[0], nil
			}
		case <-timeout:
			return nil, fmt.Errorf("no pod read (invalid manifest?)")
		}
	}
}

// globs lists the corpus's YAML and JSON manifests.
func globs(dir string) ([]string, error) {
	yamls, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	jsons, err := filepath.Glob(filepath.Join(dir, "*.json"))
	return append(yamls, jsons...), err
}
