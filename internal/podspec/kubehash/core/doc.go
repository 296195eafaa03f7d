// Package core mirrors the API server's internal Pod type (k8s.io/kubernetes/pkg/apis/core):
// the same type names, fields in the same order. Nothing uses it but the static pod UID,
// which the upstream kubelet computes by hashing the printed form of that type; printing a
// mirror with the same shape gives the same text without importing k8s.io/kubernetes.
// zz_generated.types.go is written by test/harness/cmd/handovergolden.
package core
