// Command coredns is CoreDNS (github.com/coredns/coredns, version pinned in go.mod) with only the
// plugins the single-node test cluster's Corefile uses (scripts/cluster.sh): cluster DNS for
// Services and Pods from the API server, health and readiness endpoints, Prometheus metrics,
// error logging, and `bind` to listen on the cluster DNS address only. Leaving out the
// cloud-provider plugins keeps the build short.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
