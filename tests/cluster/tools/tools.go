//go:build tools

// Package tools records the node and control-plane binaries this module builds for
// scripts/cluster.sh, so that `go mod tidy` keeps their dependencies pinned in go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
