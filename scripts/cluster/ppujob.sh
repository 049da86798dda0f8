# shellcheck shell=bash
# ppujob.sh: the PPUJob the cluster e2e scripts run (sourced by scripts/cluster-e2e.sh and
# scripts/cluster-nodes-e2e.sh). Plain text generation, no cluster access.

# ppujob_head NAMESPACE NAME CLAIM IMAGE: a ReadWriteMany PersistentVolumeClaim CLAIM on the
# local StorageClass and the head of a 4-rank PPUJob NAME on IMAGE (never pulled) that writes
# every rank's summary beside its checkpoints on CLAIM, up to and including spec.runPolicy; the
# caller appends the rest of spec (scheduling, training) at two spaces of indent.
ppujob_head() {
  cat <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $3, namespace: $1}
spec:
  storageClassName: ppu-local
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: ppu.dev/v1alpha1
kind: PPUJob
metadata: {name: $2, namespace: $1}
spec:
  replicas: 4
  image: $4
  imagePullPolicy: Never
  args: ["--summary", "/checkpoints/summary-rank-\$(RANK).json"]
  resources:
    requests: {cpu: 100m, memory: 256Mi}
    limits: {cpu: "1", memory: 1Gi}
  checkpoint: {claimName: $3}
  runPolicy: {backoffLimit: 3, activeDeadlineSeconds: 1800}
YAML
}
