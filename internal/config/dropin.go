package config

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// dropInSuffix is the suffix of the files --config-dir merges; others are skipped.
const dropInSuffix = ".conf"

// MergeDropIns merges the drop-in files of dir (--config-dir) over base, as the upstream
// kubelet v1.33 does: every *.conf file under dir, subdirectories included, in lexical order,
// each a complete KubeletConfiguration document (apiVersion and kind required) applied to the
// result so far as a JSON merge patch (RFC 7386): a field the drop-in sets replaces the base's,
// objects and maps (featureGates, evictionHard...) merge key by key, lists are replaced whole,
// null removes the field. The result is defaulted again, so a field a drop-in sets to its zero
// value falls back to the default, again as upstream.
func MergeDropIns(base *kubeletconfigv1beta1.KubeletConfiguration, dir string) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	merged, err := toObject(base)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(d.Name()) != dropInSuffix {
			return nil
		}
		patch, err := loadDropIn(path)
		if err != nil {
			return fmt.Errorf("kubelet drop-in config file %q: %w", path, err)
		}
		merged = mergePatch(merged, patch)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--config-dir %q: %w", dir, err)
	}
	data, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	out := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, out); err != nil {
		return nil, fmt.Errorf("--config-dir %q: merged configuration: %w", dir, err)
	}
	SetDefaults(out)
	return out, nil
}

// loadDropIn reads one drop-in as the JSON object it holds. It must decode as a
// KubeletConfiguration on its own, so a misspelt or unknown field is refused naming the file.
func loadDropIn(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("file is empty (a drop-in needs at least apiVersion and kind)")
	}
	if _, err := decode(data); err != nil {
		return nil, err
	}
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	return jsonObject(jsonData)
}

func toObject(kc *kubeletconfigv1beta1.KubeletConfiguration) (map[string]any, error) {
	data, err := json.Marshal(kc)
	if err != nil {
		return nil, err
	}
	return jsonObject(data)
}

// jsonObject decodes a JSON object keeping integers exact (not float64).
func jsonObject(data []byte) (map[string]any, error) {
	var obj map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// mergePatch applies patch to target as RFC 7386 says: objects merge recursively, null
// deletes, anything else (lists included) replaces.
func mergePatch(target, patch map[string]any) map[string]any {
	if target == nil {
		target = map[string]any{}
	}
	for key, value := range patch {
		if value == nil {
			delete(target, key)
			continue
		}
		sub, isObject := value.(map[string]any)
		if !isObject {
			target[key] = value
			continue
		}
		existing, _ := target[key].(map[string]any)
		target[key] = mergePatch(existing, sub)
	}
	return target
}
