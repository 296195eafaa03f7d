package objects

import v1 "k8s.io/api/core/v1"

// Kinds of object the manager serves.
const (
	kindConfigMap = "configmap"
	kindSecret    = "secret"
)

// key names one object.
type key struct{ kind, namespace, name string }

// references lists the ConfigMaps and Secrets pod uses: volumes (direct and projected),
// environment (valueFrom and envFrom) of every container, and image pull secrets.
func references(pod *v1.Pod) map[key]bool {
	out := map[key]bool{}
	if pod == nil {
		return out
	}
	add := func(kind, name string) {
		if name != "" {
			out[key{kind, pod.Namespace, name}] = true
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	for _, vol := range pod.Spec.Volumes {
		if cm := vol.ConfigMap; cm != nil {
			add(kindConfigMap, cm.Name)
		}
		if s := vol.Secret; s != nil {
			add(kindSecret, s.SecretName)
		}
		if p := vol.Projected; p != nil {
			for _, src := range p.Sources {
				if src.ConfigMap != nil {
					add(kindConfigMap, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					add(kindSecret, src.Secret.Name)
				}
			}
		}
	}
	env := func(envFrom []v1.EnvFromSource, vars []v1.EnvVar) {
		for _, from := range envFrom {
			if from.ConfigMapRef != nil {
				add(kindConfigMap, from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				add(kindSecret, from.SecretRef.Name)
			}
		}
		for _, e := range vars {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(kindConfigMap, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(kindSecret, r.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	return out
}
