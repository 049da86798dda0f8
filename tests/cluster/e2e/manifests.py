"""The manifests the cluster end-to-end tests apply, as text: PPUJobs built on the cpu-tiny sample, and pods.

Contract: plain text generation, no cluster access. Every PPUJob is ppujob_head() (a
ReadWriteMany claim on the `ppu-local` StorageClass and a 4-rank PPUJob on the image under test,
never pulled, that writes each rank's summary beside its checkpoints) followed by the training
section of manifests/samples/cpu-tiny.yaml, with its step count and the test's network settings
substituted line by line (what the bash programs did with sed, so the manifests are the same
text). The samples themselves are read here too: their image, their training section, the
export sample's names, and the outer.sync_every the tests' round counts assume.
"""

import re
from string import Template

import yaml

from . import REPO

SAMPLES = REPO / "manifests" / "samples"
CPU_TINY = SAMPLES / "cpu-tiny.yaml"
CPU_TINY_EXPORT = SAMPLES / "cpu-tiny-export.yaml"
KUEUE_QUEUE = SAMPLES / "kueue-queue.yaml"
# The sample's outer.sync_every: a job of STEPS steps runs STEPS / SYNC_EVERY outer rounds.
SYNC_EVERY = 10

_HEAD = Template("""\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ${claim}, namespace: ${ns}}
spec:
  storageClassName: ppu-local
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: ppu.dev/v1alpha1
kind: PPUJob
metadata: {name: ${name}, namespace: ${ns}}
spec:
  replicas: 4
  image: ${image}
  imagePullPolicy: Never
  args: ["--summary", "/checkpoints/summary-rank-$$(RANK).json"]
  resources:
    requests: {cpu: 100m, memory: 256Mi}
    limits: {cpu: "1", memory: 1Gi}
  checkpoint: {claimName: ${claim}}
  runPolicy: {backoffLimit: 3, activeDeadlineSeconds: 1800}
""")

# Two nodes: the job's rank pods prefer different nodes; a weak preference for node 1 keeps the
# live store (created first, before any rank) there; a lost node's pods are evicted after 5 s.
_SPREAD = Template("""\
  scheduling:
    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels: {ppu.dev/job: ${name}}
              matchExpressions: [{key: ppu.dev/rank, operator: Exists}]
      nodeAffinity: # a tie-breaker: the live store (created first, no rank yet) goes to node 1
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference: {matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [${node1}]}]}
    tolerations:
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
    - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
""")

_PROBE_POD = Template("""\
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: ${ns}, labels: ${labels}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: probe
    image: ${image}
    imagePullPolicy: Never
    command: [sleep, infinity]
    resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 200m, memory: 64Mi}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
""")

_MODEL_READER = Template("""\
apiVersion: v1
kind: Pod
metadata: {name: model-reader, namespace: default}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reader
    image: ${image}
    command: [sh, -c, 'ls -1 /models/${path} && echo ---- && cat /models/${path}/config.json']
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: models, mountPath: /models, readOnly: true}]
  volumes: [{name: models, persistentVolumeClaim: {claimName: ${claim}, readOnly: true}}]
""")

_CUT_RANK_1 = Template("""\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: cut-rank-1, namespace: ${ns}}
spec:
  podSelector: {matchLabels: {ppu.dev/job: ${job}, ppu.dev/rank: "1"}}
  policyTypes: [Egress]
""")

_PROMETHEUS_RBAC = Template("""\
apiVersion: v1
kind: ServiceAccount
metadata: {name: prometheus, namespace: ${opns}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ppu-e2e-prometheus}
rules:
- apiGroups: [""]
  resources: [pods, endpoints, services]
  verbs: [get, list, watch]
- nonResourceURLs: [/metrics]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ppu-e2e-prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ppu-e2e-prometheus}
subjects: [{kind: ServiceAccount, name: prometheus, namespace: ${opns}}]
""")


