//go:build tools

// Package tools records the Kueue manager command this module builds, so that `go mod tidy`
// keeps its dependencies pinned in go.sum.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
