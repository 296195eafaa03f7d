//go:build tools

// Package deps pins the module's dependencies before code uses them.
package deps

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/pflag"
	_ "google.golang.org/grpc"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
	_ "k8s.io/klog/v2"
	_ "k8s.io/kubelet/config/v1beta1"
	_ "sigs.k8s.io/yaml"
)
