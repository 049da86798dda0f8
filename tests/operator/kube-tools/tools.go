//go:build tools

// Package tools records the Kubernetes binaries this module builds, so that
// `go mod tidy` keeps their dependencies pinned in go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