def _sub(text: str, pattern: str, replacement: str) -> str:
    """sed's s/PATTERN/REPLACEMENT/ on every line: the first match of the regex in each line, replaced literally."""
    return "".join(re.sub(pattern, lambda _: replacement, line, count=1) for line in text.splitlines(keepends=True))


def _from_line(text: str, pattern: str) -> str:
    """sed -n '/PATTERN/,$p': the text from the first line that matches the regex to the end."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if re.search(pattern, line))
    return "".join(lines[start:])


def join(*documents: str) -> str:
    """Several manifests as one multi-document stream."""
    return "---\n".join(documents)


def require_sync_every() -> None:
    """Fails unless the cpu-tiny sample still synchronises every SYNC_EVERY steps (the round counts assume it)."""
    if f"sync_every: {SYNC_EVERY}," not in CPU_TINY.read_text():
        raise AssertionError(f"cpu-tiny.yaml no longer has outer.sync_every {SYNC_EVERY}; update ROUNDS")


def sample_image() -> str:
    """The image the cpu-tiny sample names (spec.image), which the cluster must also have under that name."""
    names = [
        line[len("  image:") :].lstrip(" ") for line in CPU_TINY.read_text().splitlines() if line.startswith("  image:")
    ]
    if not names or not names[0]:
        raise AssertionError(f"{CPU_TINY.relative_to(REPO)} names no spec.image")
    return "\n".join(names)


def sample_training(ranks: int) -> str:
    """The cpu-tiny sample's spec.training with `ranks` set: a config file for ppu-launch."""
    training = yaml.safe_load(CPU_TINY.read_text())["spec"]["training"]
    training["ranks"] = ranks
    return yaml.safe_dump(training)


def export_sample_names() -> tuple[str, str]:
    """The export sample's PPUJob name and the claim its checkpoints (and model) go to."""
    try:
        job = next(d for d in yaml.safe_load_all(CPU_TINY_EXPORT.read_text()) if d and d["kind"] == "PPUJob")
        names = (job["metadata"]["name"], job["spec"]["checkpoint"]["claimName"])
    except (StopIteration, KeyError, TypeError):
        names = ("", "")
    if not all(names):
        raise AssertionError(f"{CPU_TINY_EXPORT} names no PPUJob with spec.checkpoint.claimName")
    return names


def ppujob_head(ns: str, name: str, claim: str, image: str) -> str:
    """Claim `claim` and PPUJob ns/name up to and including spec.runPolicy; the rest of spec follows at two spaces."""
    return _HEAD.substitute(ns=ns, name=name, claim=claim, image=image)


def training_section(steps: int) -> str:
    """The cpu-tiny sample's spec.training, train.steps set to `steps`."""
    return _sub(_from_line(CPU_TINY.read_text(), r"^  training:"), r"steps: 200,", f"steps: {steps},")


def with_network(manifest: str, recovery: str) -> str:
    """training.network before training.checkpoint: the recovery mode, 5 s heartbeats, max_degraded_rounds 1000.

    max_degraded_rounds: these jobs' rounds last a fraction of a second; the default 20 (sized for
    rounds of minutes) would turn a replacement that takes a lease hand-over, or a node loss's
    minute-long one, into a gang restart.
    """
    network = f"    network: {{recovery: {recovery}, heartbeat_s: 5, max_degraded_rounds: 1000}}\n"
    return _sub(manifest, r"^    checkpoint: ", network + "    checkpoint: ")


def job(ns: str, name: str, claim: str, steps: int, image: str) -> str:
    """The cpu-tiny sample's training on our image, `steps` steps, checkpoints on claim `claim` (one node)."""
    return ppujob_head(ns, name, claim, image) + training_section(steps)


def live_job(ns: str, claim: str, steps: int, image: str) -> str:
    """PPUJob `live`: job() under network.recovery live, checkpoints on claim `claim`."""
    return with_network(job(ns, "live", claim, steps, image), "live")


