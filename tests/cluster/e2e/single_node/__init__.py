"""End to end on a real single-node cluster (scripts/cluster.sh), the operator installed by helm (ctest cluster_e2e).

Contract: this directory is one program, run by one pytest session (`pytest -x
tests/cluster/e2e/single_node`): its test files run in the order of their names, their tests in
definition order, each test one phase; a failure names its phase, and the phases after it are
skipped. Each file's docstring says which phases it holds and what it leaves for the later ones;
conftest.py holds the program's fixtures, state.State what crosses files. Needs root; builds the
image (scripts/build-image.sh) when podman lacks it, and the cluster tools. Options --keep and
--rebuild-image (../conftest.py); environment PPU_CLUSTER_DIR (default /var/lib/ppu-cluster-e2e),
PPU_CLUSTER_PORT (16445), PPU_IMAGE (localhost/ppu:dev). The phases, file by file:
  test_10_install.py
  1. helm install charts/ppu-operator: the operator runs in-cluster under its ServiceAccount (no
     kubeconfig: the in-cluster config path) and becomes Ready;
  test_15_unschedulable.py
  1b. a PPUJob whose ranks fit no node stays Pending and says why: condition PodsUnschedulable
     True names its rank pods with the scheduler's reason (Insufficient cpu), event Unschedulable;
  test_20_training_and_security.py
  2. a CPU PPUJob (4 ranks, tiny model, checkpoints on a PersistentVolume) in a namespace that
     enforces the `restricted` Pod Security Standard: ranks rendezvous through the headless
     Service's DNS name (CoreDNS) and train;
  3. while it trains: rank containers and the operator's run as uid 65532, with no_new_privs,
     seccomp filtering and a read-only root filesystem (read from the kernel); the operator's
     ServiceAccount is refused what its RBAC does not grant (tests/cluster/security_check.sh);
  test_25_metrics.py
  4. Prometheus discovers the operator and the rank pods through Kubernetes service discovery,
     and every dashboard panel and variable returns data for that job (Prometheus 2.54 from its
     Go module: Debian's 2.42 is built without Kubernetes discovery), and `kubectl get ppj` shows
     the job's round and perplexity (from its ranks' metrics);
  test_30_isolation.py
  4b. NetworkPolicies enforced, with two PPUJobs of 2 ranks started for it:
     tests/cluster/isolation_check.sh probes, from real pods, every port the first job's pods
     listen on and the operator's metrics and health ports: the job's own rank reaches its job; a
     pod in another namespace carrying the job's labels, a rank of the second PPUJob and a plain
     pod in the namespace are dropped everywhere; a pod in `monitoring` scrapes every rank and
     reaches the operator's two ports, and nothing else. Each assertion prints its own line;
  test_35_reference_result.py
  2 (end). the job of 2 Succeeds, its ranks agree, and its final status is its ranks' result;
  test_40_gang_restart.py
  5. the same job again, one rank's container killed with SIGKILL a third of the way through:
     gang restart, the new gang resumes from the checkpoint on the volume, Succeeded, and every
     rank's final param_checksum equals the uninterrupted run's;
  5a. the same job again, every rank pod deleted at once (graceful: each rank's notice): the job's
     state is saved at the round boundary, the new gang resumes from it, status.lastStop says at
     most one round was lost, and every rank ends at the uninterrupted run's parameters;
  test_50_live_chaos.py
  5b. chaos under network.recovery=live, five faults in one job, each its own test and PASS line:
     rank 2's pod deleted as a round's outer sync starts; the rendezvous pod deleted (recreated
     alone, event StoreReplaced); rank 0's container SIGKILLed; rank 3's pod deleted and the
     operator's pod deleted while it replaces it; rank 1's traffic dropped for 12 s (a
     NetworkPolicy denies its egress, and its packets are dropped at its node's bridge both
     ways). After each rank fault only that pod is recreated and condition Degraded is seen True,
     then False; the job Succeeds with restartCount 0 and 4 recoveries, every rank with the same
     parameters; its perplexity is judged against the fault-free band last (5c);
  test_55_resize.py
  5d. an elastic live job (spec.elastic 2-4) resized while it runs, each its own test and PASS line:
     `kubectl scale` to 4 creates ranks 2 and 3 and the live group reaches 4, no recovery counted;
     back to 2 (the store hears it through the ConfigMap's file, refreshed at once since the
     operator annotates the store's pod with the size) ranks 2 and 3 retire at a round
     boundary, their pods go, the live group is 2 again; no gang restart; the job is deleted;
  test_60_samples_and_export.py
  6. manifests/samples/cpu-tiny.yaml applied as shipped (its image name an alias that
     `cluster.sh load-image --as` gave the image) runs to Succeeded, and its final status (round,
     perplexity, checkpoint round, ResultReported) is what the same training section gives when
     run here by the image's ppu-launch;
  7. manifests/samples/cpu-tiny-export.yaml applied as shipped: it Succeeds, the operator's export
     Job writes the model (Exported=True, column EXPORT ModelExported, status.export at the last
     checkpoint round); the PPUJob is deleted (its export Job goes with it) and a pod that mounts
     the claim finds the Hugging Face directory there (model.safetensors, config.json gpt_neox);
  test_65_s3_checkpoints.py
  7b. manifests/samples/cpu-tiny-s3.yaml against SeaweedFS running in the cluster (Service
     object-store): its checkpoints go to S3; every rank pod deleted at once, the new gang resumes
     from an s3:// round, the job Succeeds and the operator's export Job reads the model from S3;
  test_70_kueue.py
  8. Kueue and the sample queue sized for one 4-rank gang: two queued jobs, one runs, the other
     waits (reason Queued, Kueue's message, no pod); suspending the first hands its quota to the
     second, and the first, resumed, queues again and finishes from its checkpoint; a high-priority
     job preempts a running low one (reason Evicted), which is admitted again afterwards, resumes
     from its checkpoint and Succeeds with restartCount 0; a queued job deleted while waiting
     leaves no Workload and no pod; every Workload goes with its PPUJob;
  test_80_helm_uninstall.py
  then helm uninstall;
  test_90_final_status.py
  5c. the live job's final perplexity inside the fault-free band (scripts/cluster/band.sh: seed
     0's fault-free run -/+ the range of three seeds, run here by the image's ppu-launch in the
     background from the start, on the CPU the cluster leaves idle).
Each phase prints how long it took. Below: the program (PROGRAM) and the names and lengths its
phases share.
"""

from .. import manifests
from ..program import OPERATOR_NAMESPACE, Program

NS = "ppu-e2e"
OPNS = OPERATOR_NAMESPACE
OPERATOR = "app.kubernetes.io/name=ppu-operator"
# Long enough (about two minutes here) that every check sees the ranks running.
STEPS = 3000
ROUNDS = STEPS // manifests.SYNC_EVERY
LIVE_STEPS = STEPS * 4

PROGRAM = Program(
    name="cluster-e2e",
    pass_label="cluster-e2e",
    cluster_dir="/var/lib/ppu-cluster-e2e",
    cluster_port="16445",
    namespace=NS,
    nodes=1,
    failure_kinds="ppj,pods,pvc",
    scratch_prefix="ppu-e2e",
    timed=True,
    band_job=lambda image: manifests.live_job(NS, "ckpt-band", LIVE_STEPS, image),
    operator_sets=(),
    # The samples name their own image (test_60_samples_and_export applies them as shipped).
    sample_alias=True,
    quiet_load=False,
    operator_accounts=(),
)
