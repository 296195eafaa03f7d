package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const kubeletConfigKind = "KubeletConfiguration"

// Load reads a KubeletConfiguration from a YAML or JSON file. Decoding is
// strict: unknown or duplicated fields are errors that name the field. Relative
// file paths inside the configuration are resolved against the file's
// directory. Load applies no defaults; Complete (or SetDefaults) does.
func Load(path string) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading kubelet config file: %w", err)
	}
	kc, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("kubelet config file %q: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("kubelet config file %q: %w", path, err)
	}
	resolveRelativePaths(kc, filepath.Dir(abs))
	return kc, nil
}

// decode turns YAML or JSON bytes into a KubeletConfiguration, checking its
// apiVersion and kind and rejecting fields the type does not have.
func decode(data []byte) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	// YAML is a superset of JSON, so one conversion handles both. The strict
	// conversion also catches keys repeated in the YAML.
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}

	var typeMeta metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(jsonData, &typeMeta); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if err := checkTypeMeta(typeMeta); err != nil {
		return nil, err
	}

	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	strictErrs, err := kjson.UnmarshalStrict(jsonData, kc)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("strict decoding: %s", strings.Join(msgs, "; "))
	}
	return kc, nil
}

func checkTypeMeta(tm metav1.TypeMeta) error {
	want := kubeletconfigv1beta1.SchemeGroupVersion.String()
	var errs []error
	if tm.APIVersion != want {
		errs = append(errs, fmt.Errorf("apiVersion: must be %q, got %q", want, tm.APIVersion))
	}
	if tm.Kind != kubeletConfigKind {
		errs = append(errs, fmt.Errorf("kind: must be %q, got %q", kubeletConfigKind, tm.Kind))
	}
	return errors.Join(errs...)
}

// resolveRelativePaths makes the file paths a config file names relative to
// that file's own directory, so a config and its certificates can move together.
func resolveRelativePaths(kc *kubeletconfigv1beta1.KubeletConfiguration, dir string) {
	paths := []*string{
		&kc.StaticPodPath,
		&kc.TLSCertFile,
		&kc.TLSPrivateKeyFile,
		&kc.Authentication.X509.ClientCAFile,
		&kc.PodLogsDir,
	}
	if kc.ResolverConfig != nil {
		paths = append(paths, kc.ResolverConfig)
	}
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}