def small_job(ns: str, name: str, image: str) -> str:
    """job() with 2 ranks, 100000 steps and checkpoints on an emptyDir: the PPUJob alone, no claim."""
    text = _from_line(job(ns, name, "none", 100000, image), r"^apiVersion: ppu.dev")
    text = _sub(text, r"^  replicas: 4$", "  replicas: 2")
    return _sub(text, re.escape("checkpoint: {claimName: none}"), "checkpoint: {volumeSource: {emptyDir: {}}}")


def elastic_job(ns: str, name: str, steps: int, image: str) -> str:
    """small_job() made elastic: live recovery, spec.elastic {minReplicas: 2, maxReplicas: 4}, `steps` steps."""
    text = with_network(small_job(ns, name, image), "live")
    text = _sub(text, r"steps: 100000,", f"steps: {steps},")
    return _sub(text, r"^  replicas: 2$", "  replicas: 2\n  elastic: {minReplicas: 2, maxReplicas: 4}")


def unschedulable_job(ns: str, name: str, image: str) -> str:
    """small_job() whose ranks ask for 64 CPUs each: no node of the test clusters fits them."""
    text = _sub(small_job(ns, name, image), r"^    requests: \{cpu: 100m,", '    requests: {cpu: "64",')
    return _sub(text, r"^    limits: \{cpu: \"1\",", '    limits: {cpu: "64",')


def queued_job(ns: str, name: str, claim: str, steps: int, priority: str, image: str) -> str:
    """job() in Kueue's LocalQueue `ppu` with WorkloadPriorityClass `priority`."""
    labels = f"labels: {{kueue.x-k8s.io/queue-name: ppu, kueue.x-k8s.io/priority-class: {priority}}}"
    metadata = f"metadata: {{name: {name}, namespace: {ns}}}"
    replacement = f"metadata: {{name: {name}, namespace: {ns}, {labels}}}"
    return _sub(job(ns, name, claim, steps, image), "^" + re.escape(metadata) + "$", replacement)


def spread_job(ns: str, name: str, recovery: str, steps: int, image: str, node1: str, slices: int = 2) -> str:
    """Two nodes: PPUJob `name` (claim ckpt-NAME), ranks spread by affinity, 250m each, N = slices.

    Each rank is limited to 250m of CPU: a node's loss takes Kubernetes about 90 s to act on (40 s
    to NotReady, the pods' 30 s grace, the replacement's start), and at 1 CPU each the survivors
    ran the rest of the job in that time; at 250m the lost ranks are back for most of it.
    """
    head = _sub(ppujob_head(ns, name, f"ckpt-{name}", image), re.escape('limits: {cpu: "1",'), "limits: {cpu: 250m,")
    training = with_network(training_section(steps), recovery)
    training = _sub(training, re.escape("slices: 2}"), f"slices: {slices}}}")
    return head + _SPREAD.substitute(name=name, node1=node1) + training


def probe_pod(ns: str, labels: str, image: str) -> str:
    """Pod `probe` in ns, carrying `labels` (a YAML flow map), sleeping: the image's bash for isolation probes."""
    return _PROBE_POD.substitute(ns=ns, labels=labels, image=image)


def model_reader_pod(image: str, path: str, claim: str) -> str:
    """Pod default/model-reader: mounts claim read-only, as a model server would, lists `path` and prints its config.json."""
    return _MODEL_READER.substitute(image=image, path=path, claim=claim)


def cut_rank_1_policy(ns: str, job: str) -> str:
    """NetworkPolicy cut-rank-1: selects only rank 1 of `job` and allows it no egress."""
    return _CUT_RANK_1.substitute(ns=ns, job=job)


def kueue_queue(ns: str) -> str:
    """The sample queue (kueue-queue.yaml) with its LocalQueue in ns and its CPU quota sized for one 4-rank job()."""
    text = _sub(KUEUE_QUEUE.read_text(), re.escape('nominalQuota: "1.5"'), "nominalQuota: 600m")
    return _sub(text, re.escape("namespace: default"), f"namespace: {ns}")


def prometheus_rbac(opns: str) -> str:
    """ServiceAccount opns/prometheus, allowed service discovery (pods, endpoints) and GET /metrics."""
    return _PROMETHEUS_RBAC.substitute(opns=opns)
