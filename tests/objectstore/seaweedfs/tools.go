//go:build tools

// Package tools records the one binary this module builds (SeaweedFS's `weed`) so that
// `go mod tidy` keeps its dependencies pinned in go.sum.
package tools

import (
	_ "github.com/seaweedfs/seaweedfs/weed"
)
