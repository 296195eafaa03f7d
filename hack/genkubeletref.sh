#!/usr/bin/env bash
# Regenerates internal/config's tables of the upstream kubelet v1.33's feature gates
# (zz_generated_gates.go) and flags (zz_generated_flags.go) from k8s.io/kubernetes itself.
# The generator lives in the test-only harness module (test/harness/cmd/kubeletref), the one
# module allowed to import k8s.io/kubernetes; nodelet only reads the tables it writes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/test/harness"
go run ./cmd/kubeletref \
	-gates "$root/internal/config/zz_generated_gates.go" \
	-flags "$root/internal/config/zz_generated_flags.go"
