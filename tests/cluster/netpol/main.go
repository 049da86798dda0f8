// kube-network-policies for the local cluster of scripts/cluster.sh: the reference controller of
// sigs.k8s.io/kube-network-policies (pkg/networkpolicy, unchanged), started with what a process
// outside any pod has: a kubeconfig instead of the in-cluster service account, and the node name
// as a flag. One runs per node, in that node's network namespace, as root.
//
// The controller also tries to install its own nftables table, whose rules send the first packet
// of each connection to the queue with the nftables `queue` statement. Kernels built without
// CONFIG_NFT_QUEUE refuse that table (the controller logs the error and keeps serving the queue);
// scripts/cluster/netpol.sh therefore installs the same diversion with the xtables NFQUEUE
// target, which those kernels do have. Either way the verdicts are the controller's.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the controller's identity (required)")
	node := flag.String("hostname-override", "", "name of the Node this controller enforces on (required)")
	queue := flag.Int("nfqueue-id", 100, "the NFQUEUE number the node's rules send new connections to")
	failOpen := flag.Bool("fail-open", false, "let packets through while no controller reads the queue")
	metrics := flag.String("metrics-bind-address", "127.0.0.1:9080", "address of /metrics (\"\" = off)")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *node == "" {
		fmt.Fprintln(os.Stderr, "kube-network-policies: --kubeconfig and --hostname-override are required")
		os.Exit(2)
	}
	if err := run(*kubeconfig, *node, *queue, *failOpen, *metrics); err != nil {
		fmt.Fprintf(os.Stderr, "kube-network-policies: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node string, queue int, failOpen bool, metrics string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if metrics != "" {
		http.Handle("/metrics", promhttp.Handler())
		go func() { klog.ErrorS(http.ListenAndServe(metrics, nil), "metrics server") }()
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	// NRI stays on, as upstream's own command leaves it: v0.8.0 asks the NRI plugin about every
	// address no pod in the API has (the node's, the DNS Service's), and with NRI disabled that
	// plugin is nil and the lookup panics. containerd 1.6 serves no NRI socket, so the plugin
	// fails to connect (logged once) and answers "no pod": pod IPs come from the API server.
	// The DNS conntrack race workaround is for kernels older than 6.12 and needs the same
	// `queue` statement; the cluster's DNS server is not a pod, so it never applies here.
	controller, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(), nil, nil, nil, nil,
		networkpolicy.Config{
			FailOpen:            failOpen,
			QueueID:             queue,
			NodeName:            node,
			NetfilterBug1766Fix: false,
			NRIdisabled:         false,
		})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	return controller.Run(ctx)
}
