package main

import (
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/dump"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// writeDump writes the text upstream's static pod UID hashes for each manifest (decoded as the
// file source decodes it), to compare with nodelet's when a golden test fails.
func writeDump(files []string, dir string) error {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		js, err := utilyaml.ToJSON(data)
		if err != nil {
			return err
		}
		obj, err := runtime.Decode(legacyscheme.Codecs.UniversalDecoder(), js)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)+".txt"), []byte(dump.ForHash(obj)), 0o644); err != nil {
			return err
		}
	}
	return nil
}
