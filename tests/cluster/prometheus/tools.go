//go:build tools

// Package tools records the Prometheus server command this module builds, so that
// `go mod tidy` keeps its dependencies pinned in go.sum.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
